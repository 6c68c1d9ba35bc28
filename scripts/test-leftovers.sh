#!/usr/bin/env bash
# Lists what test runs must not leave in this machine's container store, one per line:
#   container <name>   every container named berth-* (deployments, the listener's, test ones)
#                      and the paused standbys of replaced revisions (berth-*.standby-<expiry>): a test that
#                      replaces a revision with standbys on removes them (teardown) like its other containers
#   image <name>       every image of a deployment: built here (localhost/berth/<workspace>/
#                      <deployment>:<revision>, and localhost/berth/<name>:<revision> from
#                      before workspaces) or pulled from a registry on this machine
#   mount <dir>        every file system mounted under a build directory of the tests
#                      (${TMPDIR:-/tmp}/berth-builds-*, test/support/build-sandbox.ts) or under
#                      the default one, /var/lib/berth-build, which tests must not use: the
#                      loop-mounted disks of workspaces (BERTH_BUILD_DISK_MB), which the test
#                      harness unmounts when it removes the directory
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
# findmnt writes a space in a path as \x20: the prefixes below have none.
findmnt --raw --noheadings --output TARGET |
  awk -v tests="${TMPDIR:-/tmp}/berth-builds-" 'index($0, tests) == 1 || index($0, "/var/lib/berth-build/") == 1 { print "mount " $0 }' |
  sort >>"$now"
if [ "${1:-}" = "--except" ]; then
  sort "$2" | comm -23 <(sort "$now") -
else
  sort "$now"
fi
