"""Run one vLLM server in the foreground with the flags the ``vllm`` engine needs.

For deployments that start their own servers (one per GPU set, on other hosts): give the trainer their URLs
with ``vllm_server_urls``. See docs/deployment.md.
"""

from __future__ import annotations

import logging
import signal
import sys

from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig

logger = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> None:
    """Run one server in the foreground with the flags the engine needs (for deployments that start their own).

    ``python -m agentrl_trainer.engines.serve --model DIR --port 8000 [-- more vllm flags]``; give the
    trainer its URL with ``vllm_server_urls``. Ctrl-C (or SIGTERM) stops it.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0] if main.__doc__ else None)
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--compile", action="store_true", help="Let vLLM compile (CUDA graphs): slower start.")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="After --: more vLLM flags, verbatim.")
    args = parser.parse_args(argv)
    extra = args.extra[1:] if args.extra[:1] == ["--"] else args.extra
    config = VLLMServerConfig(
        model=args.model,
        host=args.host,
        port=args.port,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        enforce_eager=not args.compile,
        extra_args=extra,
        startup_timeout_s=3600,
    )
    logging.basicConfig(level=logging.INFO)
    server = VLLMServer(config)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.start()
        logger.info("vLLM server ready at %s (log: %s)", server.base_url, server.log_path)
        assert server.process is not None
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
