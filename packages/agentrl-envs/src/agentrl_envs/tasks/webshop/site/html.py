"""HTML for the shop's pages, rendered node by node from the page model.

Every clickable is a form button that posts its clickable value (``value``) to the session's ``click`` route,
so the HTML and the text observation offer exactly the same actions; the search bar posts ``keywords`` to
``search``. Option values are radio buttons that submit when chosen (a ``Choose`` button does it without
JavaScript). Element ids and classes follow upstream's templates where tests and agents look for them:
``#search_input``, ``#instruction-text``, ``.product-link``, ``#reward``.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape

from agentrl_envs.tasks.webshop.pages import Node, Page

__all__ = ["document", "render_page"]

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 1rem auto; padding: 0 1rem; color: #222; }
form.inline { display: inline; }
button { margin: 0.15rem 0.3rem 0.15rem 0; padding: 0.3rem 0.8rem; cursor: pointer; }
#instruction-text { background: #f3f6fa; border-left: 4px solid #4a7ab7; padding: 0.4rem 0.8rem; margin: 0.5rem 0; }
#instruction-text h4 { margin: 0.2rem 0; }
#notice { background: #fff4d6; border: 1px solid #e0b94a; padding: 0.5rem 0.8rem; margin: 0.5rem 0; }
.product { border-top: 1px solid #ddd; padding: 0.4rem 0; }
.product p { margin: 0.1rem 0; }
fieldset.options { border: 1px solid #ccc; margin: 0.4rem 0; }
label.option { margin-right: 0.8rem; white-space: nowrap; }
#search_input { width: 60%; padding: 0.3rem; }
#reward { font-size: 2rem; font-weight: bold; }
"""


def document(title: str, body: str, *, page_kind: str = "", notice: str = "") -> str:
    """A full HTML document around ``body`` (already HTML), with an optional notice shown above it."""
    notice_html = f'<div id="notice" role="alert">{escape(notice)}</div>\n' if notice else ""
    kind = f' data-page="{escape(page_kind)}"' if page_kind else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body{kind}>\n{notice_html}<main>\n{body}\n</main>\n</body></html>\n"
    )


def render_page(page: Page, base: str, *, notice: str = "") -> str:
    """The HTML document of ``page`` for the session whose routes start at ``base`` (``/s/<id>``)."""
    return document("WebShop", "\n".join(_body(page, base)), page_kind=page.kind, notice=notice)


def _body(page: Page, base: str) -> Iterator[str]:
    nodes = list(page.nodes)
    i = 0
    while i < len(nodes):
        node = nodes[i]
        if node.role == "instruction":
            j = _run_end(nodes, i, "instruction")
            yield _instruction(nodes[i:j])
        elif node.role == "product_link":
            j = _run_end(nodes, i + 1, "text")
            yield _product(nodes[i], nodes[i + 1 : j], base)
        elif node.role == "option_name":
            j = _run_end(nodes, i + 1, "option", group=node.text)
            yield _options(node.text, nodes[i + 1 : j], base)
        else:
            j = i + 1
            yield _single(node, page, base)
        i = j


def _run_end(nodes: list[Node], start: int, role: str, group: str | None = None) -> int:
    """The end of the run of ``role`` nodes (of option ``group``, if given) that starts at ``start``."""
    end = start
    while end < len(nodes) and nodes[end].role == role and (group is None or nodes[end].group == group):
        end += 1
    return end


def _single(node: Node, page: Page, base: str) -> str:
    text = escape(node.text)
    if node.role == "button" and page.has_search_bar and node.text == "Search":
        return (
            f'<form class="search" method="post" action="{base}/search">'
            '<input id="search_input" name="keywords" type="search" placeholder="Search..." autofocus>'
            f'<button type="submit">{text}</button></form>'
        )
    if node.role == "button":
        return _click_button(node.text, node.text.lower(), base)
    if node.role == "heading":
        return f"<h4>{text}</h4>"
    if node.role == "reward":
        return f'<p id="reward">{text}</p>'
    return f"<p>{text}</p>"


def _click_button(label: str, value: str, base: str, css_class: str = "") -> str:
    cls = f' class="{css_class}"' if css_class else ""
    return (
        f'<form class="inline" method="post" action="{base}/click">'
        f'<button{cls} type="submit" name="value" value="{escape(value)}">{escape(label)}</button></form>'
    )


def _instruction(nodes: list[Node]) -> str:
    head, *rest = nodes
    lines = "".join(f"<h4>{escape(n.text)}</h4>" for n in rest)
    return f'<div id="instruction-text"><h4>{escape(head.text)}</h4>{lines}</div>'


def _product(link: Node, details: list[Node], base: str) -> str:
    lines = "".join(f"<p>{escape(n.text)}</p>" for n in details)
    return f'<div class="product">{_click_button(link.text, link.text.lower(), base, "product-link")}{lines}</div>'


def _options(name: str, options: list[Node], base: str) -> str:
    radios = "".join(
        f'<label class="option"><input type="radio" name="value" value="{escape(o.text)}"'
        f'{" checked" if o.selected else ""} onchange="this.form.submit()"> {escape(o.text)}</label>'
        for o in options
    )
    return (
        f'<form method="post" action="{base}/click"><fieldset class="options"><legend>{escape(name)}</legend>'
        f'{radios}<noscript><button type="submit">Choose</button></noscript></fieldset></form>'
    )
