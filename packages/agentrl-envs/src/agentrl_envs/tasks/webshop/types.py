"""The shop's records: products, their reviews, and shopping goals.

Field meanings follow upstream WebShop after its loader has cleaned a raw product (``Title`` is ``name``,
``BulletPoints`` the ``small_description`` list, option values lower-cased with ``/`` written as ``" | "``).
Records are plain frozen dataclasses so a catalogue of a million products stays cheap to hold.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Goal", "Product", "Review"]


@dataclass(frozen=True, slots=True)
class Review:
    """One customer review, as the Reviews sub-page shows it."""

    title: str
    score: int
    body: str


@dataclass(frozen=True, slots=True)
class Product:
    """A product as the site shows it and the reward reads it."""

    asin: str
    title: str
    description: str
    bullets: tuple[str, ...]
    pricing: tuple[float, ...]
    """One price, or the low and high end of a price range (upstream's ``pricing``)."""
    options: dict[str, tuple[str, ...]]
    """Option name (``color``, ``size``...) to its values, in page order."""
    attributes: tuple[str, ...]
    """Upstream's mined attribute phrases (``items_ins_v2.json``); ``("DUMMY_ATTR",)`` when unknown."""
    category: str
    query: str
    """The search query the product was scraped under; part of the reward's type factor."""
    product_category: str
    """Breadcrumb such as ``Beauty & Personal Care › Hair Care``."""
    main_image: str = ""
    reviews: tuple[Review, ...] = ()
    rating: str = "N.A."

    @property
    def price_tag(self) -> str:
        """The price as the pages print it: ``$12.99`` or ``$10.0 to $15.5``."""
        if len(self.pricing) == 1:
            return f"${self.pricing[0]}"
        return f"${self.pricing[0]} to ${self.pricing[1]}"

    def search_text(self) -> str:
        """The document upstream indexes: title, description, first bullet and options, lower-cased."""
        option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in self.options.items())
        first_bullet = self.bullets[0] if self.bullets else ""
        return " ".join([self.title, self.description, first_bullet, option_text]).lower()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the cache format)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Product:
        """Inverse of :meth:`to_json`."""
        return cls(
            asin=data["asin"],
            title=data["title"],
            description=data["description"],
            bullets=tuple(data["bullets"]),
            pricing=tuple(data["pricing"]),
            options={name: tuple(values) for name, values in data["options"].items()},
            attributes=tuple(data["attributes"]),
            category=data["category"],
            query=data["query"],
            product_category=data["product_category"],
            main_image=data.get("main_image", ""),
            reviews=tuple(Review(**r) for r in data.get("reviews", ())),
            rating=data.get("rating", "N.A."),
        )


@dataclass(frozen=True, slots=True)
class Goal:
    """A shopping instruction and what the bought product is scored against."""

    asin: str
    """The product the instruction was written for (the oracle's target)."""
    instruction_text: str
    attributes: tuple[str, ...]
    goal_options: tuple[str, ...]
    price_upper: float
    name: str
    """The target's title; the type factor compares nouns of the bought title against it."""
    category: str
    query: str
    product_category: str
    weight: float = 1.0
    target_options: dict[str, str] = field(default_factory=dict)
    """Option name to the goal's value for it, where known (used by the oracle; not part of the reward)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the cache format)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Goal:
        """Inverse of :meth:`to_json`."""
        fields = dict(data)
        fields["attributes"] = tuple(fields["attributes"])
        fields["goal_options"] = tuple(fields["goal_options"])
        return cls(**fields)
