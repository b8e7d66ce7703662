"""Prometheus metrics of one controller (its own registry, so several controllers can live in one process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["ControllerMetrics"]

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ControllerMetrics:
    """The ``controller_*`` series."""

    def __init__(self) -> None:
        """Create the series in a fresh registry."""
        self.registry = CollectorRegistry()
        r = self.registry
        self.sessions_started = Counter(
            "controller_sessions_started", "Sessions started, by task.", ["task"], registry=r
        )
        self.sessions_finished = Counter(
            "controller_sessions_finished", "Sessions ended, by task and final status.", ["task", "status"], registry=r
        )
        self.sessions_active = Gauge("controller_sessions_active", "Open sessions, by task.", ["task"], registry=r)
        self.interacts = Counter("controller_interacts", "Interact calls answered, by task.", ["task"], registry=r)
        self.queue_depth = Gauge(
            "controller_admission_queue_depth", "start_sample requests waiting for a slot.", registry=r
        )
        self.request_latency = Histogram(
            "controller_request_latency_seconds",
            "Time to answer an API request, by route.",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.worker_latency = Histogram(
            "controller_worker_latency_seconds",
            "Time a worker took to answer, by task and call.",
            ["task", "call"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.workers_up = Gauge(
            "controller_workers_up", "Live workers, by task and kind.", ["task", "kind"], registry=r
        )
        self.worker_slots_used = Gauge(
            "controller_worker_slots_used", "Session slots held on workers, by task.", ["task"], registry=r
        )
        self.worker_slots_total = Gauge(
            "controller_worker_slots_total", "Session slots of live workers, by task.", ["task"], registry=r
        )
        self.workers_lost = Counter(
            "controller_workers_lost", "Workers that died or stopped heartbeating, by task.", ["task"], registry=r
        )
        self.sandboxes = Gauge(
            "controller_sandbox_pool_sandboxes",
            "Sandboxes in the pools of local workers, by task, image and state (idle, leased, starting, closing).",
            ["task", "image", "state"],
            registry=r,
        )
        self.sandboxes_replaced = Gauge(
            "controller_sandbox_pool_unhealthy",
            "Idle sandboxes that failed the health check and were replaced, by task and image (since worker start).",
            ["task", "image"],
            registry=r,
        )
        self.errors = Counter("controller_errors", "Error answers, by HTTP status code.", ["code"], registry=r)

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
