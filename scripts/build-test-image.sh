#!/usr/bin/env bash
# Builds a tiny agent-server image for tests, from scratch and without network: the host's
# static busybox serving GET /ok (200, {"ok":true}) on $PORT (default 8000) with busybox httpd.
#
# Usage: scripts/build-test-image.sh <image-name:tag> [--broken | --unhealthy | --slow]
#   --broken     the container prints an error and exits with code 3 at once
#   --unhealthy  the container keeps running but GET /ok answers 404
#   --slow       like the healthy image, but serves only after 4 s (to act mid-deploy)
#
# At start the container prints the names (never the values) of its environment variables to
# stdout and serves them at GET /env-names, so tests can check that secrets arrive.
#
# Idempotent: an image already built from the same inputs is kept as it is.
set -euo pipefail

usage() { echo "usage: $0 <image-name:tag> [--broken | --unhealthy | --slow]" >&2; exit 2; }
[ $# -ge 1 ] || usage
IMAGE=$1
shift
VARIANT=healthy
for arg in "$@"; do
  case "$arg" in
    --broken) VARIANT=broken ;;
    --unhealthy) VARIANT=unhealthy ;;
    --slow) VARIANT=slow ;;
    *) usage ;;
  esac
done

# buildah and podman share storage as root, so the image is visible to `podman run` afterwards.
if [ -z "${CONTAINERS_CONF:-}" ] && [ -f /etc/berth/containers.conf ]; then
  export CONTAINERS_CONF=/etc/berth/containers.conf
fi

BUSYBOX=${BUSYBOX:-/bin/busybox}
command -v buildah >/dev/null 2>&1 || { echo "buildah is not installed; run scripts/setup-containers.sh" >&2; exit 1; }
[ -x "$BUSYBOX" ] || { echo "$BUSYBOX is missing; run scripts/setup-containers.sh (busybox-static)" >&2; exit 1; }
# A dynamically linked busybox would need its libraries in the image; refuse rather than build an image that cannot start.
if ldd "$BUSYBOX" >/dev/null 2>&1; then
  echo "$BUSYBOX is dynamically linked; install busybox-static" >&2
  exit 1
fi

# awk's ENVIRON yields names only; `env | cut -d= -f1` would print the continuation lines of
# multi-line values, which can be secrets.
NAMES='/bin/awk '"'"'BEGIN { for (k in ENVIRON) print k }'"'"' | /bin/sort > /tmp/env-names; echo "env names: $(/bin/tr "\n" " " < /tmp/env-names)"'
case "$VARIANT" in
  healthy)
    SCRIPT="$NAMES; /bin/cp /tmp/env-names /www/env-names; echo \"listening on 0.0.0.0:\${PORT:-8000}\"; exec /bin/httpd -f -p \"0.0.0.0:\${PORT:-8000}\" -h /www"
    ;;
  slow)
    SCRIPT="$NAMES; /bin/cp /tmp/env-names /www/env-names; echo 'starting slowly'; /bin/sleep 4; exec /bin/httpd -f -p \"0.0.0.0:\${PORT:-8000}\" -h /www"
    ;;
  broken)
    SCRIPT="$NAMES; echo 'fatal: test agent built with --broken, exiting' >&2; exit 3"
    ;;
  unhealthy)
    SCRIPT="$NAMES; /bin/rm -f /www/ok; echo \"listening on 0.0.0.0:\${PORT:-8000} without /ok\"; exec /bin/httpd -f -p \"0.0.0.0:\${PORT:-8000}\" -h /www"
    ;;
esac

# Covers this script too, so editing it rebuilds images made by an older version.
FINGERPRINT=$( { sha256sum "$BUSYBOX" "${BASH_SOURCE[0]}" | cut -d' ' -f1; printf '%s\n%s\n' "$VARIANT" "$SCRIPT"; } | sha256sum | cut -d' ' -f1)
existing=$(buildah inspect --type image --format '{{index .ImageAnnotations "berth.test-image.fingerprint"}}' "$IMAGE" 2>/dev/null || true)
if [ "$existing" = "$FINGERPRINT" ]; then
  echo "$IMAGE is up to date ($VARIANT)" >&2
  exit 0
fi
previous=$(buildah inspect --type image --format '{{.FromImageID}}' "$IMAGE" 2>/dev/null || true)

STAGE=$(mktemp -d)
CTR=
cleanup() {
  rm -rf "$STAGE"
  if [ -n "$CTR" ]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

mkdir -p "$STAGE/bin" "$STAGE/www" "$STAGE/tmp"
chmod 1777 "$STAGE/tmp"
cp "$BUSYBOX" "$STAGE/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$STAGE/bin/$applet"
done
printf '{"ok":true}' >"$STAGE/www/ok"

CTR=$(buildah from --quiet scratch)
buildah copy --quiet "$CTR" "$STAGE" / >/dev/null
# A non-JSON entrypoint is stored as ["/bin/sh", "-c", SCRIPT].
buildah config \
  --env PATH=/bin \
  --workingdir / \
  --port 8000 \
  --annotation "berth.test-image.fingerprint=$FINGERPRINT" \
  --label "berth.test-image=$VARIANT" \
  --entrypoint "$SCRIPT" \
  --cmd '' \
  "$CTR"
buildah commit --quiet --rm "$CTR" "$IMAGE" >/dev/null
CTR=
# The replaced build is now untagged; drop it unless a container still uses it.
if [ -n "$previous" ]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi
echo "built $IMAGE ($VARIANT)" >&2
