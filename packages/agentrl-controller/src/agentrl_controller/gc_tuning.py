"""Garbage-collector settings for the long-running servers (the controller and its worker processes).

With CPython's default thresholds (700, 10, 10) the controller holding 1,000 sessions spent 11% of its CPU
samples (perf) in the cyclic collector, most of it in full collections: about one per 4,000 no-op interacts, each
walking the whole heap (~120,000 objects, most of them the imported frameworks: FastAPI, pydantic, the task
code), 145 ms each on the shared development machine, a pause every request in flight waits out. Two changes
(measured in docs/benchmarks.md, "Controller ceilings, session 6"):

- **Freeze what startup built.** ``gc.freeze()`` moves every object alive at that point (modules, the app, the
  task's data) to a permanent generation no collection walks again; they live as long as the process anyway.
- **Collect young objects less often.** A young collection runs when the tracked objects allocated and not yet
  freed since the last one pass the first threshold; requests in flight at that moment survive it and move to
  older generations, where only a costlier collection reclaims them. At 20,000 instead of 700 few requests are
  caught in flight, so far fewer objects reach the old generations and full collections become rare. Reference
  cycles are still reclaimed, a little later: at most ~20,000 young objects wait for it (a few megabytes).

Reference counting, which frees almost everything a request allocates, is untouched.
"""

from __future__ import annotations

import gc

__all__ = ["GC_THRESHOLDS", "settle_heap"]

GC_THRESHOLDS = (20_000, 20, 10)
"""``gc.set_threshold`` for a server: young collections after 20,000 net allocations (CPython: 700), a middle
one every 20 young ones (10), and full ones as CPython's default (every 10 middle ones, and only once the old
generation grew by a quarter)."""


def settle_heap() -> None:
    """Call once a server has imported and built everything it keeps, right before it starts serving.

    Collects the garbage startup left (so that it is not frozen with the rest), freezes what remains, and sets
    :data:`GC_THRESHOLDS`.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
