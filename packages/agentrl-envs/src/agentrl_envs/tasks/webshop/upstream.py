"""Reading upstream WebShop's product files into :class:`Product` records.

The files are those WebShop's setup downloads: ``items_shuffle.json`` (the scraped products),
``items_ins_v2.json`` (mined attributes per asin) and ``items_human_ins.json`` (human instructions per asin).
Cleaning follows upstream's ``load_products``: products with a missing or over-long asin and repeated asins
are dropped, prices are parsed from ``$``-separated strings (``$100.0`` when absent), option values are
lower-cased with ``/`` written as ``" | "``, and products without mined attributes get ``DUMMY_ATTR``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import DataError
from agentrl_envs.tasks.webshop.types import Product

__all__ = ["UPSTREAM_FILES", "find_upstream_dir", "load_upstream_products", "read_json"]

UPSTREAM_FILES = ("items_shuffle.json", "items_ins_v2.json", "items_human_ins.json")
_NOT_A_PRICE = re.compile(r"[^\d.]")


def find_upstream_dir(data_root: Path, explicit: str | Path | None = None) -> Path | None:
    """The folder holding upstream's three files: ``explicit``, else ``<data root>/data/webshop``, else none.

    Raises:
        DataError: If ``explicit`` is given but lacks one of the files.
    """
    if explicit is not None:
        folder = Path(explicit)
        missing = [name for name in UPSTREAM_FILES if not (folder / name).is_file()]
        if missing:
            raise DataError(f"WebShop data folder {folder} lacks {', '.join(missing)}; it needs {UPSTREAM_FILES}.")
        return folder
    folder = data_root / "data" / "webshop"
    return folder if all((folder / name).is_file() for name in UPSTREAM_FILES) else None


def read_json(path: Path) -> Any:
    """Read one upstream JSON file, with an error that names it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"Cannot read WebShop data file {path}: {e}") from e


def load_upstream_products(items: list[dict[str, Any]], attributes: dict[str, Any]) -> list[Product]:
    """Clean raw ``items_shuffle.json`` entries as upstream's loader does.

    Args:
        items: The raw product list.
        attributes: ``items_ins_v2.json``: asin to ``{"attributes": [...], ...}``.
    """
    return list(_clean(items, attributes))


def _clean(items: list[dict[str, Any]], attributes: dict[str, Any]) -> Iterator[Product]:
    seen: set[str] = set()
    for raw in items:
        asin = str(raw.get("asin", "nan"))
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        bullets = raw.get("small_description") or ""
        mined = attributes.get(asin) or {}
        images = raw.get("images") or [""]
        yield Product(
            asin=asin,
            title=str(raw.get("name", "")),
            description=str(raw.get("full_description", "")),
            bullets=tuple(bullets) if isinstance(bullets, list) else (str(bullets),),
            pricing=_pricing(raw.get("pricing")),
            options=_options(raw.get("customization_options")),
            attributes=tuple(mined.get("attributes") or ("DUMMY_ATTR",)),
            category=str(raw.get("category", "")),
            query=str(raw.get("query", "")).lower().strip(),
            product_category=str(raw.get("product_category", "")),
            main_image=str(images[0] or ""),
        )


def _pricing(text: Any) -> tuple[float, ...]:
    if not text:
        return (100.0,)
    values = []
    for part in str(text).split("$")[1:]:
        try:
            values.append(float(Decimal(_NOT_A_PRICE.sub("", part))))
        except InvalidOperation:
            continue
    return tuple(values[:2]) or (100.0,)


def _options(raw: Any) -> dict[str, tuple[str, ...]]:
    options: dict[str, tuple[str, ...]] = {}
    for name, contents in (raw or {}).items():
        if contents is None:
            continue
        options[name.lower()] = tuple(str(c["value"]).strip().replace("/", " | ").lower() for c in contents)
    return options
