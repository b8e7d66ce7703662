#!/usr/bin/env bash
# Make a fresh Debian machine ready: uv, the workspace virtualenv, and the system services tests start.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

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
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        # Wait for another apt run (e.g. a parallel bootstrap) instead of failing on its lock.
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "bootstrap: please install: ${missing[*]} (apt-get install ${missing[*]})" >&2
    fi
fi

uv sync --all-packages --all-extras --frozen --quiet

# The OS task's bwrap root filesystems (debootstrap + apt, a few minutes once; cached under the cache dir,
# rebuilt when their recipe changes, milliseconds when warm).
if [ "$(id -u)" = 0 ] && command -v bwrap >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; then
    uv run --frozen python -m agentrl_envs.tasks.os.images
fi
