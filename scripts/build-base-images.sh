#!/usr/bin/env bash
# Builds Berth's JavaScript agent-server base image locally, with no registry base image
# (no public registry is reachable from where Berth runs its builds).
#
# Usage: scripts/build-base-images.sh [--node-version 20] [--tag <image>]
#   --node-version  major version of Node.js in the image; must be the host's, whose `node`
#                   binary the image carries (default: 20)
#   --tag           image name (default: localhost/berth/langgraphjs-api:<node-version>; the
#                   LangGraph CLI names base images <base>:<node_version>, and Berth maps the
#                   CLI's default langchain/langgraphjs-api to this name, see BERTH_BASE_IMAGE_NODE)
#
# The image holds, on an empty root file system:
#   - the host's node binary with the libraries `ldd` lists, the host's npm, and yarn and
#     pnpm through the host's corepack (the versions corepack pins: the reachable registry
#     serves no signatures, so corepack cannot check a newer "latest");
#   - busybox-static as /bin/sh and the usual tools (`test`, `env`, ...), which npm and the
#     Dockerfiles the LangGraph CLI writes need;
#   - the host's CA bundle, named by NODE_EXTRA_CA_CERTS and npm's `cafile`, so `npm install`
#     inside a build trusts the same registry certificates as the host;
#   - a pinned @langchain/langgraph-api under /api (base-images/langgraphjs-api/package.json),
#     the prebuild script the CLI's Dockerfile runs (/api/langgraph_api/js/build.mts, with
#     `tsx` on PATH; it also compiles the graphs with esbuild), and the entrypoint: one
#     `node /api/entrypoint.mjs` process serving the graphs of LANGSERVE_GRAPHS on $PORT
#     (8000), from the bundles compiled by the prebuild step when each graph has one
#     (/api/prebuilt.mjs), else with tsx preloaded by /api/typescript-loader.mjs. The server
#     itself is bundled by esbuild at this build (base-images/langgraphjs-api/bundle-server.mjs)
#     into a few files, which load in about half the time of its hundreds of modules.
#
# Idempotent: an image already built from the same inputs is kept as it is.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INPUTS="$SCRIPT_DIR/base-images/langgraphjs-api"
NODE_MAJOR=20
TAG=

usage() { echo "usage: $0 [--node-version 20] [--tag <image>]" >&2; exit 2; }
log() { printf 'build-base-images: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --node-version) [ $# -ge 2 ] || usage; NODE_MAJOR=$2; shift 2 ;;
    --node-version=*) NODE_MAJOR=${1#*=}; shift ;;
    --tag) [ $# -ge 2 ] || usage; TAG=$2; shift 2 ;;
    --tag=*) TAG=${1#*=}; shift ;;
    -h|--help) sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
[[ "$NODE_MAJOR" =~ ^[0-9]+$ ]] || die "--node-version must be a major version such as 20, not '$NODE_MAJOR'"
TAG=${TAG:-localhost/berth/langgraphjs-api:$NODE_MAJOR}

# Several callers (test files running side by side, CI) may ask at once: one builds, the
# others wait and then find the image up to date.
LOCK="${TMPDIR:-/tmp}/berth-base-image-$(printf '%s' "$TAG" | sha256sum | cut -c1-16).lock"
exec 9>"$LOCK"
flock 9

# buildah and podman share storage as root, so the image is visible to `podman run` afterwards.
if [ -z "${CONTAINERS_CONF:-}" ] && [ -f /etc/berth/containers.conf ]; then
  export CONTAINERS_CONF=/etc/berth/containers.conf
fi

BUSYBOX=${BUSYBOX:-/bin/busybox}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
command -v buildah >/dev/null 2>&1 || die "buildah is not installed; run scripts/setup-containers.sh"
[ -x "$BUSYBOX" ] || die "$BUSYBOX is missing; run scripts/setup-containers.sh (busybox-static)"
if ldd "$BUSYBOX" >/dev/null 2>&1; then die "$BUSYBOX is dynamically linked; install busybox-static"; fi
[ -s "$CA_BUNDLE" ] || die "the CA bundle $CA_BUNDLE is missing; install ca-certificates (npm in the image needs it)"

NODE_BIN=$(command -v node || true)
[ -n "$NODE_BIN" ] || die "node is not on PATH; the image carries the host's Node.js $NODE_MAJOR"
NODE_BIN=$(readlink -f "$NODE_BIN")
NODE_VERSION=$("$NODE_BIN" --version)
NODE_VERSION=${NODE_VERSION#v}
if [ "${NODE_VERSION%%.*}" != "$NODE_MAJOR" ]; then
  die "the host's node is $NODE_VERSION, but --node-version is $NODE_MAJOR: the image carries the host's node binary, so build on a host with Node.js $NODE_MAJOR (or pass --node-version ${NODE_VERSION%%.*})"
fi
NPM_DIR=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)
[ -f "$NPM_DIR/package.json" ] || die "cannot find npm's package directory next to the host's npm"
NPM_VERSION=$("$NODE_BIN" -p "require('$NPM_DIR/package.json').version")
API_VERSION=$("$NODE_BIN" -p "require('$INPUTS/package.json').dependencies['@langchain/langgraph-api']")
# Shared libraries the node binary loads, the dynamic loader included (absolute paths only).
mapfile -t LIBS < <(ldd "$NODE_BIN" | grep -o '/[^ ]*' | sort -u)

# Everything the image is made of; editing this script or its inputs rebuilds too.
FINGERPRINT=$( {
  sha256sum "$NODE_BIN" "$BUSYBOX" "$CA_BUNDLE" "${LIBS[@]}" "${BASH_SOURCE[0]}" "$INPUTS"/* | cut -d' ' -f1
  cat "$(dirname "$NPM_DIR")/corepack/package.json" 2>/dev/null | sha256sum | cut -d' ' -f1
  printf '%s\n' "$NODE_MAJOR" "$NPM_VERSION" "${LIBS[@]}"
} | sha256sum | cut -d' ' -f1)
# Berth adds the `:<node version>` tag itself, as the LangGraph CLI does.
use_hint() { log "to build JavaScript agents on it, start Berth with BERTH_BASE_IMAGE_NODE=${TAG%:*}"; }
existing=$(buildah inspect --type image --format '{{index .ImageAnnotations "berth.base-image.fingerprint"}}' "$TAG" 2>/dev/null || true)
if [ "$existing" = "$FINGERPRINT" ]; then
  log "$TAG is up to date (node $NODE_VERSION, @langchain/langgraph-api $API_VERSION)"
  use_hint
  exit 0
fi
previous=$(buildah inspect --type image --format '{{.FromImageID}}' "$TAG" 2>/dev/null || true)

STAGE=$(mktemp -d)
CTR=
cleanup() {
  rm -rf "$STAGE"
  if [ -n "$CTR" ]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
ROOT="$STAGE/rootfs"
started=$(date +%s)

# A merged-/usr layout like the host's, so the paths ldd prints (and the loader path in
# node's ELF header) resolve unchanged.
mkdir -p "$ROOT"/usr/{bin,lib,lib64,sbin} "$ROOT"/{etc/ssl/certs,tmp,root,deps,api/langgraph_api/js}
ln -s usr/bin "$ROOT/bin"; ln -s usr/lib "$ROOT/lib"; ln -s usr/lib64 "$ROOT/lib64"; ln -s usr/sbin "$ROOT/sbin"
chmod 1777 "$ROOT/tmp"
chmod 0700 "$ROOT/root"

cp "$NODE_BIN" "$ROOT/usr/bin/node"
for lib in "${LIBS[@]}"; do
  mkdir -p "$ROOT$(dirname "$lib")"
  cp -L "$lib" "$ROOT$lib"
done
mkdir -p "$ROOT/usr/lib/node_modules"
cp -a "$NPM_DIR" "$ROOT/usr/lib/node_modules/"
NPM_NAME=$(basename "$NPM_DIR")
ln -s "../lib/node_modules/$NPM_NAME/bin/npm-cli.js" "$ROOT/usr/bin/npm"
ln -s "../lib/node_modules/$NPM_NAME/bin/npx-cli.js" "$ROOT/usr/bin/npx"
ln -s /api/node_modules/tsx/dist/cli.mjs "$ROOT/usr/bin/tsx"
# yarn and pnpm through corepack, for the `yarn install --frozen-lockfile` / `pnpm i
# --frozen-lockfile` the CLI writes for projects with those lock files. Corepack fetches
# them from the npm registry on first use.
COREPACK_DIR=$(dirname "$NPM_DIR")/corepack
if [ -f "$COREPACK_DIR/dist/corepack.js" ]; then
  cp -a "$COREPACK_DIR" "$ROOT/usr/lib/node_modules/"
  for tool in corepack yarn yarnpkg pnpm pnpx; do ln -s "../lib/node_modules/corepack/dist/$tool.js" "$ROOT/usr/bin/$tool"; done
else
  log "corepack is not next to the host's npm; the image will have no yarn or pnpm"
fi

cp "$BUSYBOX" "$ROOT/usr/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  # Never shadow node, npm or tsx.
  [ -e "$ROOT/usr/bin/$applet" ] || [ -L "$ROOT/usr/bin/$applet" ] || ln -s busybox "$ROOT/usr/bin/$applet"
done

cp "$CA_BUNDLE" "$ROOT/etc/ssl/certs/ca-certificates.crt"
# npm's global config: ${prefix}/etc/npmrc, the prefix being /usr for /usr/bin/node.
mkdir -p "$ROOT/usr/etc"
printf '%s\n' 'cafile=/etc/ssl/certs/ca-certificates.crt' 'update-notifier=false' 'fund=false' 'audit=false' >"$ROOT/usr/etc/npmrc"
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$ROOT/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$ROOT/etc/group"
# glibc's default without this file asks DNS before /etc/hosts.
printf '%s\n' 'hosts: files dns' >"$ROOT/etc/nsswitch.conf"

# The API server, installed with the host's npm (and the host's registry settings) so the
# build needs no network inside a container. No lock file: the reachable registry lacks
# some optional platform packages, which makes `npm ci` refuse lock files written here.
cp "$INPUTS/package.json" "$ROOT/api/package.json"
log "installing @langchain/langgraph-api $API_VERSION into /api"
(cd "$ROOT/api" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
# The server imports two packages' package.json without `with { type: "json" }`, which only
# tsx accepts; without tsx (graphs compiled at build, see prebuilt.mjs) the version check then
# warns that every package is 0.0.0 and /info has no langgraph_js_version. Add the attribute
# (understood with tsx too); a pinned server version whose files differ fails the build here.
add_json_attribute() {
  local file="$ROOT/api/node_modules/@langchain/langgraph-api/dist/$1" from=$2
  [ "$(grep -cF "$from" "$file" 2>/dev/null)" = 1 ] || die "$file no longer has '$from' once; review the JSON-import fix for this @langchain/langgraph-api version"
  local to="${from%)}, { with: { type: \"json\" } })"
  FROM=$from TO=$to "$NODE_BIN" -e 'const fs = require("node:fs"); const [file] = process.argv.slice(1);
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(process.env.FROM, () => process.env.TO));' "$file"
}
add_json_attribute semver/index.mjs 'await import(`${name}/package.json`)'
add_json_attribute api/meta.mjs 'await import("@langchain/langgraph/package.json")'
# The server bundled into a few files (bundle-server.mjs), with the image's own esbuild run by
# the host's node, before the copy into the image.
cp "$INPUTS/bundle-server.mjs" "$ROOT/api/"
(cd "$ROOT/api" && "$NODE_BIN" bundle-server.mjs >&2) || die "bundling the agent server failed; see the output above"
rm "$ROOT/api/bundle-server.mjs"
cp "$INPUTS/entrypoint.mjs" "$INPUTS/typescript-loader.mjs" "$INPUTS/prebuilt.mjs" "$ROOT/api/"
cp "$INPUTS/build.mts" "$INPUTS/prebuilt-graphs.mts" "$ROOT/api/langgraph_api/js/"

CTR=$(buildah from --quiet scratch)
buildah copy --quiet "$CTR" "$ROOT" / >/dev/null
CA_PATH=/etc/ssl/certs/ca-certificates.crt
buildah config \
  --env PATH=/usr/local/bin:/usr/bin:/bin \
  --env HOME=/root \
  --env NODE_VERSION="$NODE_VERSION" \
  --env NODE_EXTRA_CA_CERTS="$CA_PATH" \
  --env SSL_CERT_FILE="$CA_PATH" \
  --env PORT=8000 \
  --env LOG_JSON=true \
  --env LOG_LEVEL=info \
  --env COREPACK_ENABLE_DOWNLOAD_PROMPT=0 \
  --env COREPACK_DEFAULT_TO_LATEST=0 \
  --workingdir /deps \
  --port 8000 \
  --annotation "berth.base-image.fingerprint=$FINGERPRINT" \
  --label "org.opencontainers.image.title=Berth LangGraph.js agent server base" \
  --label "berth.base-image=langgraphjs-api" \
  --label "berth.node-version=$NODE_VERSION" \
  --label "berth.langgraph-api-version=$API_VERSION" \
  --entrypoint '["/usr/bin/node", "--import", "/api/typescript-loader.mjs", "/api/entrypoint.mjs"]' \
  --cmd '' \
  "$CTR"

# Smoke test inside the image: the loader and libraries, npm (via /usr/bin/env), the CA
# setting, and a TypeScript module loaded the way the entrypoint loads graphs.
smoke='set -e; BUNDLE=/api/node_modules/@langchain/langgraph-api/berth-bundle/server; node --version >/dev/null; npm --version >/dev/null; test "$(npm config get cafile)" = /etc/ssl/certs/ca-certificates.crt
printf "const answer: number = 42;\nexport const graph = answer;\n" > /tmp/smoke.ts
printf "const m = await import(\"/tmp/smoke.ts\");\nif (m.graph !== 42) throw new Error(\"a TypeScript module did not load\");\nconst { startServer } = await import(\"$BUNDLE/server.mjs\");\nif (typeof startServer !== \"function\") throw new Error(\"the server bundle has no startServer\");\n" > /api/smoke.mjs
node --import /api/typescript-loader.mjs /api/smoke.mjs
mkdir /tmp/smoke && cd /tmp/smoke && mv /tmp/smoke.ts . && export LANGSERVE_GRAPHS="{\"smoke\":\"./smoke.ts:graph\"}"
tsx /api/langgraph_api/js/build.mts >/dev/null
printf "const { prebuilt } = await import(\"/api/prebuilt.mjs\");\nif (\"why\" in prebuilt) throw new Error(prebuilt.why);\nconst m = await import(prebuilt.graphs.smoke.split(\":\")[0]);\nif (m.graph !== 42) throw new Error(\"a compiled graph did not load\");\nconst { GRAPH_SPEC } = await import(\"$BUNDLE/load.mjs\");\nif (typeof GRAPH_SPEC !== \"object\") throw new Error(\"the server keeps no GRAPH_SPEC, which entrypoint.mjs corrects\");\n" > /api/smoke.mjs
node /api/smoke.mjs
cd / && rm -rf /tmp/smoke.ts /tmp/smoke /api/smoke.mjs /api/prebuilt-graphs.json /root/.npm'
if ! buildah run --isolation chroot "$CTR" -- /bin/sh -c "$smoke" >&2; then
  die "the image failed its smoke test (node, npm or the API server does not load inside it); see the output above"
fi

buildah commit --quiet --rm "$CTR" "$TAG" >/dev/null
CTR=
# The replaced build is now untagged; drop it unless a container still uses it.
if [ -n "$previous" ]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi
log "built $TAG (node $NODE_VERSION, npm $NPM_VERSION, @langchain/langgraph-api $API_VERSION) in $(( $(date +%s) - started )) s"
use_hint
