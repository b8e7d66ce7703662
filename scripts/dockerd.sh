#!/usr/bin/env bash
# Start or stop a Docker engine for tests and benchmarks on a machine without systemd.
#   scripts/dockerd.sh start   start dockerd unless one already answers (prints "started" or "running")
#   scripts/dockerd.sh stop    stop the dockerd that `start` launched (leaves a pre-existing one alone)
set -euo pipefail
pidfile=/run/agentrl-dockerd.pid
log=/tmp/agentrl-dockerd.log

case "${1:-}" in
start)
    if docker info >/dev/null 2>&1; then echo running; exit 0; fi
    command -v dockerd >/dev/null || { echo "dockerd missing: apt-get install docker.io" >&2; exit 1; }
    [ "$(id -u)" = 0 ] || { echo "starting dockerd needs root" >&2; exit 1; }
    nohup dockerd >"$log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 100); do
        if docker info >/dev/null 2>&1; then echo started; exit 0; fi
        sleep 0.3
    done
    echo "dockerd did not come up; see $log" >&2
    exit 1
    ;;
stop)
    [ -f "$pidfile" ] || exit 0
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    rm -f "$pidfile"
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
