"""The page model: what each page of the shop shows, in order, and what on it can be clicked.

A :class:`Page` is a sequence of :class:`Node` (visible text, buttons, product links, option radios) built
from the shop's state. Both views derive from it, so they cannot drift: the text observation is the visible
texts joined by ``" [SEP] "`` (upstream's ``convert_html_to_text(simple=True)``) and the HTML site renders
the same nodes as elements (:mod:`.site.html`). The pages follow upstream WebShop's templates: search page,
results page, item page with options, Description/Features/Reviews(/Attributes) sub-pages, and the page
shown after Buy Now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agentrl_envs.tasks.webshop.types import Product

__all__ = [
    "BACK_TO_SEARCH",
    "END_BUTTON",
    "NEXT_PAGE",
    "PREV_PAGE",
    "PRODUCT_WINDOW",
    "SUB_PAGES",
    "Node",
    "Page",
    "done_page",
    "item_page",
    "results_page",
    "search_page",
    "sub_page",
]

END_BUTTON = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
PRODUCT_WINDOW = 10

Role = Literal["text", "heading", "instruction", "button", "product_link", "option_name", "option", "reward"]
"""How a node is shown: the text observation ignores roles; clickables come from ``button``, ``product_link`` and
``option``; the HTML view gives each role its element (``instruction`` and ``reward`` get upstream's ids)."""
PageKind = Literal["search", "results", "item", "item_sub", "done"]


@dataclass(frozen=True, slots=True)
class Node:
    """One visible piece of a page."""

    text: str
    role: Role = "text"
    group: str = ""
    """For an option: its option name (``color``)."""
    selected: bool = False
    """For an option: whether it is the chosen value."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page of the shop."""

    kind: PageKind
    nodes: tuple[Node, ...]
    has_search_bar: bool = False

    def text(self) -> str:
        """The text observation: visible texts, stripped, joined by `` [SEP] ``."""
        return " [SEP] ".join(t for t in (n.text.strip() for n in self.nodes) if t)

    def clickables(self) -> dict[str, Node]:
        """Clickable value to its node, in upstream's order: buttons, then product links, then options.

        Button and link values are their lower-cased text; an option's value is its text as is.
        """
        found: dict[str, Node] = {}
        for role in ("button", "product_link"):
            for node in self.nodes:
                if node.role == role:
                    found[node.text.lower()] = node
        for node in self.nodes:
            if node.role == "option":
                found[node.text] = node
        return found

    def available_actions(self) -> dict[str, object]:
        """Upstream's ``get_available_actions()``: ``{"has_search_bar": ..., "clickables": [...]}``."""
        return {"has_search_bar": self.has_search_bar, "clickables": list(self.clickables())}


def _instruction(instruction_text: str) -> tuple[Node, ...]:
    return (Node("Instruction:", "instruction"), Node(instruction_text, "instruction"))


def search_page(instruction_text: str) -> Page:
    """The start page: the instruction and a search bar."""
    nodes = (Node("WebShop", "heading"), *_instruction(instruction_text), Node("Search", "button"))
    return Page("search", nodes, has_search_bar=True)


def results_page(instruction_text: str, products: list[Product], page: int, total: int) -> Page:
    """One page (``PRODUCT_WINDOW`` products) of search results."""
    nodes = [*_instruction(instruction_text), Node(BACK_TO_SEARCH, "button")]
    nodes.append(Node(f"Page {page} (Total results: {total})", "heading"))
    if page > 1:
        nodes.append(Node(PREV_PAGE, "button"))
    nodes.append(Node(NEXT_PAGE, "button"))
    for product in products:
        nodes += [Node(product.asin, "product_link"), Node(product.title), Node(product.price_tag)]
    return Page("results", tuple(nodes))


def item_page(instruction_text: str, product: Product, options: dict[str, str], *, show_attrs: bool = False) -> Page:
    """A product's page: options to choose, title, price, rating, sub-page buttons and Buy Now."""
    nodes = [*_instruction(instruction_text), Node(BACK_TO_SEARCH, "button"), Node(PREV_PAGE, "button")]
    for name, values in product.options.items():
        nodes.append(Node(name, "option_name"))
        nodes += [Node(value, "option", group=name, selected=options.get(name) == value) for value in values]
    nodes += [Node(product.title, "heading"), Node(f"Price: {product.price_tag}"), Node(f"Rating: {product.rating}")]
    buttons = SUB_PAGES if show_attrs else SUB_PAGES[:3]
    nodes += [Node(name, "button") for name in buttons]
    nodes.append(Node(END_BUTTON, "button"))
    return Page("item", tuple(nodes))


def sub_page(instruction_text: str, product: Product, which: str) -> Page:
    """The Description, Features, Reviews or Attributes page of a product."""
    nodes = [*_instruction(instruction_text), Node(BACK_TO_SEARCH, "button"), Node(PREV_PAGE, "button")]
    if which == "Description":
        nodes.append(Node(product.description))
    elif which == "Features":
        nodes += [Node(b) for b in product.bullets] if product.bullets else [Node("No Features")]
    elif which == "Reviews":
        for review in product.reviews:
            nodes += [Node(f'"{review.title}"', "heading"), Node(str(review.score)), Node(review.body)]
        if not product.reviews:
            nodes.append(Node("No reviews found", "heading"))
    else:
        nodes += [Node(a) for a in product.attributes]
    return Page("item_sub", tuple(nodes))


def done_page(reward: float) -> Page:
    """The page after Buy Now, with the score."""
    nodes = (
        Node("Thank you for shopping with us!", "heading"),
        Node("Your score (min 0.0, max 1.0)", "heading"),
        Node(str(reward), "reward"),
    )
    return Page("done", nodes)
