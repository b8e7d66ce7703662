"""WebShop search and step latency, on the generated catalogue and on a 1.18M-product synthetic one.

Usage: ``uv run python bench/webshop_search.py [--large-products 1180000] [--skip-large]``. Prints a table,
then one JSON line of figures (the last line). The large catalogue is built in memory for this run only
(never in tests): 1.18M documents made from the generated catalogue's product texts, each given a unique
model number and words from a 200k-word Zipf vocabulary so that vocabulary and posting lists grow as a real
catalogue's do.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script
from agentrl_envs.core.data import DataRoot  # noqa: E402
from agentrl_envs.tasks.webshop import WebShopEnv, load_catalogue  # noqa: E402
from agentrl_envs.tasks.webshop.search import SearchIndex  # noqa: E402


def time_queries(index: SearchIndex, queries: list[str], repeat: int = 1) -> list[float]:
    index.search(queries[0])  # warm up
    out = []
    for _ in range(repeat):
        for query in queries:
            started = time.perf_counter()
            index.search(query)
            out.append((time.perf_counter() - started) * 1000)
    return out


def synthetic_documents(base: list[str], count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [f"w{n:x}q" for n in range(200_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    extra = rng.choices(vocabulary, weights=weights, k=count * 4)
    return [f"{base[i % len(base)]} model{i:07d} {' '.join(extra[4 * i : 4 * i + 4])}" for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--large-products", type=int, default=1_180_000)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    data = DataRoot.find()
    rows: list[tuple[str, str]] = []
    figures: dict[str, float | int | str] = {}

    started = time.perf_counter()
    catalogue = load_catalogue(data.path, with_index=False)
    docs = [p.search_text() for p in catalogue.products]
    built = time.perf_counter()
    index = SearchIndex.build(docs)
    figures["generated_products"] = len(docs)
    figures["generated_index_build_s"] = round(time.perf_counter() - built, 3)
    figures["generated_catalogue_load_s"] = round(built - started, 3)
    queries = [catalogue.goals[i].instruction_text for i in catalogue.split_goals("test")]
    latencies = time_queries(index, queries, repeat=5)
    figures["generated_search_p50_ms"] = round(statistics.median(latencies), 3)
    figures["generated_search_p95_ms"] = round(percentile(latencies, 95), 3)

    env = WebShopEnv(split="test")
    steps = []
    for i, query in enumerate(queries):
        env.reset(options={"index": i})
        action = {"role": "assistant", "tool_calls": [{"id": "b", "function": {"name": "search_action",
                  "arguments": json.dumps({"keywords": query})}}]}  # fmt: skip
        started = time.perf_counter()
        env.step(action)
        steps.append((time.perf_counter() - started) * 1000)
    figures["env_search_step_p50_ms"] = round(statistics.median(steps), 3)
    rows += [
        ("generated catalogue", f"{len(docs)} products, index built in {figures['generated_index_build_s']} s"),
        ("search p50 / p95", f"{figures['generated_search_p50_ms']} / {figures['generated_search_p95_ms']} ms"),
        ("env.step(search) p50", f"{figures['env_search_step_p50_ms']} ms"),
    ]

    if not args.skip_large:
        started = time.perf_counter()
        large_docs = synthetic_documents(docs, args.large_products)
        figures["large_products"] = len(large_docs)
        figures["large_docs_generate_s"] = round(time.perf_counter() - started, 1)
        figures["large_mean_words"] = round(statistics.mean(len(d.split()) for d in large_docs[:10_000]), 1)
        started = time.perf_counter()
        large = SearchIndex.build(large_docs)
        figures["large_index_build_s"] = round(time.perf_counter() - started, 1)
        del large_docs
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            large.save(Path(tmp) / "ix", "bench")
            figures["large_index_save_s"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            large = SearchIndex.load_or_build(Path(tmp) / "ix", "bench", [])
            figures["large_index_load_s"] = round(time.perf_counter() - started, 1)
        latencies = time_queries(large, queries, repeat=2)
        figures["large_search_p50_ms"] = round(statistics.median(latencies), 2)
        figures["large_search_p95_ms"] = round(percentile(latencies, 95), 2)
        rows += [
            ("synthetic catalogue", f"{figures['large_products']} products, "
             f"{figures['large_mean_words']} words/doc"),
            ("index build", f"{figures['large_index_build_s']} s (save {figures['large_index_save_s']} s, "
             f"load {figures['large_index_load_s']} s)"),
            ("search p50 / p95", f"{figures['large_search_p50_ms']} / {figures['large_search_p95_ms']} ms"),
        ]  # fmt: skip

    figures["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    rows.append(("peak memory", f"{figures['peak_rss_gib']} GiB"))
    figures["machine"] = f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}"
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
