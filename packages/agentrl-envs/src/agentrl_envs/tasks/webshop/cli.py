"""``agentrl-envs webshop ...``: serve the shop as a web site, or build its catalogue and index ahead of time."""

from __future__ import annotations

import argparse
import time
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.webshop.catalogue import DEFAULT_NUM_PRODUCTS, load_catalogue

__all__ = ["add_commands"]


def add_commands(groups: Any) -> None:
    """Add the ``webshop`` command group to the top-level CLI's sub-parsers."""
    parser = groups.add_parser("webshop", help="The WebShop task's site and assets.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="Serve the shop as HTML on 127.0.0.1 (people, browser agents).")
    _catalogue_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="Interface to bind (default 127.0.0.1).")
    serve.add_argument("--port", type=int, default=3000, help="Port (default 3000, upstream's).")
    serve.add_argument("--show-attrs", action="store_true", help="Show the Attributes sub-page button.")
    serve.set_defaults(run=_serve)
    build = commands.add_parser("build", help="Build (or load) the catalogue and search index into the cache.")
    _catalogue_options(build)
    build.set_defaults(run=_build)


def _catalogue_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-root", default=None, help="AgentBench data root (default $AGENTRL_DATA_ROOT, else the cache)."
    )
    parser.add_argument("--webshop-data", default=None, help="Folder with upstream's items_*.json files.")
    parser.add_argument("--num-products", type=int, default=DEFAULT_NUM_PRODUCTS, help="Generated catalogue size.")
    parser.add_argument("--seed", type=int, default=0, help="Catalogue seed.")


def _load(args: argparse.Namespace) -> Any:
    data = DataRoot.find(args.data_root)
    return load_catalogue(data.path, webshop_data=args.webshop_data, num_products=args.num_products, seed=args.seed)


def _build(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    catalogue = _load(args)
    print(
        f"{catalogue.source} catalogue {catalogue.fingerprint}: {len(catalogue.products)} products, "
        f"{len(catalogue.goals)} goals, ready in {time.perf_counter() - started:.1f}s"
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from agentrl_envs.tasks.webshop.site import ShopSite, serve

    server = serve(ShopSite(_load(args), show_attrs=args.show_attrs), host=args.host, port=args.port)
    host, port = server.server_address[:2]
    print(f"WebShop at http://{host}:{port}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
