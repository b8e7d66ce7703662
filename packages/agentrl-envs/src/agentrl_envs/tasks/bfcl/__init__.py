"""BFCL multi-turn (``AgentBench/BFCL-*-v0``): BFCL-v3/v4's multi-turn categories as held-out environments.

Modules: :mod:`.fetch` (the pinned ``bfcl-eval`` wheel into the cache), :mod:`.upstream` (BFCL's checker,
executor and backends imported from it), :mod:`.data` (categories, entries, function docs), :mod:`.backend`
(one episode's backends and BFCL's verdict), :mod:`.env`, :mod:`.oracle` and :mod:`.report` (accuracy in
BFCL's terms).
"""
