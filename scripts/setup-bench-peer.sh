#!/usr/bin/env bash
# Installs Debian's FastAPI and uvicorn (with uvloop, as `uvicorn[standard]` would run) for the
# bench's FastAPI peer (bench/peer/fastapi_peer.py), the Python implementation of Berth's
# deployment endpoints that issue 24's targets compare Berth with. Debian's packages go to
# /usr/bin/python3's dist-packages, which the bench tries when `python3` on the PATH (pyenv's, say) cannot import them.
# Idempotent, quiet and non-interactive; prints nothing when they are there. The bench goes on
# without the peer (saying so) when they are not.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
log() { printf 'setup-bench-peer: %s\n' "$*" >&2; }

if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import fastapi, uvicorn, uvloop' >/dev/null 2>&1; then exit 0; fi
# shellcheck source=scripts/install-helpers.sh
. "$(dirname "$0")/install-helpers.sh"
if ! root_or_sudo; then
  log "not root and no passwordless sudo: cannot install python3-fastapi and python3-uvicorn (the bench runs without its FastAPI peer)"
  exit 1
fi
log "installing python3-fastapi, python3-uvicorn and python3-uvloop"
apt_install python3-fastapi python3-uvicorn python3-uvloop
