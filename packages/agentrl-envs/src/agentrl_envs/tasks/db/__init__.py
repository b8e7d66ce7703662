"""DBBench (``AgentBench/DB-v0``): answer questions about, and modify, a small table through SQL tool calls.

Modules: :mod:`.data` (samples of each split), :mod:`.texts` (upstream's prompt texts), :mod:`.grader`
(upstream's answer normalisation and table hash), :mod:`.backend` (the database interface and its factory),
:mod:`.sqlite_backend` / :mod:`.mysql_dialect` (the embedded engine and its MySQL shims),
:mod:`.mariadb_backend` / :mod:`.mariadb_server` (a real MariaDB), :mod:`.env` and :mod:`.oracle`.
"""
