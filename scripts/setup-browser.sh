#!/usr/bin/env bash
# Installs Debian's `chromium` for the dashboard's browser tests (test/dashboard/), which
# drive it with playwright-core: no test downloads a browser of its own. Idempotent, quiet
# and non-interactive (as root in CI, no stdin); prints nothing when chromium is there.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
log() { printf 'setup-browser: %s\n' "$*" >&2; }

if [ -x /usr/bin/chromium ]; then exit 0; fi
# shellcheck source=scripts/install-helpers.sh
. "$(dirname "$0")/install-helpers.sh"
if ! root_or_sudo; then
  log "not root and no passwordless sudo: cannot install chromium (the browser tests will skip)"
  exit 0
fi
log "installing chromium"
apt_install chromium
