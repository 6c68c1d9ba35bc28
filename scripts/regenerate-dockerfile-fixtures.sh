#!/usr/bin/env bash
# Regenerates the golden files under test/fixtures/dockerfile/<case>/ with the real
# LangGraph CLI (`langgraph dockerfile`), taken from the mirrored langgraph repository.
# A tool for maintainers, not part of CI: run it after updating the mirror, then review the
# diff and make Berth's generator match (test/build/dockerfile.test.ts compares them).
#
# Each case is a small project. Its langgraph.json is at the case's root unless case.json
# says {"config": "apps/agent/langgraph.json"}; extra CLI flags come from case.json "args".
# Writes expected.Dockerfile, and with --add-docker-compose also expected.dockerignore,
# expected.docker-compose.yml and expected.env.
#
# Needs Debian's python3 with the CLI's dependencies:
#   apt-get install -y python3-click python3-httpx python3-dotenv python3-pathspec python3-typing-extensions
#
# Usage: scripts/regenerate-dockerfile-fixtures.sh [case ...]   (default: every case)
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
fixtures="$repo_root/test/fixtures/dockerfile"
mirror=${LANGGRAPH_MIRROR:-/work/.mirror/langchain-ai+langgraph/repo}
python=/usr/bin/python3 # not a pyenv shim: the apt packages above belong to this one

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

git -C "$mirror" archive HEAD libs/cli | tar -x -C "$work"
echo "LangGraph CLI from $(git -C "$mirror" rev-parse HEAD)"

# --add-docker-compose asks `docker info` for the Docker and Compose versions. This stand-in
# answers as Docker 25 with the Compose plugin, so the compose file does not depend on the
# machine (and no daemon is needed).
mkdir -p "$work/bin"
cat >"$work/bin/docker" <<'EOF'
#!/bin/sh
if [ "$1" = info ]; then
  echo '{"ServerVersion": "25.0.0", "ClientInfo": {"Plugins": [{"Name": "compose", "Version": "v2.24.0"}]}}'
  exit 0
fi
echo "docker stand-in: only 'docker info' is answered" >&2
exit 1
EOF
chmod +x "$work/bin/docker"

case_field() { # case_field <case.json> <field> <default>: prints a string or one array item per line
  node -e '
    const fs = require("fs");
    const [file, field, fallback] = process.argv.slice(1);
    const value = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8"))[field] : undefined;
    const items = value === undefined ? (fallback === "" ? [] : [fallback]) : [].concat(value);
    for (const item of items) console.log(item);
  ' "$@"
}

if [ $# -gt 0 ]; then cases=("$@"); else mapfile -t cases < <(cd "$fixtures" && ls -d */ | tr -d /); fi

for name in "${cases[@]}"; do
  dir="$fixtures/$name"
  config=$(case_field "$dir/case.json" config langgraph.json)
  mapfile -t args < <(case_field "$dir/case.json" args "")
  out="$work/out/$name"
  mkdir -p "$out"
  echo "== $name: langgraph dockerfile -c $config ${args[*]:-}"
  # No analytics: the CLI would otherwise post each command to its telemetry endpoint.
  (cd "$dir" && PATH="$work/bin:$PATH" PYTHONPATH="$work/libs/cli" PYTHONUTF8=1 LANGGRAPH_CLI_NO_ANALYTICS=1 \
    "$python" -m langgraph_cli dockerfile -c "$config" "${args[@]}" "$out/Dockerfile" >"$out/cli.log" 2>&1) || {
    cat "$out/cli.log" >&2
    exit 1
  }
  cp "$out/Dockerfile" "$dir/expected.Dockerfile"
  for extra in .dockerignore docker-compose.yml .env; do
    if [ -f "$out/$extra" ]; then cp "$out/$extra" "$dir/expected.${extra#.}"; fi
  done
done
echo "Regenerated ${#cases[@]} case(s) under $fixtures"
