#!/usr/bin/env bash
# The Citus test cluster (engram/testing/citus.py):
#   scripts/citus.sh deps        Debian packages the build needs (C toolchain, liblz4-dev, libzstd-dev)
#   scripts/citus.sh build       build Citus from ../shared/vendor into ~/.cache/engram (once per machine)
#   scripts/citus.sh start       start a coordinator and two workers on loopback; prints url= and dir=
#   scripts/citus.sh stop DIR    stop that cluster and delete DIR
# PY names the Python with the project installed (default: the repository's .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"

case "${1:-}" in
  deps)
    wanted=(gcc make libc6-dev liblz4-dev libzstd-dev)
    missing=()
    for pkg in "${wanted[@]}"; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && exit 0
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null 2>&1 || { echo "citus.sh: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
      SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    # The package lists may be absent or stale on a fresh machine: update only if the install fails.
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" \
      || { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; }
    ;;
  build|start|stop)
    exec "$PY" -m engram.testing.citus "$@"
    ;;
  *)
    sed -n '2,7p' "$0" >&2
    exit 2
    ;;
esac
