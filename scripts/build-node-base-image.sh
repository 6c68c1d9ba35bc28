#!/usr/bin/env bash
# Builds the Node.js base images Berth's Dockerfile can start from, with no registry base
# image (no public registry is reachable from this machine).
#
# Usage: scripts/build-node-base-image.sh [--tag <image>] [--build-tag <image>]
#   --tag        the runtime base (default: localhost/berth/node:<node major>, e.g. :20): the
#                host's node binary with the libraries `ldd` lists, the host's npm, busybox-static
#                for a shell and the usual tools, and the host's CA bundle
#   --build-tag  the build base (default: <tag>-build): the runtime base plus python3, make and
#                g++ copied from the host's Debian packages (and everything they depend on),
#                and Node's headers, so node-gyp compiles better-sqlite3 offline
#
# Then:
#   buildah bud --isolation chroot --format docker \
#     --build-arg NODE_IMAGE=localhost/berth/node:20 \
#     --build-arg NODE_BUILD_IMAGE=localhost/berth/node:20-build -t localhost/berth/berth:dev .
#
# The images stand in for docker.io/library/node:20-bookworm-slim and node:20-bookworm, the
# Dockerfile's defaults where a registry is reachable. Debian hosts only (dpkg, merged /usr).
# Idempotent: an image already built from the same inputs is kept as it is.
set -euo pipefail

TAG=
BUILD_TAG=
usage() { echo "usage: $0 [--tag <image>] [--build-tag <image>]" >&2; exit 2; }
log() { printf 'build-node-base-image: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --tag) [ $# -ge 2 ] || usage; TAG=$2; shift 2 ;;
    --tag=*) TAG=${1#*=}; shift ;;
    --build-tag) [ $# -ge 2 ] || usage; BUILD_TAG=$2; shift 2 ;;
    --build-tag=*) BUILD_TAG=${1#*=}; shift ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done

# buildah and podman share storage as root, so the images are visible to `podman run` afterwards.
if [ -z "${CONTAINERS_CONF:-}" ] && [ -f /etc/berth/containers.conf ]; then
  export CONTAINERS_CONF=/etc/berth/containers.conf
fi

BUSYBOX=${BUSYBOX:-/bin/busybox}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# What node-gyp needs to compile a native module: gyp is Python, and it writes Makefiles for g++.
TOOLCHAIN_PACKAGES=(python3 make g++)
command -v buildah >/dev/null 2>&1 || die "buildah is not installed; run scripts/setup-containers.sh"
command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query is missing: the build base copies Debian packages from the host, so build on Debian"
[ -x "$BUSYBOX" ] || die "$BUSYBOX is missing; run scripts/setup-containers.sh (busybox-static)"
if ldd "$BUSYBOX" >/dev/null 2>&1; then die "$BUSYBOX is dynamically linked; install busybox-static"; fi
[ -s "$CA_BUNDLE" ] || die "the CA bundle $CA_BUNDLE is missing; install ca-certificates (npm in the image needs it)"
for package in "${TOOLCHAIN_PACKAGES[@]}"; do
  [ "$(dpkg-query -W -f '${db:Status-Status}' "$package" 2>/dev/null)" = installed ] ||
    die "$package is not installed on this host; the build base copies it from here: apt-get install -y ${TOOLCHAIN_PACKAGES[*]}"
done

NODE_BIN=$(command -v node || true)
[ -n "$NODE_BIN" ] || die "node is not on PATH; the image carries the host's Node.js"
NODE_BIN=$(readlink -f "$NODE_BIN")
NODE_VERSION=$("$NODE_BIN" --version)
NODE_VERSION=${NODE_VERSION#v}
NODE_MAJOR=${NODE_VERSION%%.*}
# Installed beside the binary (<prefix>/bin/node, <prefix>/include/node), as nodejs packages do.
NODE_HEADERS="$(dirname "$(dirname "$NODE_BIN")")/include/node"
[ -f "$NODE_HEADERS/node.h" ] || die "Node's headers are missing from $NODE_HEADERS; node-gyp needs them to compile offline (they ship with the nodejs package)"
NPM_DIR=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)
[ -f "$NPM_DIR/package.json" ] || die "cannot find npm's package directory next to the host's npm"
NPM_VERSION=$("$NODE_BIN" -p "require('$NPM_DIR/package.json').version")
TAG=${TAG:-localhost/berth/node:$NODE_MAJOR}
BUILD_TAG=${BUILD_TAG:-$TAG-build}
# Shared libraries the node binary loads, the dynamic loader included (absolute paths only).
mapfile -t LIBS < <(ldd "$NODE_BIN" | grep -o '/[^ ]*' | sort -u)

# Installed packages a set of packages needs, the set included (Depends and Pre-Depends,
# the first installed alternative of each).
package_closure() {
  local -A seen=()
  local queue=("$@") package part alternative name
  while [ ${#queue[@]} -gt 0 ]; do
    package=${queue[0]}
    queue=("${queue[@]:1}")
    [ -z "${seen[$package]:-}" ] || continue
    [ "$(dpkg-query -W -f '${db:Status-Status}' "$package" 2>/dev/null)" = installed ] || continue
    seen[$package]=1
    IFS=',' read -ra parts <<<"$(dpkg-query -W -f '${Pre-Depends}, ${Depends}' "$package")"
    for part in "${parts[@]}"; do
      IFS='|' read -ra alternatives <<<"$part"
      for alternative in "${alternatives[@]}"; do
        name=$(sed 's/([^)]*)//; s/:any//; s/[[:space:]]//g' <<<"$alternative")
        [ -n "$name" ] || continue
        if [ "$(dpkg-query -W -f '${db:Status-Status}' "$name" 2>/dev/null)" = installed ]; then
          queue+=("$name")
          break
        fi
      done
    done
  done
  printf '%s\n' "${!seen[@]}" | sort
}

# Files (and symlinks) of packages, without documentation, manuals and translations.
package_files() {
  dpkg-query -L "$@" | grep -vE '^/usr/share/(doc|man|info|locale|lintian|bug)/' | while IFS= read -r file; do
    if [ -L "$file" ] || [ -f "$file" ]; then printf '%s\n' "$file"; fi
  done | sort -u
}

image_fingerprint() {
  buildah inspect --type image --format '{{index .ImageAnnotations "berth.base-image.fingerprint"}}' "$1" 2>/dev/null || true
}

STAGE=$(mktemp -d)
CTR=
cleanup() {
  rm -rf "$STAGE"
  if [ -n "$CTR" ]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# Commits the working container $CTR as $1, dropping the image it replaces.
commit_as() {
  local tag=$1 previous
  previous=$(buildah inspect --type image --format '{{.FromImageID}}' "$tag" 2>/dev/null || true)
  buildah commit --quiet --rm "$CTR" "$tag" >/dev/null
  CTR=
  # The replaced build is now untagged; drop it unless a container still uses it.
  if [ -n "$previous" ]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi
}

build_runtime_base() {
  local fingerprint root applet npm_name ca=/etc/ssl/certs/ca-certificates.crt
  # Everything the image is made of; editing this script rebuilds too.
  fingerprint=$( {
    sha256sum "$NODE_BIN" "$BUSYBOX" "$CA_BUNDLE" "${LIBS[@]}" "${BASH_SOURCE[0]}" | cut -d' ' -f1
    printf '%s\n' "$NPM_VERSION" "${LIBS[@]}"
  } | sha256sum | cut -d' ' -f1)
  if [ "$(image_fingerprint "$TAG")" = "$fingerprint" ]; then
    log "$TAG is up to date (node $NODE_VERSION)"
    return
  fi
  root="$STAGE/runtime"
  # A merged-/usr layout like the host's, so the paths ldd prints (and the loader path in
  # node's ELF header) resolve unchanged.
  mkdir -p "$root"/usr/{bin,lib,lib64,sbin,etc} "$root"/{etc/ssl/certs,tmp,root}
  ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"; ln -s usr/sbin "$root/sbin"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  cp "$NODE_BIN" "$root/usr/bin/node"
  for lib in "${LIBS[@]}"; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  mkdir -p "$root/usr/lib/node_modules"
  cp -a "$NPM_DIR" "$root/usr/lib/node_modules/"
  npm_name=$(basename "$NPM_DIR")
  ln -s "../lib/node_modules/$npm_name/bin/npm-cli.js" "$root/usr/bin/npm"
  ln -s "../lib/node_modules/$npm_name/bin/npx-cli.js" "$root/usr/bin/npx"
  cp "$BUSYBOX" "$root/usr/bin/busybox"
  for applet in $("$BUSYBOX" --list); do
    [ -e "$root/usr/bin/$applet" ] || [ -L "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
  done
  cp "$CA_BUNDLE" "$root$ca"
  # npm's global config is ${prefix}/etc/npmrc, the prefix being /usr for /usr/bin/node.
  printf '%s\n' "cafile=$ca" 'update-notifier=false' 'fund=false' 'audit=false' >"$root/usr/etc/npmrc"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
  # Without this file glibc asks DNS before /etc/hosts.
  printf '%s\n' 'hosts: files dns' >"$root/etc/nsswitch.conf"

  CTR=$(buildah from --quiet scratch)
  buildah copy --quiet "$CTR" "$root" / >/dev/null
  buildah config \
    --env PATH=/usr/local/bin:/usr/bin:/bin \
    --env HOME=/root \
    --env NODE_VERSION="$NODE_VERSION" \
    --env NODE_EXTRA_CA_CERTS="$ca" \
    --env SSL_CERT_FILE="$ca" \
    --annotation "berth.base-image.fingerprint=$fingerprint" \
    --label "org.opencontainers.image.title=Node.js $NODE_VERSION (built from this host's files)" \
    --label "berth.base-image=node" \
    --label "berth.node-version=$NODE_VERSION" \
    --cmd '["/usr/bin/node"]' \
    "$CTR"
  if ! buildah run --isolation chroot "$CTR" -- /bin/sh -c 'set -e; node -e "require(\"node:crypto\").randomUUID()"; npm --version >/dev/null; test "$(npm config get cafile)" = /etc/ssl/certs/ca-certificates.crt' >&2; then
    die "the runtime base failed its smoke test (node or npm does not run inside it); see the output above"
  fi
  commit_as "$TAG"
  log "built $TAG (node $NODE_VERSION, npm $NPM_VERSION)"
}

build_toolchain_base() {
  local fingerprint root packages runtime_id
  mapfile -t packages < <(package_closure "${TOOLCHAIN_PACKAGES[@]}")
  runtime_id=$(buildah inspect --type image --format '{{.FromImageID}}' "$TAG")
  fingerprint=$( {
    printf '%s\n' "$runtime_id" "$NODE_VERSION"
    dpkg-query -W -f '${Package} ${Version}\n' "${packages[@]}"
    sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
  } | sha256sum | cut -d' ' -f1)
  if [ "$(image_fingerprint "$BUILD_TAG")" = "$fingerprint" ]; then
    log "$BUILD_TAG is up to date (${#packages[@]} Debian packages for ${TOOLCHAIN_PACKAGES[*]})"
    return
  fi
  root="$STAGE/toolchain"
  # The runtime base's merged-/usr layout, so files listed under /lib land in /usr/lib.
  mkdir -p "$root"/usr/{bin,lib,lib64,sbin}
  ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"; ln -s usr/sbin "$root/sbin"
  # File entries only (and not the host's own /bin, /lib… symlinks), extracted through those symlinks.
  package_files "${packages[@]}" | grep -vxE '/(bin|lib|lib32|lib64|libx32|sbin)' >"$STAGE/toolchain-files"
  tar -C / --no-recursion -cf - -T <(sed 's|^/||' "$STAGE/toolchain-files") | tar -C "$root" --keep-directory-symlink -xf -
  # update-alternatives' names, which Makefiles and node-gyp call; not part of any package's files.
  ln -sf gcc "$root/usr/bin/cc"
  ln -sf g++ "$root/usr/bin/c++"
  mkdir -p "$root/usr/include"
  cp -a "$NODE_HEADERS" "$root/usr/include/"

  CTR=$(buildah from --quiet "$TAG")
  buildah copy --quiet "$CTR" "$root" / >/dev/null
  # node-gyp would otherwise download Node's headers from nodejs.org.
  buildah config \
    --env npm_config_nodedir=/usr \
    --annotation "berth.base-image.fingerprint=$fingerprint" \
    --label "org.opencontainers.image.title=Node.js $NODE_VERSION with python3, make and g++ (built from this host's files)" \
    --label "berth.base-image=node-build" \
    "$CTR"
  local smoke='set -e; python3 -c "import json, sys" ; make --version >/dev/null
printf "#include <vector>\n#include <node_api.h>\nint main() { std::vector<int> v{0}; return v[0]; }\n" > /tmp/smoke.cc
c++ -I/usr/include/node -o /tmp/smoke /tmp/smoke.cc; /tmp/smoke; rm -f /tmp/smoke /tmp/smoke.cc'
  if ! buildah run --isolation chroot "$CTR" -- /bin/sh -c "$smoke" >&2; then
    die "the build base failed its smoke test (python3, make or g++ does not run inside it); see the output above"
  fi
  commit_as "$BUILD_TAG"
  log "built $BUILD_TAG (${#packages[@]} Debian packages for ${TOOLCHAIN_PACKAGES[*]}, Node's headers)"
}

started=$(date +%s)
build_runtime_base
build_toolchain_base
log "done in $(( $(date +%s) - started )) s"
