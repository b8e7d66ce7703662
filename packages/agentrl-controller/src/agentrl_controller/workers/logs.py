"""The log files of the controller's child processes (workers, sandbox brokers): the tail that explains a failure."""

from __future__ import annotations

from pathlib import Path

__all__ = ["log_tail"]


def log_tail(path: Path, limit: int = 1500) -> str:
    """The last ``limit`` characters of the log at ``path`` (for an error message)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return text[-limit:].strip() or "(empty log)"
