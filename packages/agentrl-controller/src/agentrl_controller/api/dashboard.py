"""The dashboard at ``/``: configured tasks, finished episodes per task, sessions over time, workers, sessions.

The server renders the figures into the page (:func:`render_page`), so the page shows them at load, without
JavaScript; a script then swaps in a fresh rendering of the same part (``GET /dashboard/live``) every second.
With a bearer token configured, the first rendering holds no figures unless the request carries the token
(a browser keeps it in the ``#token=...`` fragment, which is never sent), and the script fetches them with it.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from agentrl_controller.stats import HistoryPoint

if TYPE_CHECKING:
    from agentrl_controller.controller import Controller

__all__ = ["render_live", "render_page"]

_STYLE = """
 body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
 h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 1.5rem; }
 table { border-collapse: collapse; } td, th { padding: .2rem .7rem; border-bottom: 1px solid #ddd; text-align: left; }
 .num { text-align: right; font-variant-numeric: tabular-nums; } .bad { color: #b00; } .muted { color: #777; }
 svg text { font-size: 11px; fill: #555; }
"""

_SCRIPT = """
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const headers = token ? {Authorization: "Bearer " + token} : {};
async function refresh() {
  try {
    const response = await fetch("/dashboard/live", {headers});
    if (!response.ok) throw new Error("HTTP " + response.status + " " + (await response.text()));
    document.getElementById("live").innerHTML = await response.text();
  } catch (e) { document.getElementById("updated").textContent = "error: " + e.message; }
}
refresh(); setInterval(refresh, 1000);
"""


def render_page(controller: Controller | None) -> str:
    """The whole page; ``controller=None`` renders it without figures (a token is needed to see them)."""
    live = render_live(controller) if controller is not None else _empty_live()
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>AgentRL controller</title>\n'
        f"<style>{_STYLE}</style>\n</head>\n<body>\n<h1>AgentRL controller</h1>\n"
        f'<div id="live">{live}</div>\n<script>{_SCRIPT}</script>\n</body>\n</html>\n'
    )


def render_live(controller: Controller) -> str:
    """The part of the page that changes: every figure, as of now."""
    sessions = controller.list_sessions()
    stats = controller.sessions.stats
    now = stats.sample(len(sessions))
    rate = stats.interact_rate(now)
    points = list(stats.history)
    if points[-1] is not now:  # a sample too close to the last is not kept, but the page shows it
        points.append(now)
    by_task: dict[str, int] = {}
    for session in sessions:
        by_task[session.task] = by_task.get(session.task, 0) + 1
    parts = [
        f'<p>Open sessions: <b id="sessions">{len(sessions)}</b> · Queued: '
        f'<b id="queued">{controller.admission.waiting()}</b> · Interacts/s: '
        f'<b id="throughput">{"-" if rate is None else f"{rate:.1f}"}</b> · Updated: '
        f'<span id="updated">{time.strftime("%H:%M:%S", time.localtime(now.time))}</span></p>',
        "<h2>Configured tasks</h2>",
        _table(
            "configured",
            ["name", "env", "split", "aliases", "workers × sessions", "start"],
            [
                [
                    t.name,
                    t.env,
                    t.split or "-",
                    ", ".join(t.aliases) or "-",
                    f"{t.workers} × {t.concurrency}",
                    _lazy(t.lazy),
                ]
                for t in controller.config.tasks
            ],
            numeric=(4,),
        ),
        "<h2>Finished episodes</h2>",
        _table(
            "episodes",
            ["task", "finished", "success rate", "statuses"],
            [
                [
                    task,
                    str(e.finished),
                    "-" if e.success_rate is None else f"{100 * e.success_rate:.1f}% ({e.successes})",
                    ", ".join(f"{status}: {count}" for status, count in e.statuses.items()),
                ]
                for task, e in stats.by_task().items()
            ],
            numeric=(1, 2),
            empty="no episode has finished yet",
        ),
        "<h2>Open sessions over time</h2>",
        _history_svg(points),
        "<h2>Workers</h2>",
        _table(
            "workers",
            ["id", "task", "kind", "active / concurrency", "pid", "restarts", "healthy"],
            [
                [
                    w.worker_id,
                    w.task,
                    w.kind,
                    f"{w.active} / {w.concurrency}",
                    str(w.pid or ""),
                    str(w.restarts),
                    "yes" if w.healthy else "no",
                ]
                for w in controller.list_workers()
            ],
            numeric=(3, 5),
        ),
        "<h2>Sessions by task</h2>",
        _table("tasks", ["task", "open"], [[task, str(n)] for task, n in by_task.items()], numeric=(1,)),
    ]
    return "\n".join(parts)


def _empty_live() -> str:
    return (
        '<p>Open sessions: <b id="sessions">-</b> · Queued: <b id="queued">-</b> · Interacts/s: '
        '<b id="throughput">-</b> · Updated: <span id="updated">never</span></p>'
        '<p class="muted">This controller needs a token: open the page as <code>/#token=...</code>.</p>'
        + _table("workers", ["id"], [])
        + _table("tasks", ["task", "open"], [])
    )


def _table(
    table_id: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    numeric: Sequence[int] = (),
    empty: str = "",
) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{html.escape(v)}</td>' if i in numeric else f"<td>{html.escape(v)}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    if not body and empty:
        body.append(f'<tr><td class="muted" colspan="{len(columns)}">{html.escape(empty)}</td></tr>')
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _lazy(lazy: bool) -> str:
    return "on first use" if lazy else "at start-up"


def _history_svg(points: Sequence[HistoryPoint], *, width: int = 640, height: int = 140) -> str:
    """A line of open sessions against time, with its scale written out (so a screenshot reads as numbers)."""
    left, right, top, bottom = 40, 10, 10, 24
    peak = max((p.open_sessions for p in points), default=0)
    span_s = points[-1].time - points[0].time if len(points) > 1 else 0.0
    ceiling = max(peak, 1)

    def x(point: HistoryPoint) -> float:
        return left + (point.time - points[0].time) / span_s * (width - left - right) if span_s else width - right

    def y(point: HistoryPoint) -> float:
        return top + (1 - point.open_sessions / ceiling) * (height - top - bottom)

    line = " ".join(f"{x(p):.1f},{y(p):.1f}" for p in points)
    return (
        f'<svg id="history" width="{width}" height="{height}" role="img" '
        f'aria-label="open sessions over the last {span_s:.0f} s, peak {peak}">'
        f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
        'fill="#fafafa" stroke="#ddd"/>'
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{line}"/>'
        f'<text x="{left - 6}" y="{top + 9}" text-anchor="end">{ceiling}</text>'
        f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end">0</text>'
        f'<text x="{left}" y="{height - 6}">{span_s:.0f} s ago</text>'
        f'<text x="{width - right}" y="{height - 6}" text-anchor="end">now: {points[-1].open_sessions} open '
        f"(peak {peak})</text></svg>"
    )
