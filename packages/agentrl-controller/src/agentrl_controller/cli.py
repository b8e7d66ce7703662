"""The ``agentrl-controller`` command.

``serve`` runs the controller service; ``worker`` serves one of its tasks from another host, registered with a
controller by heartbeat.
"""

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
    from agentrl_controller.gc_tuning import settle_heap
    from agentrl_controller.http.onewrite import OneWriteHttpProtocol

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
    settle_heap()
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=args.log_level.lower(),
        access_log=False,
        timeout_keep_alive=600,
        backlog=4096,
        http=OneWriteHttpProtocol,
        log_config=None,
    )
    return 0


def worker(args: argparse.Namespace) -> int:
    """Serve one task over TCP and heartbeat the controller until interrupted."""
    import asyncio
    import contextlib

    from agentrl_controller.workers.local import loop_factory
    from agentrl_controller.workers.remote import serve_remote_worker

    _setup_logging(args.log_level, args.log_format)
    try:
        config = load_config(args.config) if args.config else default_config()
    except ConfigError as e:
        print(f"agentrl-controller: {e}", file=sys.stderr)
        return 2
    task = config.task(args.task)
    if task is None:
        known = ", ".join(t.name for t in config.tasks)
        print(f"agentrl-controller: no task {args.task!r} in the config; known: {known}.", file=sys.stderr)
        return 2
    self_url = args.self_url or f"http://{args.host}:{args.port}/api"
    token = args.token or os.environ.get(TOKEN_ENV)
    run = serve_remote_worker(
        task,
        controller_url=args.controller,
        self_url=self_url,
        host=args.host,
        port=args.port,
        token=token,
        heartbeat_s=args.heartbeat_s,
    )
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(run)
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
    remote = commands.add_parser("worker", help="Serve one task for a controller on another host (by heartbeat).")
    remote.add_argument("--task", required=True, help="Task name (or alias) from the config, e.g. dbbench-std.")
    remote.add_argument("--config", help="Controller-style config holding the task (default: the registered tasks).")
    remote.add_argument("--controller", required=True, help="The controller's API URL, e.g. http://HOST:5020/api.")
    remote.add_argument("--self", dest="self_url", help="This worker's API URL as the controller reaches it.")
    remote.add_argument("--host", default="127.0.0.1", help="Bind address (default 127.0.0.1).")
    remote.add_argument("--port", type=int, default=5021, help="Port (default 5021).")
    remote.add_argument("--token", help=f"The controller's bearer token (or ${TOKEN_ENV}).")
    remote.add_argument("--heartbeat-s", type=float, default=8.0, help="Seconds between heartbeats (default 8).")
    remote.add_argument("--log-level", default="INFO")
    remote.add_argument("--log-format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    sys.exit(serve(args) if args.command == "serve" else worker(args))


if __name__ == "__main__":
    main()
