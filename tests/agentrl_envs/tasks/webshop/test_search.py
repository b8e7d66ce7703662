from __future__ import annotations

import time
from pathlib import Path

from agentrl_envs.tasks.webshop import Catalogue
from agentrl_envs.tasks.webshop.search import SearchIndex


def test_title_search_finds_the_product_first(catalogue: Catalogue) -> None:
    for product in catalogue.products[:50]:
        assert product.asin in [p.asin for p in catalogue.search(product.title)[:10]]


def test_search_returns_at_most_fifty_positive_hits(catalogue: Catalogue) -> None:
    assert len(catalogue.search("shoes")) == 50
    assert catalogue.search("zzqx unknownword") == []
    assert catalogue.search("the and of") == []  # stop words only
    assert catalogue.search("") == []


def test_odd_queries_answer_quickly(catalogue: Catalogue) -> None:
    started = time.perf_counter()
    hits = catalogue.search("shoes " * 20_000)  # ~120 KB
    assert hits and time.perf_counter() - started < 2.0
    assert catalogue.search("café crème ☕ 靴") == []
    assert catalogue.search("CAFÉ running SHOES")[:5] == catalogue.search("café running shoes")[:5]


def test_bm25_ranks_rarer_terms_higher_and_ties_by_order(tmp_path: Path) -> None:
    index = SearchIndex.build(["red shoe", "red shirt", "blue shoe", "red red red"])
    assert index.search("shoe")[:2] == [0, 2]
    assert index.search("red shoes")[0] == 0


def test_index_is_cached_and_rebuilt_for_another_key(tmp_path: Path) -> None:
    docs = ["red shoe", "blue shirt"]
    first = SearchIndex.load_or_build(tmp_path / "ix", "k1", docs)
    again = SearchIndex.load_or_build(tmp_path / "ix", "k1", iter(()))  # documents not needed on a hit
    assert again.search("shoe") == first.search("shoe") == [0]
    other = SearchIndex.load_or_build(tmp_path / "ix", "k2", ["green hat"])
    assert other.num_docs == 1 and other.search("hat") == [0]
