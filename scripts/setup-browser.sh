#!/usr/bin/env bash
# Installs Debian's `chromium` for the dashboard's browser tests (test/dashboard/), which
# drive it with playwright-core: no test downloads a browser of its own. Idempotent, quiet
# and non-interactive (as root in CI, no stdin); prints nothing when chromium is there.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
log() { printf 'setup-browser: %s\n' "$*" >&2; }

if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  log "not root and no passwordless sudo: cannot install chromium (the browser tests will skip)"
  exit 0
fi
APT_OPTS=(-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold --no-install-recommends)
log "installing chromium"
if ! "${SUDO[@]}" apt-get install "${APT_OPTS[@]}" chromium </dev/null >/dev/null 2>&1; then
  "${SUDO[@]}" apt-get update -q </dev/null >/dev/null 2>&1
  "${SUDO[@]}" apt-get install "${APT_OPTS[@]}" chromium </dev/null >/dev/null
fi
