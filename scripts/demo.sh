#!/usr/bin/env bash
# `make demo`: start the V-IPU controller on its embedded default (a bow-pod64, SQLite state under .demo/) and
# drive it with the CLI the way a user would. KEEP=1 leaves the controller running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
STATE=.demo/state
rm -rf "$STATE" && mkdir -p .demo

PORT=$($BIN/python - <<'PY'
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 8090)); print(8090)   # V-IPU's port, when it is free
except OSError:
    s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])
finally:
    s.close()
PY
)
export VIPU_CLI_API_HOST=127.0.0.1 VIPU_CLI_API_PORT=$PORT

$BIN/vipu-server --pod bow-pod64 --port "$PORT" --state-dir "$STATE" > .demo/server.out 2> .demo/server.log &
SERVER=$!
stop() { if [ -z "${KEEP:-}" ]; then kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; fi; }
trap stop EXIT
for _ in $(seq 100); do grep -q listening .demo/server.out 2>/dev/null && break; sleep 0.1; done
cat .demo/server.out

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step $BIN/vipu --server-version
step $BIN/vipu create partition train --size 16
step $BIN/vipu create partition dev --size 4 --num-gcds 2 --reconfigurable
step $BIN/vipu create partition big --size 32
step $BIN/vipu list partitions
step $BIN/vipu list allocations
step $BIN/vipu get partition dev
printf '\n# Bad input is refused with the field and the fix, and nothing is stored:\n'
step $BIN/vipu create partition odd --size 12 || true
step $BIN/vipu create partition more --size 32 || true
step $BIN/vipu remove partition big
step $BIN/vipu create partition more --size 32
printf '\n# Every IPU, its machine, agent and partition (first 12 of 64):\n'
$BIN/vipu list ipus | head -13

printf '\nThe controller kept its state in %s (SQLite, WAL).\n' "$STATE"
if [ -n "${KEEP:-}" ]; then
  printf 'It is still running (pid %s) on 127.0.0.1:%s: try `%s/vipu list partitions`.\n' "$SERVER" "$PORT" "$BIN"
else
  printf 'Run it yourself: %s/vipu-server   (then %s/vipu list partitions in another shell)\n' "$BIN" "$BIN"
fi
