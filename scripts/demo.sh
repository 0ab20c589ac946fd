#!/usr/bin/env bash
# `make demo`: start the V-IPU controller on its embedded default (a bow-pod64, SQLite state under .demo/) and
# drive it with the CLI the way a user would. KEEP=1 leaves the controller running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
STATE=.demo/state
if [ -f .demo/state/spool ]; then  # the last demo's spool in /tmp goes with its state (only the controller's own)
  $BIN/python -c 'import sys; from vipu.jobs.programs.spool import discard; discard(sys.argv[1])' .demo/state || true
fi
rm -rf .demo && mkdir -p .demo  # its job output too: a fresh state numbers jobs from 1 again

free_port() {  # the port asked for when it is free, else any free one
  $BIN/python -c "
import socket, sys
s = socket.socket()
try:
    s.bind(('127.0.0.1', int(sys.argv[1])))
except OSError:
    s.bind(('127.0.0.1', 0))
print(s.getsockname()[1])
s.close()" "$1"
}
start_server() {
  PORT=$(free_port 8090)            # V-IPU's port, when it is free
  METRICS_PORT=$(free_port 9105)
  $BIN/vipu-server --pod bow-pod64 --port "$PORT" --metrics-port "$METRICS_PORT" --state-dir "$STATE" > .demo/server.out 2> .demo/server.log &
  SERVER=$!
}
PROM=
stop() {
  if [ -z "${KEEP:-}" ]; then
    kill "$SERVER" ${PROM:+"$PROM"} 2>/dev/null; wait "$SERVER" 2>/dev/null || true
  fi
}
trap stop EXIT
# it starts a local Ray before it listens: seconds here, longer on a first start or a busy machine. A port found free
# may be taken by another program before the controller binds it: then it starts again on ports found afresh.
printf 'Starting the controller (a local Ray first)...\n'
for attempt in 1 2 3; do
  start_server
  for _ in $(seq 1800); do
    grep -q listening .demo/server.out 2>/dev/null && break 2
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
  done
  # (the metrics port may be the one taken, as both are bound once Ray has started; its refusal has its own words)
  if [ "$attempt" = 3 ] || ! grep -Eq "cannot listen|cannot serve metrics" .demo/server.log; then
    printf 'The controller exited; its log:\n'; cat .demo/server.log; exit 1
  fi
done
export VIPU_CLI_API_HOST=127.0.0.1 VIPU_CLI_API_PORT=$PORT
cat .demo/server.out

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

if [ -n "${PROMETHEUS:-}" ]; then  # PROMETHEUS=1 make demo: also run a real Prometheus scraping this controller
  PROM_BIN=$(bash scripts/install_prometheus.sh)
  PROM_PORT=$(free_port 9090)
  sed -e "s/127.0.0.1:9105/127.0.0.1:$METRICS_PORT/" -e "s#vipu.rules.yml#$PWD/deploy/prometheus/vipu.rules.yml#" \
    deploy/prometheus/prometheus.yml > .demo/prometheus.yml
  "$PROM_BIN/prometheus" --config.file=.demo/prometheus.yml --storage.tsdb.path=.demo/tsdb \
    --web.listen-address="127.0.0.1:$PROM_PORT" > .demo/prometheus.log 2>&1 &
  PROM=$!
  printf 'Prometheus on http://127.0.0.1:%s (scraping the controller every 5 s)\n' "$PROM_PORT"
fi

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
step $BIN/vipu remove partition train
step $BIN/vipu remove partition more
step $BIN/vipu remove partition dev

printf '\n# The Slurm-style queue: each job gets its own partition slurm_<id> when it starts, and gives it back at the end.\n'
# prep runs long enough for the listing below to find big waiting for it, even on a busy machine where each call
# takes seconds; sweep's tasks have a time limit short enough to backfill beside prep without delaying big, two at
# a time (%2), for long enough that the listing finds the rest waiting their turn (JobArrayTaskLimit)
step $BIN/vipu submit --name prep --ipus 16 --time-limit 1m --duration 20s
step $BIN/vipu submit --name big --ipus 64 --time-limit 5m --duration 3s
step $BIN/vipu submit --name sweep --ipus 4 --time-limit 30s --duration 6s --array 0-7%2
step $BIN/vipu submit --name report --ipus 1 --time-limit 1m --duration 1s --dependency afterok:2
sleep 0.5
step $BIN/vipu queue
step $BIN/vipu show job 2
step $BIN/vipu info
printf '\n# ... waiting for the jobs to finish ...\n'
for _ in $(seq 240); do [ -z "$($BIN/vipu queue --no-header)" ] && break; sleep 0.5; done
step $BIN/vipu history

printf '\n# The main job: three small models really train on the emulated IPU-Machines (Ray actors), split as their\n'
printf '# layouts say (data-, pipeline-, tensor-parallel); each reports its loss curve and the step time on the real Pod.\n'
step $BIN/vipu plan examples/tiny_pp.yaml --pod bow-pod64
for kind in dp pp tp; do step $BIN/vipu submit examples/tiny_$kind.yaml; done
step $BIN/vipu queue
step $BIN/vipu top --once
printf '\n# ... training (the first job starts Ray and the machine actors) ...\n'
for _ in $(seq 240); do [ -z "$($BIN/vipu queue --no-header)" ] && break; sleep 0.5; done
for id in $($BIN/vipu history --json | $BIN/python -c "import json,sys; print(' '.join(str(j['id']) for j in json.load(sys.stdin) if j['name'].startswith('tiny-')))"); do
  step $BIN/vipu logs "$id"
done

printf '\n# A program of your own: the same data-parallel training written on the public SDK (vipu.sdk), submitted as a\n'
printf '# batch script; it runs as a real process beside its machines, its tensors and allreduces on the emulated IPUs.\n'
step cat examples/tiny_dp.sh
# its python: this venv's; its output in .demo/, not in the repository
PROGRAM=$(PATH="$PWD/$BIN:$PATH" $BIN/vipu submit --output .demo/slurm-%j.out --parsable examples/tiny_dp.sh)
step $BIN/vipu show job "$PROGRAM"
for _ in $(seq 240); do [ -z "$($BIN/vipu queue --no-header)" ] && break; sleep 0.5; done
step $BIN/vipu logs "$PROGRAM"
step $BIN/vipu history

if [ -n "${TRACE:-}" ]; then  # TRACE=FILE make demo: a real trace (docs/traces.md says where they are)
  printf '\n# The same scheduler replays %s in virtual time, without Ray:\n' "$TRACE"
  step $BIN/vipu simulate --trace "$TRACE" --pod bow-pod256 --policy fifo,backfill --plot .demo/replay.png
else
  printf '\n# The same scheduler replays, in virtual time and without Ray, a trace it generates (seeded, GPU-cluster-like;\n'
  printf '# TRACE=FILE make demo replays a real one), against fifo, backfill and a policy file of its own:\n'
  step cat examples/policies/smallest_first.py
  step $BIN/vipu simulate --synthetic 2000 --seed 1 --pod bow-pod256 --policy fifo,backfill \
    --policy-file examples/policies/smallest_first.py --jobs-out .demo/replay-jobs.csv --plot .demo/replay.png
fi

printf '\nThe controller kept its state in %s (SQLite, WAL).\n' "$STATE"
printf 'Prometheus: a controller serves its metrics while it runs, this one on http://127.0.0.1:%s/metrics\n  (deploy/prometheus/prometheus.yml scrapes 127.0.0.1:9105; rules and their tests beside it).\n' "$METRICS_PORT"
printf 'A Prometheus of your own: PROMETHEUS=1 make demo, or bash scripts/install_prometheus.sh and\n  .tools/prometheus/usr/bin/prometheus --config.file=deploy/prometheus/prometheus.yml\n'
printf 'Grafana: provision deploy/grafana/provisioning (datasource http://127.0.0.1:9090) and load deploy/grafana/dashboards/*.json\n'
if [ -n "${KEEP:-}" ]; then
  printf 'It is still running (pid %s) on 127.0.0.1:%s: try `VIPU_CLI_API_PORT=%s %s/vipu list partitions`;\n' "$SERVER" "$PORT" "$PORT" "$BIN"
  printf 'stop it with `kill %s` (its state stays in %s for the next start).\n' "$SERVER" "$STATE"
else
  printf 'The demo'"'"'s controller stops now. Run one yourself: %s/vipu-server   (then %s/vipu list partitions in\n  another shell; Ctrl-C or kill stops it), or KEEP=1 make demo to keep this one.\n' "$BIN" "$BIN"
fi
