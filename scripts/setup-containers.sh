#!/usr/bin/env bash
# Installs and configures the local container runtime Berth uses for image deployments
# (podman + runc) and the tools its tests use (buildah, skopeo, busybox-static,
# docker-registry, openssh-server for git over ssh (its service is never started), and
# kubectl, which renders the Kubernetes manifests offline with `kubectl kustomize`).
#
# It also sets up the build sandbox (docs/security.md): the unprivileged user builds run as
# (BERTH_BUILD_USER, default berth-build) with subordinate uid and gid ranges for its user
# namespaces, the tools rootless builds need (uidmap, slirp4netns, nftables), and
# /dev/net/tun usable by that user (mode 0666, as udev makes it; some hosts leave it 0600).
#
# Idempotent and non-interactive: safe to run repeatedly, as root in CI, with no stdin.
# Writes only /etc/berth/containers.conf and /etc/berth/registries.conf, so it never
# changes how other podman users on the machine behave.
set -euo pipefail

CONF_DIR=${BERTH_CONTAINERS_CONF_DIR:-/etc/berth}
CONTAINERS_CONF_PATH="$CONF_DIR/containers.conf"
REGISTRIES_CONF_PATH="$CONF_DIR/registries.conf"
PACKAGES=(podman buildah skopeo runc busybox-static docker-registry openssh-server kubectl uidmap slirp4netns nftables e2fsprogs)
BUILD_USER=${BERTH_BUILD_USER:-berth-build}
BUILD_DIR=${BERTH_BUILD_DIR:-/var/lib/berth-build}

log() { printf 'setup-containers: %s\n' "$*" >&2; }

# shellcheck source=scripts/install-helpers.sh
. "$(dirname "$0")/install-helpers.sh"
if ! root_or_sudo; then
  log "must run as root (or with passwordless sudo) to install packages and write $CONF_DIR"
  exit 1
fi

# runc lives in /usr/sbin, which non-login and non-root shells often leave off PATH.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

installed() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null | grep -qx installed; }
has_candidate() {
  local candidate
  candidate=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
  [ -n "$candidate" ] && [ "$candidate" != "(none)" ]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  log "packages already installed: ${PACKAGES[*]}"
else
  # Fresh CI images often ship without package lists; refresh only when apt cannot see a package.
  need_update=0
  for pkg in "${missing[@]}"; do
    has_candidate "$pkg" || need_update=1
  done
  # apt's chatter goes to stderr: stdout carries only the export lines, so `eval "$(…)"` works.
  if [ "$need_update" -eq 1 ]; then
    log "apt-get update (no install candidate for some of: ${missing[*]})"
    "${SUDO[@]}" apt-get update -q </dev/null >&2
  fi
  log "installing: ${missing[*]}"
  # Packaged services (sshd, the registry) must not start: tests run their own on loopback.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${SUDO[@]}" chmod 0755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  if ! "${SUDO[@]}" apt-get install "${APT_OPTS[@]}" "${missing[@]}" </dev/null >&2; then
    # Stale lists point at package versions the mirror no longer has: refresh once and retry.
    log "install failed; refreshing package lists and retrying"
    "${SUDO[@]}" apt-get update -q </dev/null >&2
    "${SUDO[@]}" apt-get install "${APT_OPTS[@]}" "${missing[@]}" </dev/null >&2
  fi
  [ "$made_policy" -eq 0 ] || "${SUDO[@]}" rm -f /usr/sbin/policy-rc.d
  # Debian's registry service uses a config that listens on every interface; Berth's tests run
  # their own registry on 127.0.0.1, so do not leave the packaged one running after we installed it.
  if [[ " ${missing[*]} " == *" docker-registry "* ]] && [ -d /run/systemd/system ]; then
    log "stopping and disabling the packaged docker-registry service (listens on all interfaces)"
    "${SUDO[@]}" systemctl disable --now docker-registry >/dev/null 2>&1 || true
  fi
fi

for bin in podman buildah skopeo runc docker-registry newuidmap slirp4netns nft; do
  command -v "$bin" >/dev/null 2>&1 || { log "$bin is not on PATH after installation"; exit 1; }
done
[ -x /bin/busybox ] || { log "/bin/busybox (busybox-static) is missing after installation"; exit 1; }

# The build sandbox's user: no login, no password, a home under the build directory, and
# 65,536 subordinate ids of its own for the user namespaces its builds run in.
if ! id -u "$BUILD_USER" >/dev/null 2>&1; then
  log "creating the build user $BUILD_USER"
  "${SUDO[@]}" useradd --system --home-dir "$BUILD_DIR/home" --no-create-home --shell /usr/sbin/nologin "$BUILD_USER"
fi
for kind in uid gid; do
  file=/etc/sub$kind
  if ! grep -q "^$BUILD_USER:" "$file" 2>/dev/null; then
    # The first free range of 65,536 ids above every range already given out (and above 100,000).
    start=$(awk -F: 'BEGIN { top = 100000 } { end = $2 + $3; if (end > top) top = end } END { print top }' "$file" 2>/dev/null || echo 100000)
    log "giving $BUILD_USER the sub${kind}s $start-$((start + 65535))"
    "${SUDO[@]}" usermod "--add-sub${kind}s" "$start-$((start + 65535))" "$BUILD_USER"
  fi
done
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  log "making /dev/net/tun usable by unprivileged users (mode 0666, as udev does)"
  "${SUDO[@]}" chmod 0666 /dev/net/tun
fi

# Writes a file only when its content changes, atomically, so concurrent readers never see half of it.
write_file() {
  local path=$1 content=$2 tmp
  if [ -f "$path" ] && [ "$(cat "$path")" == "$content" ]; then
    log "$path is up to date"
    return
  fi
  "${SUDO[@]}" mkdir -p "$(dirname "$path")"
  tmp=$(mktemp)
  printf '%s\n' "$content" >"$tmp"
  "${SUDO[@]}" install -m 0644 "$tmp" "$path.tmp.$$"
  rm -f "$tmp"
  "${SUDO[@]}" mv -f "$path.tmp.$$" "$path"
  log "wrote $path"
}

# Why each setting:
# - runtime runc: crun fails on this kind of host ("cgroups in hybrid mode not supported").
# - default_ulimits: podman otherwise asks for 1,048,576 open files, above the hard limit here.
# - cgroup_manager cgroupfs / events_logger file / log_driver k8s-file: there may be no systemd
#   or journald to talk to, and `podman logs` must work regardless.
write_file "$CONTAINERS_CONF_PATH" "# Managed by Berth's scripts/setup-containers.sh; rerunning it overwrites this file.
[containers]
default_ulimits = [\"nofile=4096:4096\", \"nproc=4096:4096\"]
log_driver = \"k8s-file\"

[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\"
events_logger = \"file\""

write_file "$REGISTRIES_CONF_PATH" "# Managed by Berth's scripts/setup-containers.sh; rerunning it overwrites this file.
# Short names (\"berth-test-agent:v1\") resolve to locally built images first, never to a public registry.
unqualified-search-registries = []
short-name-mode = \"permissive\"

[[registry]]
location = \"127.0.0.1:5000\"
insecure = true

[[registry]]
location = \"localhost:5000\"
insecure = true"

# Start a real container from a throwaway rootfs holding only the static busybox: `podman info`
# succeeds even when no container can start (wrong OCI runtime, ulimits), so it proves little.
export CONTAINERS_CONF="$CONTAINERS_CONF_PATH" CONTAINERS_REGISTRIES_CONF="$REGISTRIES_CONF_PATH"
ROOTFS=$(mktemp -d)
trap 'rm -rf "$ROOTFS"' EXIT
mkdir -p "$ROOTFS/bin"
cp /bin/busybox "$ROOTFS/bin/busybox"
if ! out=$("${SUDO[@]}" env CONTAINERS_CONF="$CONTAINERS_CONF" CONTAINERS_REGISTRIES_CONF="$CONTAINERS_REGISTRIES_CONF" \
  podman run --rm --network host --rootfs "$ROOTFS" /bin/busybox echo berth-container-ok 2>&1) \
  || [[ "$out" != *berth-container-ok* ]]; then
  log "a test container did not start with $CONTAINERS_CONF_PATH:"
  printf '%s\n' "$out" >&2
  exit 1
fi
log "a test container started with $CONTAINERS_CONF_PATH"

log "done; to use the local container runtime, export:"
printf 'export CONTAINERS_CONF=%s\n' "$CONTAINERS_CONF_PATH"
printf 'export CONTAINERS_REGISTRIES_CONF=%s\n' "$REGISTRIES_CONF_PATH"
