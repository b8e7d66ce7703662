"""The catalogue an environment shops in: products, sale prices, goals and the search index.

Two sources, chosen per data root: upstream WebShop's files when ``<data root>/data/webshop`` (or an explicit
``webshop_data`` folder) holds them, otherwise the generated catalogue of :mod:`.generate`. Both are cached
under ``$AGENTRL_CACHE_DIR/webshop`` (the generated products and goals as JSON, the index for either) and
shared by every environment in the process, as upstream shares one server between sessions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentrl_envs.core.data import resolve_cache_dir
from agentrl_envs.core.errors import DataError, EnvError
from agentrl_envs.tasks.webshop.generate import GENERATOR_VERSION, generate_catalogue
from agentrl_envs.tasks.webshop.goals import SPLIT_RANGES, human_goals
from agentrl_envs.tasks.webshop.search import SearchIndex
from agentrl_envs.tasks.webshop.types import Goal, Product
from agentrl_envs.tasks.webshop.upstream import UPSTREAM_FILES, find_upstream_dir, load_upstream_products, read_json

__all__ = ["BACKENDS", "DEFAULT_NUM_PRODUCTS", "Catalogue", "load_catalogue", "source_of_backend"]

logger = logging.getLogger(__name__)

DEFAULT_NUM_PRODUCTS = 6000
Source = Literal["upstream", "generated"]
SourceChoice = Literal["auto", "upstream", "generated"]
BACKENDS: dict[str | None, SourceChoice] = {None: "auto", "upstream-data": "upstream", "generated": "generated"}
"""The env's ``backend`` option to the catalogue source: ``None`` takes upstream's files when present."""

_LOCK = threading.Lock()
_LOADED: dict[tuple[str, ...], Catalogue] = {}


@dataclass
class Catalogue:
    """Products (in index order), the price each sells at, goals (in upstream's order) and the index."""

    products: list[Product]
    prices: dict[str, float]
    goals: list[Goal]
    source: Source
    fingerprint: str
    index: SearchIndex | None = None
    by_asin: dict[str, Product] = field(init=False)

    def __post_init__(self) -> None:
        """Index products by asin."""
        self.by_asin = {p.asin: p for p in self.products}

    def split_goals(self, split: str) -> range:
        """Goal indices a split plays (upstream's ranges, clipped to the goals that exist)."""
        start, end = SPLIT_RANGES[split]
        if start >= len(self.goals):
            raise DataError(
                f"The WebShop {self.source} catalogue has {len(self.goals)} goals; split {split!r} needs goal "
                f"indices {start}..{end - 1}."
            )
        return range(start, min(end, len(self.goals)))

    def search(self, keywords: str) -> list[Product]:
        """The top results for ``keywords`` (see :class:`SearchIndex`)."""
        if self.index is None:
            raise DataError("This catalogue was loaded without its search index.")
        return [self.products[i] for i in self.index.search(keywords)]


def source_of_backend(backend: str | None) -> SourceChoice:
    """The catalogue source for a ``backend`` option (raises :class:`EnvError` for an unknown one)."""
    if backend not in BACKENDS:
        raise EnvError(f"Unknown WebShop backend {backend!r}; choose one of {[b for b in BACKENDS if b]}.")
    return BACKENDS[backend]


def load_catalogue(
    data_root: Path,
    *,
    webshop_data: str | Path | None = None,
    num_products: int = DEFAULT_NUM_PRODUCTS,
    seed: int = 0,
    with_index: bool = True,
    source: SourceChoice = "auto",
) -> Catalogue:
    """The catalogue for ``data_root`` (loaded once per process, cached on disk).

    Args:
        data_root: The AgentBench data root; ``data/webshop`` under it may hold upstream's files.
        webshop_data: A folder with upstream's three files, overriding the data root's.
        num_products: Size of the generated catalogue (ignored with upstream data).
        seed: Seeds the generated catalogue and, for upstream data, the draws of sale prices and price caps
            (upstream leaves those unseeded).
        with_index: Whether to load (or build) the search index too.
        source: ``auto`` (upstream's files when present), or force ``upstream`` or ``generated``.

    Raises:
        DataError: If ``source="upstream"`` and upstream's files are not found.
    """
    upstream_dir = None if source == "generated" else find_upstream_dir(data_root, webshop_data)
    if source == "upstream" and upstream_dir is None:
        raise DataError(
            f"WebShop backend 'upstream-data' needs {', '.join(UPSTREAM_FILES)} in {data_root / 'data' / 'webshop'} "
            "or in the folder given as webshop_data=."
        )
    if upstream_dir is not None:
        key: tuple[str, ...] = ("upstream", *_file_stamps(upstream_dir), str(seed))
    else:
        key = ("generated", str(GENERATOR_VERSION), str(num_products), str(seed))
    with _LOCK:
        catalogue = _LOADED.get(key)
        if catalogue is None:
            if upstream_dir is not None:
                catalogue = _load_upstream(upstream_dir, seed)
            else:
                catalogue = _load_generated(num_products, seed)
            _LOADED[key] = catalogue
        if with_index and catalogue.index is None:
            folder = resolve_cache_dir() / "webshop" / f"index-{catalogue.fingerprint}"
            catalogue.index = SearchIndex.load_or_build(
                folder, catalogue.fingerprint, (p.search_text() for p in catalogue.products)
            )
        return catalogue


def _file_stamps(folder: Path) -> list[str]:
    stamps = []
    for name in UPSTREAM_FILES:
        stat = (folder / name).stat()
        stamps.append(f"{(folder / name).resolve()}:{stat.st_size}:{stat.st_mtime_ns}")
    return stamps


def _load_upstream(folder: Path, seed: int) -> Catalogue:
    logger.info("Loading upstream WebShop products from %s", folder)
    items = read_json(folder / "items_shuffle.json")
    attributes = read_json(folder / "items_ins_v2.json")
    instructions = read_json(folder / "items_human_ins.json")
    products = load_upstream_products(items, attributes)
    rng = random.Random(f"webshop-upstream-{seed}")
    prices = {p.asin: (p.pricing[0] if len(p.pricing) == 1 else rng.uniform(*p.pricing[:2])) for p in products}
    goals = human_goals(products, prices, instructions, rng=rng)
    fingerprint = hashlib.sha256("\n".join([*_file_stamps(folder), str(seed)]).encode()).hexdigest()[:16]
    return Catalogue(products, prices, goals, "upstream", f"upstream-{fingerprint}")


def _load_generated(num_products: int, seed: int) -> Catalogue:
    name = f"generated-v{GENERATOR_VERSION}-n{num_products}-s{seed}"
    path = resolve_cache_dir() / "webshop" / f"{name}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            products = [Product.from_json(p) for p in data["products"]]
            goals = [Goal.from_json(g) for g in data["goals"]]
            return Catalogue(products, data["prices"], goals, "generated", name)
        except (OSError, ValueError, KeyError, TypeError) as e:
            logger.warning("Cached WebShop catalogue %s is unreadable (%s); regenerating it", path, e)
    products, prices, goals = generate_catalogue(num_products, seed=seed)
    data = {"products": [p.to_json() for p in products], "prices": prices, "goals": [g.to_json() for g in goals]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)
    return Catalogue(products, prices, goals, "generated", name)
