"""vipu-server's command line: every flag, its default and its help. Why apart from app.py: what the controller
takes is read (and tested against deploy/'s unit and manifest command lines) without building a server."""

from __future__ import annotations

import argparse
import math
import re
import socket
from pathlib import Path

import platformdirs

from vipu import __version__
from vipu.hardware.pod_files import PRESETS
from vipu.control.running_config import value
from vipu.control.startup import WRITE_TIMEOUT_S
from vipu.server import log_format
from vipu.server.calls_in_flight import CALLS_PER_IPU, CALLS_PER_RUN, MAX_DEVICE_THREADS, SPARE_THREADS
from vipu.workers.fleet import DEFAULT_BUNDLE, WATCH_S, bundle_text

DEFAULT_PORT = 8090  # V-IPU's user endpoint
DEFAULT_METRICS_PORT = 9105
# Why so few: every RPC runs Python under one GIL, and the queue's RPCs under one lock, so more threads only add
# contention: bench/bench_submit.py prints submissions/s with 3 and with 8 (with 8 clients, 3 threads serve more).
# More help only when RPCs wait on something outside the process (Ray), so the flag is there.
DEFAULT_RPC_THREADS = 3
MAX_TIME_SCALE = 1000.0  # --modelled-time-scale: slower than the real Pod, but not so slow a job never ends
# How long a thread that wants the GIL waits before the running one must hand it over (Python's default: 5 ms). A
# submission hands the GIL back and forth several times (gRPC, SQLite), so beside a long listing each handover cost
# it the whole default interval: bench/bench_reads.py measured submissions at 19% of their rate without a lister.

def default_state_dir() -> Path:
    return platformdirs.user_data_path("vipu-sim") / "state"


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """'8G', '512MiB', '1073741824' -> bytes (binary units); ValueError naming the fix."""
    match = _SIZE.fullmatch(text.strip())
    nbytes = int(float(match.group(1)) * _UNITS[match.group(2).upper()]) if match else 0
    if nbytes < 1:  # (0.5 is above 0, but no whole byte: a budget that refuses every put)
        raise ValueError(f"{text!r} is not a size; give bytes above 0, e.g. 8G, 512M or 1073741824")
    return nbytes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vipu-server", description="The vipu-sim V-IPU controller (gRPC).")
    parser.add_argument("--pod", default="bow-pod64", help=f"a preset ({', '.join(PRESETS)}) or a pod config file")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on; 0 picks a free one")
    parser.add_argument("--advertise-host", default=None, metavar="HOST",
                        help="the address jobs are given to reach this controller (IPUOF_VIPU_API_HOST); default"
                             " --host, or this machine's host name when --host is a wildcard such as 0.0.0.0")
    parser.add_argument("--state-dir", type=Path, default=None, help=f"where state is kept (default {default_state_dir()})")
    parser.add_argument("--metrics-host", default="127.0.0.1", help="address of the Prometheus endpoint")
    parser.add_argument("--metrics-port", type=int, default=DEFAULT_METRICS_PORT,
                        help="port of /metrics (default 9105; 0 picks a free one; -1 turns it off)")
    parser.add_argument("--secure", action="store_true",
                        help="require an access key on every request (the first start writes an admin key)")
    parser.add_argument("--rate-limit", type=float, default=0.0, metavar="PER_SECOND",
                        help="requests a second each user may send, on average (Slurm's rl_refill_rate; 0, the"
                             " default: no limit); more are refused RESOURCE_EXHAUSTED with when to retry")
    parser.add_argument("--rate-limit-burst", type=int, default=30, metavar="N",
                        help="requests a user may send at once before --rate-limit applies (rl_bucket_size; 30)")
    parser.add_argument("--metrics-open", action="store_true",
                        help="under --secure, serve /metrics without a key (it names every user's jobs and"
                             " partitions); by default it then needs an admin's key, as a bearer token")
    parser.add_argument("--quarantine-bad-records", action="store_true",
                        help="move stored records that do not load into the database's quarantine table (kept for"
                             " inspection) and start without them, and rebuild a database whose job history has"
                             " damaged pages from its readable rows (the damaged file kept beside it); without it"
                             " such a start is refused naming them")
    parser.add_argument("--accept-empty-state", action="store_true",
                        help="start on a database that is empty, missing, another state's, lacks the records"
                             " every start writes or a table (made again, empty), although the folder held one (what"
                             " is lost stays lost; job ids start again after the highest the database still holds)")
    parser.add_argument("--output-dir", action="append", type=Path, default=[], metavar="DIR",
                        help="a folder the controller may write built-in workloads' output files under, instead of"
                             " the directory each `vipu submit` ran in (repeatable; the state folder's job-output"
                             " folder is always allowed)")
    parser.add_argument("--accept-lost-log", action="store_true",
                        help="start on a database whose -wal file is gone or emptied after a crash: the changes it"
                             " held are lost and job ids may be handed out again (implies --accept-empty-state)")
    parser.add_argument("--trust-users", action="store_true",
                        help="with --secure, keep the users of a state served without --secure since they were made"
                             " (anyone could then make or change them, admins included): check them first")
    parser.add_argument("--insecure-ignore-access-keys", action="store_true",
                        help="start without --secure on a state served with --secure before: anyone may then act"
                             " as any user, admins included")
    parser.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate chain: serve over TLS")
    parser.add_argument("--tls-key", type=Path, default=None, help="PEM private key for --tls-cert")
    parser.add_argument("--ray", "--ray-address", dest="ray", default="local", metavar="RAY",
                        help="machine actors: local (start a local Ray with the controller, before it listens; a"
                             " machine's actor starts when a job first needs it), off, or the address of a Ray cluster"
                             " to attach to (e.g. 10.0.0.5:6379 or auto)")
    parser.add_argument("--ray-wait", type=float, default=0.0, metavar="SECONDS",
                        help="with --ray HOST:PORT, wait this long for the Ray head to answer before giving up"
                             " (default 0: at once); for a controller started beside its head (systemd, KubeRay)")
    parser.add_argument("--machine-bundle", default=None,
                        help="what each machine actor reserves on a Ray node, e.g. ipu_host=1 to spread machines over"
                             " nodes that advertise an ipu_host resource (default CPU=0.01)")
    parser.add_argument("--health-check-interval", type=float, default=WATCH_S, metavar="SECONDS",
                        help=f"how often machine actors are checked (default {WATCH_S:g}); a machine found dead or"
                             " restarted has its IPUs marked failed and its jobs end NODE_FAIL (a job whose work"
                             " loses a machine finds out at once)")
    parser.add_argument("--kill-wait", type=float, default=30.0, metavar="SECONDS",
                        help="Slurm's KillWait: a program that a cancel or its time limit stops gets SIGTERM, and"
                             " SIGKILL this long after (default 30; 0 to 3600)")
    parser.add_argument("--write-timeout", type=float, default=WRITE_TIMEOUT_S, metavar="SECONDS",
                        help=f"a change waits this long for the state store's disk (default {WRITE_TIMEOUT_S:g}; 0.1"
                             " to 3600), then answers UNAVAILABLE and health says NOT_SERVING until the disk"
                             " answers; a stop waits as long for it")
    parser.add_argument("--modelled-time-scale", type=float, default=1.0, metavar="X",
                        help="a modelled training job (execute: false) holds its partition for steps x the"
                             " planner's predicted step time x X (default 1: as long as the real Pod would; e.g."
                             f" 0.001 to replay a day in under 2 minutes; above 0, at most {MAX_TIME_SCALE:g})")
    parser.add_argument("--device-port", type=int, default=0,
                        help="port of the DeviceService, through which users' programs (vipu.sdk) reach their"
                             " partitions' IPUs (VIPU_DEVICE_ADDRESS); 0 (default) picks a free one, -1 turns it off")
    parser.add_argument("--device-threads", type=int, default=None, metavar="N",
                        help=f"threads serving the DeviceService (1 to {MAX_DEVICE_THREADS}; default"
                             f" {CALLS_PER_IPU + CALLS_PER_RUN} per IPU of the Pod + {SPARE_THREADS}, at most"
                             f" {MAX_DEVICE_THREADS}, started as"
                             f" needed): every call of a running program that waits for another instance holds one;"
                             f" a run may have {CALLS_PER_IPU} calls in flight per IPU of its partition +"
                             f" {CALLS_PER_RUN}, at most half of them (more are refused RESOURCE_EXHAUSTED), so the"
                             " default serves every run's at once")
    parser.add_argument("--tensor-memory", default=None, metavar="BYTES",
                        help="the controller's host memory for the tensors programs keep on their IPUs and in"
                             " Streaming Memory, over every run (e.g. 8G; default a quarter of this machine's RAM, or"
                             " of the controller's cgroup memory limit if lower); a put past it is refused"
                             " RESOURCE_EXHAUSTED, first come first served, whatever the emulated capacity left")
    parser.add_argument("--rpc-threads", type=int, default=DEFAULT_RPC_THREADS,
                        help=f"threads serving gRPC calls (default {DEFAULT_RPC_THREADS}; 1 to 64)")
    parser.add_argument("--policy", default=None, help="scheduling policy: backfill (default), fifo, priority, sjf")
    parser.add_argument("--scheduler-config", default=None, help="a YAML SchedulerConfig (QOS, weights, limits)")
    parser.add_argument("--policy-file", default=None, metavar="FILE",
                        help="a Python file defining schedule(request) and ORDER (docs/traces.md): it schedules the"
                        " queue, and --policy (backfill) decides any cycle it fails")
    parser.add_argument("--log-format", choices=log_format.FORMATS, default="auto",
                        help="the log on stderr: text, or json (one object a line: docs/logging.md); auto (default):"
                             " text on a terminal, json elsewhere (a systemd unit, a container)")
    parser.add_argument("--log-level", choices=log_format.LEVELS, default="info",
                        help="info (default): job and partition lifecycle events, warnings, errors; debug: also a"
                             " line for every RPC")
    parser.add_argument("--version", action="version", version=f"vipu-server {__version__}")
    return parser.parse_args(argv)


def served(args: argparse.Namespace, port: int, metrics: str, device_threads: int | None) -> dict[str, object]:
    """What the flags set that no part of the control plane holds, by the key `vipu show config` gives it
    (control/running_config.py); `device_threads` as the DeviceService was built with (None: not served), since
    without --device-threads the flag's None is not what runs. No secret: the TLS key's file and access keys are
    not named."""
    return {
        "SchedulerConfigFile": args.scheduler_config, "ListenAddress": f"{args.host}:{port}", "Metrics": metrics,
        "RpcThreads": args.rpc_threads, "RateLimit": args.rate_limit or None,
        "DeviceThreads": device_threads if device_threads is not None else "off (--device-port -1)",
        "RateLimitBurst": args.rate_limit_burst if args.rate_limit else None,
        "TlsCertificate": str(args.tls_cert) if args.tls_cert else None, "Ray": args.ray,
        "RayWait": value(args.ray_wait, seconds=True) if args.ray_wait else None,
        "MachineBundle": None if args.ray == "off" else bundle_text(parse_bundle(args.machine_bundle)
                                                                   if args.machine_bundle else DEFAULT_BUNDLE),
        "HealthCheckInterval": value(args.health_check_interval, seconds=True),
        "WriteTimeout": value(args.write_timeout, seconds=True),
        "LogFormat": args.log_format, "LogLevel": args.log_level, "QuarantineBadRecords": args.quarantine_bad_records,
    }


def advertised_host(host: str, advertise: str | None) -> str:
    """The address jobs dial (IPUOF_VIPU_API_HOST). A wildcard listen address reaches nobody: a job given 0.0.0.0
    would dial its own host, so the machine's name stands in for it unless --advertise-host says otherwise."""
    if advertise:
        return advertise
    return socket.gethostname() if host in WILDCARDS else host


WILDCARDS = ("0.0.0.0", "::", "[::]", "")


def parse_bundle(text: str) -> dict[str, float]:
    """`ipu_host=1,CPU=0.01` -> {"ipu_host": 1.0, "CPU": 0.01}."""
    bundle = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, amount = part.partition("=")
        try:
            number = float(amount)
        except ValueError:
            number = 0.0
        if not sep or not name.strip() or not 0 < number < math.inf:  # (nan too: no comparison holds)
            raise ValueError(f"{part!r} is not RESOURCE=AMOUNT with a positive, finite amount; give pairs such as"
                             " ipu_host=1,CPU=0.01")
        bundle[name.strip()] = number
    if not bundle:
        raise ValueError("give at least one RESOURCE=AMOUNT pair")
    return bundle
