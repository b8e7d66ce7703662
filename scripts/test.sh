#!/usr/bin/env bash
# The test suite with the services it needs: a Docker engine (started here unless one runs, stopped at the
# end) and the OS task's images (rebuilt only when their recipe changed). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(scripts/dockerd.sh start)
trap 'if [ "$started" = started ]; then scripts/dockerd.sh stop; fi' EXIT
env_images/os/build
# A crash of the interpreter (even at exit, in a C extension) prints every thread's stack.
export PYTHONFAULTHANDLER=1
uv run pytest "$@"
