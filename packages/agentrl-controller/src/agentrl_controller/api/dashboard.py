"""The live dashboard page served at ``/``: workers, sessions and throughput, refreshed every second.

Plain HTML and JavaScript that polls ``/api/list_workers``, ``/api/list_sessions`` and ``/metrics``; a token,
if the controller needs one, is read from the page's ``#token=...`` fragment (never sent in a URL).
"""

from __future__ import annotations

__all__ = ["DASHBOARD_HTML"]

DASHBOARD_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>AgentRL controller</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
 h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 1.5rem; }
 table { border-collapse: collapse; } td, th { padding: .2rem .7rem; border-bottom: 1px solid #ddd; text-align: left; }
 .num { text-align: right; font-variant-numeric: tabular-nums; } .bad { color: #b00; }
</style>
</head>
<body>
<h1>AgentRL controller</h1>
<p>Open sessions: <b id="sessions">-</b> · Queued: <b id="queued">-</b> ·
 Interacts/s: <b id="throughput">-</b> · Updated: <span id="updated">never</span></p>
<h2>Workers</h2>
<table id="workers"><thead><tr><th>id</th><th>task</th><th>kind</th><th>active / concurrency</th>
<th>pid</th><th>restarts</th><th>healthy</th></tr></thead><tbody></tbody></table>
<h2>Sessions by task</h2>
<table id="tasks"><thead><tr><th>task</th><th>open</th></tr></thead><tbody></tbody></table>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const headers = token ? {Authorization: "Bearer " + token} : {};
let last = null;
function cell(text, cls) { const td = document.createElement("td"); td.textContent = text;
  if (cls) td.className = cls; return td; }
function fill(id, rows) { const body = document.querySelector("#" + id + " tbody"); body.replaceChildren();
  for (const row of rows) { const tr = document.createElement("tr"); row.forEach(c => tr.appendChild(c));
  body.appendChild(tr); } }
function interacts(text) { let total = 0;
  for (const line of text.split("\\n")) if (line.startsWith("controller_interacts_total"))
    total += parseFloat(line.split(" ").pop());
  return total; }
async function refresh() {
  try {
    const [workers, sessions, metrics, health] = await Promise.all([
      fetch("/api/list_workers", {headers}).then(r => r.json()),
      fetch("/api/list_sessions", {headers}).then(r => r.json()),
      fetch("/metrics", {headers}).then(r => r.text()),
      fetch("/healthz", {headers}).then(r => r.json())]);
    fill("workers", workers.map(w => [cell(w.worker_id), cell(w.task), cell(w.kind),
      cell(w.active + " / " + w.concurrency, "num"), cell(w.pid ?? ""), cell(w.restarts, "num"),
      cell(w.healthy ? "yes" : "no", w.healthy ? "" : "bad")]));
    const byTask = {};
    for (const s of sessions) byTask[s.task] = (byTask[s.task] || 0) + 1;
    fill("tasks", Object.entries(byTask).map(([t, n]) => [cell(t), cell(n, "num")]));
    document.getElementById("sessions").textContent = health.sessions;
    document.getElementById("queued").textContent = health.queued;
    const now = performance.now(), total = interacts(metrics);
    if (last) document.getElementById("throughput").textContent =
      ((total - last.total) / ((now - last.now) / 1000)).toFixed(1);
    last = {now, total};
    document.getElementById("updated").textContent = new Date().toLocaleTimeString();
  } catch (e) { document.getElementById("updated").textContent = "error: " + e; }
}
refresh(); setInterval(refresh, 1000);
</script>
</body>
</html>
"""
