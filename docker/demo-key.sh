#!/bin/sh
# Compose service `demo-key`: once the server has created the demo organization, issue one API
# key of its admin for the agent's registration and leave it in the shared volume (0600). Runs
# the operators' CLI on the same PostgreSQL as the server (safe while it runs). Idempotent.
set -eu
out=/var/lib/rampart-bootstrap/admin-key
if [ -s "$out" ]; then
  echo "demo-key: $out exists"
  exit 0
fi
node apps/server/dist/cli.mjs key create --username admin@demo.rampart.local --label "compose agent registration" |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => require("node:fs").writeFileSync(process.argv[1], `${JSON.parse(s).key}\n`, { mode: 0o600 }))' "$out"
echo "demo-key: wrote $out"
