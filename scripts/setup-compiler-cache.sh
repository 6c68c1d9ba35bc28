#!/usr/bin/env bash
# Puts Debian's ccache in front of the C and C++ compilers for `npm ci`, and prints the
# environment that does it (eval its output): better-sqlite3 has no prebuilt binary reachable
# here, so every install compiles SQLite from source, ~110 s of one core. With ccache a
# machine compiles it once; a later install (CI's fresh clones) takes a few seconds.
# The cache holds compiler output only, keyed by the preprocessed source and the flags, so a
# changed package or compiler compiles again. Idempotent and non-interactive; prints
# nothing (and the compilers stay as they are) where ccache cannot be installed.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
log() { printf 'setup-compiler-cache: %s\n' "$*" >&2; }

if ! command -v ccache >/dev/null 2>&1; then
  # shellcheck source=scripts/install-helpers.sh
  . "$(dirname "$0")/install-helpers.sh"
  if ! root_or_sudo; then
    log "not root and no passwordless sudo: native modules compile without a cache"
    exit 0
  fi
  if ! apt_install ccache 2>/dev/null; then
    log "could not install ccache: native modules compile without a cache"
    exit 0
  fi
fi

# Paths below the checkout are hashed relative to it, so clones in other folders share the cache.
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-gcc}; cxx=${CXX:-g++}
case $cc in ccache\ *) ;; *) cc="ccache $cc" ;; esac
case $cxx in ccache\ *) ;; *) cxx="ccache $cxx" ;; esac
printf 'export CC=%q CXX=%q CCACHE_BASEDIR=%q CCACHE_NOHASHDIR=1\n' "$cc" "$cxx" "$root"
