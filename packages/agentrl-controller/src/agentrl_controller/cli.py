"""``agentrl-controller serve``: run the controller service."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from agentrl_controller.config import ControllerConfig, default_config, load_config
from agentrl_controller.errors import ConfigError

__all__ = ["main"]

TOKEN_ENV = "AGENTRL_CONTROLLER_TOKEN"


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def _setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def _config(args: argparse.Namespace) -> ControllerConfig:
    overrides = {"host": args.host, "port": args.port, "token": args.token or os.environ.get(TOKEN_ENV)}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if args.config:
        return load_config(args.config, **overrides)
    return default_config(**overrides)


def serve(args: argparse.Namespace) -> int:
    """Run the service until interrupted."""
    import uvicorn

    from agentrl_controller.api.app import create_app
    from agentrl_controller.controller import Controller

    _setup_logging(args.log_level, args.log_format)
    try:
        config = _config(args)
    except ConfigError as e:
        print(f"agentrl-controller: {e}", file=sys.stderr)
        return 2
    shown = config.model_dump(mode="json")
    if shown.get("token"):
        shown["token"] = "***"
    logging.getLogger("agentrl_controller").info("resolved config: %s", json.dumps(shown))
    app = create_app(Controller(config))
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=args.log_level.lower(),
        access_log=False,
        timeout_keep_alive=600,
        backlog=4096,
        log_config=None,
    )
    return 0


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``agentrl-controller``."""
    parser = argparse.ArgumentParser(prog="agentrl-controller", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="Serve the controller API.")
    run.add_argument("--config", help="YAML/JSON config file (default: every registered task, local workers).")
    run.add_argument("--host", help="Bind address (default 127.0.0.1; any other needs a token).")
    run.add_argument("--port", type=int, help="Port (default 5020).")
    run.add_argument("--token", help=f"Bearer token every route requires (or ${TOKEN_ENV}).")
    run.add_argument("--log-level", default="INFO")
    run.add_argument("--log-format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    sys.exit(serve(args))


if __name__ == "__main__":
    main()
