#!/usr/bin/env bash
# Lists what test runs must not leave in this machine's container store, one per line:
#   container <name>   every container named berth-* (deployments, the listener's, test ones)
#                      and the paused standbys of replaced revisions (berth-*.standby-<expiry>): a test that
#                      replaces a revision with standbys on removes them (teardown) like its other containers
#   image <name>       every image of a deployment: built here (localhost/berth/<workspace>/
#                      <deployment>:<revision>, and localhost/berth/<name>:<revision> from
#                      before workspaces) or pulled from a registry on this machine
# The base images CI builds once (localhost/berth/langgraphjs-api, localhost/berth/node) and
# the tests' shared fixture images (localhost/berth-test-agent and the like) are not listed.
#
#   bash scripts/test-leftovers.sh                 list everything
#   bash scripts/test-leftovers.sh --except FILE   only what FILE (an earlier listing) lacks
# `.ci/run` takes a listing before the tests and fails when the second one is not empty.
set -euo pipefail

now=$(mktemp)
trap 'rm -f "$now"' EXIT
podman ps -a --format '{{.Names}}' | awk '/^berth-/ { print "container " $0 }' | sort >"$now"
podman images --noheading --format '{{.Repository}}:{{.Tag}}' |
  awk '/^localhost\/berth\// && !/^localhost\/berth\/(langgraphjs-api|node):/ { print "image " $0; next }
       /^(127\.0\.0\.1|localhost):[0-9]+\// { print "image " $0 }' |
  sort >>"$now"
if [ "${1:-}" = "--except" ]; then
  sort "$2" | comm -23 <(sort "$now") -
else
  sort "$now"
fi
