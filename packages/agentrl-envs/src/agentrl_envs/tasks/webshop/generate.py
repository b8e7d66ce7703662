"""A deterministic synthetic catalogue and goal set, for when upstream's product data is absent.

Products come in *families*: one brand's variants of one product type that share most of a title but
differ in attributes, option values and price. Families are what make the task non-trivial: a search for
the instruction returns several near-duplicates, only one of which has every asked-for attribute, offers
the asked-for options and costs less than the cap (some variants are *price traps*: the same listing at a
price above any cap written for its siblings). Every product gets two human-style instructions, written
from a handful of templates, so 6,000 products give 12,000 goals: upstream's test (0-199) and train
(1000-11999) ranges both exist.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator

from agentrl_envs.tasks.webshop.goals import price_cap, shuffle_goals
from agentrl_envs.tasks.webshop.types import Goal, Product, Review
from agentrl_envs.tasks.webshop.vocabulary import BRANDS, CATEGORIES, CATEGORY_ATTRIBUTES, ProductType

__all__ = ["GENERATOR_VERSION", "generate_catalogue"]

GENERATOR_VERSION = 1
"""Bump when the output of :func:`generate_catalogue` changes, so cached catalogues are rebuilt."""

GOALS_PER_PRODUCT = 2

_REVIEW_TITLES = (
    "Exactly as described", "Great value", "Not what I expected", "Would buy again", "Decent for the price",
    "Love it", "Returned it", "Good quality", "Works fine", "Five stars",
)  # fmt: skip
_REVIEW_BODIES = (
    "Arrived quickly and the {attr} part is true.", "I use this every day; {attr} as advertised.",
    "The {option} one looks different from the photo.", "Good {head_lower} but the packaging was damaged.",
    "Second time ordering this {head_lower}.", "Not really {attr} in my experience.",
)  # fmt: skip


def generate_catalogue(
    num_products: int = 6000, *, seed: int = 0
) -> tuple[list[Product], dict[str, float], list[Goal]]:
    """Build ``num_products`` products, their prices and ``GOALS_PER_PRODUCT`` goals per product.

    Returns:
        Products (in index order), the price each is sold at, and the goals in upstream's shuffled order.
    """
    rng = random.Random(f"webshop-catalogue-{seed}")
    asins = iter(_asins(rng, num_products))
    products: list[Product] = []
    for number, ptype in enumerate(CATEGORIES):
        count = num_products // len(CATEGORIES) + (number < num_products % len(CATEGORIES))
        for family_size in _family_sizes(rng, count):
            products.extend(_family(rng, ptype, [next(asins) for _ in range(family_size)]))
    rng.shuffle(products)  # upstream's items_shuffle.json is shuffled too; families are not adjacent
    prices = {p.asin: _sale_price(rng, p) for p in products}
    goals = [goal for product in products for goal in _goals(rng, product, prices[product.asin])]
    return products, prices, shuffle_goals(goals)


def _asins(rng: random.Random, count: int) -> list[str]:
    alphabet = string.ascii_uppercase + string.digits
    seen: set[str] = set()
    out = []
    while len(out) < count:
        asin = "B0" + "".join(rng.choices(alphabet, k=8))
        if asin not in seen:
            seen.add(asin)
            out.append(asin)
    return out


def _family_sizes(rng: random.Random, count: int) -> Iterator[int]:
    left = count
    while left > 0:
        size = min(left, rng.randint(3, 5))
        yield size
        left -= size


def _family(rng: random.Random, ptype: ProductType, asins: list[str]) -> Iterator[Product]:
    brand = rng.choice(BRANDS)
    descriptor = rng.choice(ptype.descriptors)
    pool = list(ptype.attributes) + list(CATEGORY_ATTRIBUTES[ptype.category])
    shared = rng.sample(pool, 2)
    base_price = round(rng.uniform(*ptype.price_range), 2)
    trap = rng.randrange(len(asins)) if len(asins) >= 4 else -1
    for position, asin in enumerate(asins):
        own = rng.sample([a for a in pool if a not in shared], 2)
        attributes = tuple(shared + own)
        options = {name: _option_subset(rng, values) for name, values in ptype.options.items()}
        price = base_price * rng.uniform(0.8, 1.25)
        if position == trap:
            price = base_price * rng.uniform(2.2, 3.0) + 40.0
        yield _product(rng, ptype, asin, brand, descriptor, attributes, options, round(price, 2))


def _option_subset(rng: random.Random, values: tuple[str, ...]) -> tuple[str, ...]:
    keep = max(2, min(len(values), rng.randint(3, 6)))
    chosen = set(rng.sample(values, keep))
    return tuple(v for v in values if v in chosen)


def _product(
    rng: random.Random,
    ptype: ProductType,
    asin: str,
    brand: str,
    descriptor: str,
    attributes: tuple[str, ...],
    options: dict[str, tuple[str, ...]],
    price: float,
) -> Product:
    shown = rng.sample(attributes, rng.randint(1, 2))
    features = ", ".join(a.title() for a in shown)
    extra = rng.choice(("", " for Everyday Use", " - Gift Idea", " (New Version)", f" by {brand}"))
    title = f"{brand} {descriptor} {ptype.head}, {features}{extra}"
    pricing = (price,) if rng.random() < 0.85 else (price, round(price * rng.uniform(1.1, 1.4), 2))
    reviews = _reviews(rng, ptype, attributes, options)
    rating = f"{sum(r.score for r in reviews) / len(reviews):.1f}" if reviews else "N.A."
    return Product(
        asin=asin,
        title=title,
        description=_description(rng, ptype, brand, attributes),
        bullets=_bullets(rng, ptype, attributes),
        pricing=pricing,
        options=options,
        attributes=attributes,
        category=ptype.category,
        query=ptype.query,
        product_category=ptype.breadcrumb,
        reviews=reviews,
        rating=rating,
    )


def _description(rng: random.Random, ptype: ProductType, brand: str, attributes: tuple[str, ...]) -> str:
    head = ptype.head.lower()
    sentences = [
        f"The {brand} {head} is made for people who want {attributes[0]} without compromise.",
        f"Every {head} is checked by hand before it ships.",
        rng.choice((f"Customers choose it because it is {attributes[1]}.", f"It is {attributes[1]} by design.")),
        rng.choice(("Backed by a 30-day return policy.", "Ships in recyclable packaging.", "")),
    ]
    return " ".join(s for s in sentences if s)


def _bullets(rng: random.Random, ptype: ProductType, attributes: tuple[str, ...]) -> tuple[str, ...]:
    head = ptype.head.lower()
    lines = [f"{attributes[0].upper()}: this {head} is {attributes[0]} and easy to love."]
    lines += [f"{a.capitalize()} - a detail we did not skip." for a in attributes[2:]]
    lines.append(rng.choice(("WHAT YOU GET: one item and a care card.", "SATISFACTION: contact us with any issue.")))
    return tuple(lines)


def _reviews(
    rng: random.Random, ptype: ProductType, attributes: tuple[str, ...], options: dict[str, tuple[str, ...]]
) -> tuple[Review, ...]:
    option_values = [v for values in options.values() for v in values] or ["standard"]
    reviews = []
    for _ in range(rng.randint(0, 3)):
        body = rng.choice(_REVIEW_BODIES).format(
            attr=rng.choice(attributes), option=rng.choice(option_values), head_lower=ptype.head.lower()
        )
        reviews.append(Review(rng.choice(_REVIEW_TITLES), rng.randint(1, 5), body))
    return tuple(reviews)


def _sale_price(rng: random.Random, product: Product) -> float:
    """Upstream's ``generate_product_prices``: a range is sold at a uniform draw inside it."""
    if len(product.pricing) == 1:
        return product.pricing[0]
    return rng.uniform(product.pricing[0], product.pricing[1])


_OPTION_PHRASES = {
    "color": ("in {v} color", "in the color {v}", "{v} colored"),
    "size": ("in size {v}", "in {v} size", "size {v}"),
    "scent": ("with {v} scent", "in {v} scent"),
    "flavor name": ("in {v} flavor", "{v} flavored"),
    "style": ("in {v} style", "style {v}"),
}
_TEMPLATES = (
    "i'm looking for {a_attrs} {attrs} {noun}{opts}",
    "i need {a_noun} {noun} that is {attrs}{opts}",
    "i would like {a_noun} {noun}{opts}, it should be {attrs}",
    "find me {attrs} {noun}{opts}",
    "i want to buy {noun} which is {attrs}{opts}",
    "can you get me {a_noun} {noun} that's {attrs}{opts}",
)


def _goals(rng: random.Random, product: Product, price: float) -> Iterator[Goal]:
    for _ in range(GOALS_PER_PRODUCT):
        attributes = tuple(rng.sample(product.attributes, rng.randint(1, 3)))
        names = [n for n in product.options if rng.random() < 0.8] or list(product.options)[:1]
        target = {name: rng.choice(product.options[name]) for name in names}
        cap, cap_text = price_cap(rng, price)
        yield Goal(
            asin=product.asin,
            instruction_text=_instruction(rng, product, attributes, target) + cap_text,
            attributes=attributes,
            goal_options=tuple(target.values()),
            price_upper=cap,
            name=product.title,
            category=product.category,
            query=product.query,
            product_category=product.product_category,
            target_options=target,
        )


def _instruction(rng: random.Random, product: Product, attributes: tuple[str, ...], target: dict[str, str]) -> str:
    noun = product.query
    attrs = " and ".join(attributes) if len(attributes) < 3 else f"{attributes[0]}, {attributes[1]} and {attributes[2]}"
    pieces = [rng.choice(_OPTION_PHRASES.get(name, ("with {v}",))).format(v=v) for name, v in target.items()]
    opts = (", " + " and ".join(pieces)) if pieces else ""
    text = rng.choice(_TEMPLATES).format(
        a_attrs=_article(attrs), a_noun=_article(noun), attrs=attrs, noun=noun, opts=opts
    )
    return text.strip(".")


def _article(phrase: str) -> str:
    return "an" if phrase[:1] in ("a", "e", "i", "o", "u") else "a"
