"""`vipu-server`: the V-IPU controller over gRPC, with health checking and reflection."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import stat
import sqlite3
import sys
import threading
from concurrent import futures
from pathlib import Path

import grpc

from vipu import __version__
from vipu.cli.failure import BAD_INPUT, CONFLICT, EXIT_CODES
from vipu.errors import VipuError
from vipu.metrics import register as register_metrics
from vipu.hardware.pod_files import load_pod
from vipu.scheduler.config import load_scheduler_config
from vipu.server.admin_service import AdminService
from vipu.server.arguments import (DEFAULT_RPC_THREADS, MAX_TIME_SCALE, advertised_host, default_state_dir,
                                   parse_args, parse_bundle, parse_bytes, served)
from vipu.server.calls_in_flight import MAX_DEVICE_THREADS, default_threads
from vipu.server.auth import AuthInterceptor
from vipu.server.device_server import build_device_server
from vipu.server.listen import PortInUse, add_health_and_reflection, bind, check_listen, tls_pair
from vipu.workers.fleet import ray_address_problem, unreachable, wait_until_reachable, waitable
from vipu.server.partition_service import PartitionService
from vipu.server.job_service import JobService
from vipu.control.plane import ControlPlane
from vipu.control.long_lived import keep_long_lived
from vipu.control.output_files import refuse_linked_output
from vipu.control.running_config import scheduling
from vipu.control.queue_rebuild import recover_stored
from vipu.control.startup import (ADMIN_KEY, DATABASE, STATE_MARKER, foreign_admin_key, open_plane,
                                  refuse_missing_database)
from vipu.server.status import add_servicer
from vipu.metrics import endpoint as metrics_endpoint
from vipu.server import log_format
from vipu.server.rate_limit import Buckets, RateLimitInterceptor
from vipu.server.request_log import RequestLog
from vipu.server.state_dir import claim, private_database, read_private, withdraw, write_private
from vipu.server.stopping import StopSignals, stop_serving
from vipu.server.working_dir import working_dir_problem
from vipu.store_faults import cannot_write
from vipu.validation import MAX_REQUEST_BYTES
from vipu.v1 import admin_pb2, admin_pb2_grpc, job_pb2, job_pb2_grpc, partition_pb2, partition_pb2_grpc

SWITCH_INTERVAL_S = 0.0005
SERVICES = (
    partition_pb2.DESCRIPTOR.services_by_name["PartitionService"].full_name,
    admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
    job_pb2.DESCRIPTOR.services_by_name["JobService"].full_name,
)


def build_server(
    plane: ControlPlane, host: str, port: int, workers: int = DEFAULT_RPC_THREADS, tls: tuple[bytes, bytes] | None = None,
    rate_limit: Buckets | None = None,
) -> tuple[grpc.Server, int]:
    """The gRPC server; `tls` is (private key, certificate chain) in PEM for TLS, None for plaintext; `rate_limit`:
    per-user token buckets (None: no limit)."""
    check_listen(host, port)  # first, so a refusal is our one line and not gRPC's log line too
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vipu-rpc"),
        interceptors=[RequestLog(plane)]  # request ids, log lines, metrics
        + ([AuthInterceptor(plane)] if plane.secure else [])
        + ([RateLimitInterceptor(plane, rate_limit)] if rate_limit is not None else []),
        # above the 1 MB spec limit, so an oversized spec gets the domain's message, not a transport error; and no
        # SO_REUSEPORT (gRPC's default on Linux), which let a second controller listen on the same port and take
        # half of the first one's calls
        options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES), ("grpc.so_reuseport", 0)],
    )
    add_servicer(partition_pb2_grpc.add_PartitionServiceServicer_to_server, PartitionService(plane), server)
    add_servicer(admin_pb2_grpc.add_AdminServiceServicer_to_server, AdminService(plane), server)
    add_servicer(job_pb2_grpc.add_JobServiceServicer_to_server, JobService(plane), server)
    plane.watch_store(add_health_and_reflection(server, SERVICES))  # NOT_SERVING while the store cannot write
    bound = bind(server, host, port, tls)
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}: the port is in use or the address is not local")
    return server, bound


def is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def no_ray(address: str, problem: object) -> str:
    """Why the machine actors cannot start, said alike before and after Ray is asked; a VipuError names its own."""
    why = problem.message if isinstance(problem, VipuError) else f"cannot start or reach Ray ({address}): {problem}"
    return f"{why}; use --ray off to run without machine actors"


def bootstrap_admin(plane: ControlPlane, state_dir: Path) -> Path | None:
    """A secure controller with no admin yet creates user 'admin' and writes its key to a 0600 file, once. A file
    whose key no longer opens anything (its user was removed) is deleted, so the denial's hint never points at it."""
    path = Path(state_dir) / ADMIN_KEY
    if plane.admin.has_admin():
        old = read_private(path)
        if old is not None and plane.user_for_key(old.strip()) is None:
            path.unlink()
            print(f"vipu-server: removed {path}: its key belongs to no user any more", file=sys.stderr)
        return None
    if read_private(path) is not None and not plane.admin.has_users():  # (open_plane refuses this first)
        raise foreign_admin_key(state_dir)
    _, key = plane.admin.create_user("admin", admin=True)
    write_private(path, key + "\n")
    return path


def _admin_key(state_dir: Path) -> bool:
    """Whether the folder holds an admin key file, refusing a planted or loose one, and one beside no database (a
    new state has no users: foreign_admin_key), before anything is created in the folder."""
    if read_private(state_dir / ADMIN_KEY) is None:
        return False
    try:
        database = os.lstat(state_dir / DATABASE)
    except FileNotFoundError:
        raise foreign_admin_key(state_dir) from None
    if stat.S_ISREG(database.st_mode) and database.st_size == 0:
        raise foreign_admin_key(state_dir)
    return True  # (anything but a file: private_database refuses it)


def listening_ports(args) -> None:
    """OSError naming the flag and the fix (PortInUse when another process holds the port) unless each port this
    controller listens on can be taken now. Why before the state: a start refused for its port made and initialised
    a new --state-dir, or left an existing one with -wal, -shm and vipu.generation as a crash leaves them."""
    check_listen(args.host, args.port)
    if args.device_port >= 0:
        check_listen(args.host, args.device_port, "--device-port")
    if args.metrics_port >= 0:
        check_listen(args.metrics_host, args.metrics_port, "--metrics-port", "--metrics-host")


def start_machines(plane: ControlPlane, stop: threading.Event, now: threading.Event) -> bool:
    """Start (or attach to) Ray for the machine actors; False if `stop` was set meanwhile (the caller then shuts
    the fleet down). Raises what the start raised.

    Why a thread of its own while the main thread waits: ray.init in the main thread swallowed a stop signal (a
    Ctrl-C in the minute a local Ray takes to start here was lost, and the controller went on to listen). Why the
    stop waits for the start to finish: only a started Ray can be shut down whole, and killing its GCS midway left
    ray.init waiting half a minute for it while holding the GIL. Why before gRPC's threads exist: starting Ray from
    a worker thread of a busy gRPC server left the server unresponsive under load. A second signal (`now`) does
    not wait: Ray's processes are ended and this process exits."""
    done: list[BaseException | None] = []

    def start() -> None:
        try:
            plane.start_machines()
            done.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            done.append(e)
            return
        # Ray's GCS and raylet are killed when the thread that started them ends (Ray sets PR_SET_PDEATHSIG on them)
        threading.Event().wait()

    # Ray warns that it sets no SIGTERM handler outside the main thread: that is the point
    logging.getLogger("ray._private.worker").addFilter(lambda record: "SIGTERM handler" not in record.getMessage())
    threading.Thread(target=start, name="vipu-ray-start", daemon=True).start()
    said = False
    while not done:
        if stop.wait(0.1) and not said:
            print("vipu-server: stopping once Ray has started (it cannot be stopped halfway; signal again to stop"
                  " now)", file=sys.stderr, flush=True)
            said = True
        if now.is_set():
            plane.kill_local_ray()
            print("vipu-server: stopped while starting Ray (its start abandoned); nothing was served",
                  file=sys.stderr, flush=True)
            log_format.stop()
            os._exit(0)  # the start's thread is inside ray.init, which neither returns nor can be interrupted
    if done[0] is not None:
        raise done[0]
    return not stop.is_set()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    log_format.setup(args.log_format, args.log_level)
    if not 0 <= args.port < 65536:
        print(f"vipu-server: error: --port is {args.port}; give 0 to 65535", file=sys.stderr)
        return BAD_INPUT
    if not 0.1 <= args.health_check_interval <= 3600:
        print(f"vipu-server: error: --health-check-interval is {args.health_check_interval:g}; give 0.1 to 3600"
              " seconds", file=sys.stderr)
        return BAD_INPUT
    if not 0 <= args.kill_wait <= 3600:
        print(f"vipu-server: error: --kill-wait is {args.kill_wait:g}; give 0 to 3600 seconds", file=sys.stderr)
        return BAD_INPUT
    if not 0.1 <= args.write_timeout <= 3600:
        print(f"vipu-server: error: --write-timeout is {args.write_timeout:g}; give 0.1 to 3600 seconds",
              file=sys.stderr)
        return BAD_INPUT
    if not (0 < args.modelled_time_scale <= MAX_TIME_SCALE):  # also refuses nan
        print(f"vipu-server: error: --modelled-time-scale is {args.modelled_time_scale:g}; give a factor above 0 and"
              f" at most {MAX_TIME_SCALE:g} (1: modelled jobs take as long as on the real Pod)", file=sys.stderr)
        return BAD_INPUT
    if not 0 <= args.rate_limit <= 1e6 or not 1 <= args.rate_limit_burst <= 1_000_000:
        print(f"vipu-server: error: --rate-limit {args.rate_limit:g} --rate-limit-burst {args.rate_limit_burst}: give"
              " 0 (no limit) to 1000000 requests a second, and a burst of 1 to 1000000", file=sys.stderr)
        return BAD_INPUT
    if not 1 <= args.rpc_threads <= 64:
        print(f"vipu-server: error: --rpc-threads is {args.rpc_threads}; give 1 to 64", file=sys.stderr)
        return BAD_INPUT
    if not -1 <= args.device_port < 65536:
        print(f"vipu-server: error: --device-port is {args.device_port}; give 0 to 65535, or -1 to turn it off",
              file=sys.stderr)
        return BAD_INPUT
    if args.device_threads is not None and not 1 <= args.device_threads <= MAX_DEVICE_THREADS:
        print(f"vipu-server: error: --device-threads is {args.device_threads}; give 1 to {MAX_DEVICE_THREADS}",
              file=sys.stderr)
        return BAD_INPUT
    try:
        tensor_memory = parse_bytes(args.tensor_memory) if args.tensor_memory is not None else None
    except ValueError as e:
        print(f"vipu-server: error: --tensor-memory {e}", file=sys.stderr)
        return BAD_INPUT
    if not -1 <= args.metrics_port < 65536:
        print(f"vipu-server: error: --metrics-port is {args.metrics_port}; give 0 to 65535, or -1 to turn metrics"
              " off", file=sys.stderr)
        return BAD_INPUT
    problem = ray_address_problem(args.ray)
    if problem:
        print(f"vipu-server: error: --ray {args.ray}: {problem}", file=sys.stderr)
        return BAD_INPUT
    if args.ray_wait and (not 0 < args.ray_wait <= 3600 or not waitable(args.ray)):
        print(f"vipu-server: error: --ray-wait {args.ray_wait:g} --ray {args.ray}: give 0 to 3600 seconds, with --ray"
              " HOST:PORT (local starts its own Ray, and auto finds none to wait for)", file=sys.stderr)
        return BAD_INPUT
    for folder in args.output_dir:  # the controller writes jobs' files there: a typo must not pass silently
        why = "an absolute path" if not folder.is_absolute() else None if folder.is_dir() else "an existing folder"
        if why:
            print(f"vipu-server: error: --output-dir {folder} is not {why}; give a folder that exists, as an absolute"
                  " path", file=sys.stderr)
            return BAD_INPUT
    if args.advertise_host is not None and not args.advertise_host.strip():
        print("vipu-server: error: --advertise-host is empty; give the host name or address jobs reach this controller"
              " at, or leave the flag out (default: --host)", file=sys.stderr)
        return BAD_INPUT
    bundle = None
    if args.machine_bundle:
        try:
            bundle = parse_bundle(args.machine_bundle)
        except ValueError as e:
            print(f"vipu-server: error: --machine-bundle {args.machine_bundle!r}: {e}", file=sys.stderr)
            return BAD_INPUT
    # with Ray only: the controller's own import path holds no working directory, and its supervisors start from /
    problem = args.secure and args.ray != "off" and working_dir_problem()
    if problem:  # (working_dir.py says why)
        print(f"vipu-server: error: --secure: {problem}; Ray's workers import Python from the folder the controller"
              " starts in, as its user: start vipu-server in a folder only that user or root may write, e.g. `cd /`",
              file=sys.stderr)
        return BAD_INPUT
    tls, problem = tls_pair(args.tls_cert, args.tls_key)
    if problem:
        print(f"vipu-server: error: {problem}", file=sys.stderr)
        return BAD_INPUT
    try:  # before the state folder is made or opened: a start refused for a port leaves it as it was
        listening_ports(args)
    except OSError as e:
        print(f"vipu-server: error: {e}", file=sys.stderr)
        return CONFLICT if isinstance(e, PortInUse) else BAD_INPUT
    problem = None if args.ray_wait else unreachable(args.ray)  # before the state folder: it is not made then
    if problem:
        print(f"vipu-server: error: {no_ray(args.ray, problem)}", file=sys.stderr)
        return 1
    state_dir = args.state_dir or default_state_dir()
    try:  # every check that reads no state first: a refused start makes nothing in the folder
        config = load_scheduler_config(args.scheduler_config, args.policy, args.policy_file)
        load_pod(args.pod)
        lock = claim(state_dir)  # before the checks that read the state (claim() says why); held till the end
        try:
            refuse_missing_database(state_dir, args.accept_empty_state or args.accept_lost_log)  # before it is made
            refuse_linked_output(Path(state_dir))
            admin_key = args.secure and _admin_key(Path(state_dir))
            private_database(Path(state_dir) / DATABASE)
            marker = Path(state_dir) / STATE_MARKER
            state_id = read_private(marker)
            plane = open_plane(args.pod, state_dir, advertised_host(args.host, args.advertise_host), args.port,
                               config, kill_wait_s=args.kill_wait, modelled_time_scale=args.modelled_time_scale,
                               quarantine=args.quarantine_bad_records, secure=args.secure,
                               open_to_all=args.insecure_ignore_access_keys,
                               state_id=state_id.strip() if state_id else None, accept_empty=args.accept_empty_state,
                               accept_lost_log=args.accept_lost_log, output_dirs=tuple(args.output_dir),
                               trust_users=args.trust_users, admin_key=admin_key,
                               write_timeout_s=args.write_timeout, recover_later=args.ray != "off")
        except BaseException:
            withdraw(lock)
            raise
        if state_id is None or state_id.strip() != plane.state_id:
            write_private(marker, plane.state_id + "\n")
    except VipuError as e:
        print(f"vipu-server: error: {e.message}", file=sys.stderr)
        return EXIT_CODES.get(grpc.StatusCode[e.code], BAD_INPUT)  # as the CLI exits for the same error
    except (OSError, sqlite3.OperationalError) as e:  # a full disk, an I/O error: no traceback, the state kept
        print(f"vipu-server: error: {cannot_write(Path(state_dir), e).message}", file=sys.stderr)
        return EXIT_CODES[grpc.StatusCode.UNAVAILABLE]
    # the stored records just loaded live as long as the process: no collection walks them again (the first full
    # one after a large restart would, in whichever call came first), nor what survives a collection later
    keep_long_lived()
    pod = plane.pod
    plane.secure = args.secure
    if tensor_memory is not None:
        plane.devices.budget_tensors(tensor_memory)
    plane.use_machines(args.ray, args.health_check_interval, bundle, nodes_may_join=bool(args.ray_wait))
    try:
        key_file = bootstrap_admin(plane, state_dir) if args.secure else None
    except VipuError as e:
        plane.close()  # closed cleanly: no -wal file or generation marker left beside a state that never served
        print(f"vipu-server: error: {e.message}", file=sys.stderr)
        return EXIT_CODES.get(grpc.StatusCode[e.code], BAD_INPUT)
    if args.secure and tls is None and not is_loopback(args.host):
        print(f"vipu-server: warning: --secure on {args.host} without --tls-cert: access keys cross the network in"
              " clear text; give --tls-cert and --tls-key", file=sys.stderr)
    try:
        rate_limit = Buckets(args.rate_limit, args.rate_limit_burst) if args.rate_limit else None
        server, port = build_server(plane, args.host, args.port, args.rpc_threads, tls=tls, rate_limit=rate_limit)
    except OSError as e:  # taken since listening_ports: the state closed as a stop closes it, not as a crash
        plane.close()
        print(f"vipu-server: error: {e}", file=sys.stderr)
        return CONFLICT if isinstance(e, PortInUse) else BAD_INPUT
    plane.api_port = port
    device = None
    device_threads = (args.device_threads or default_threads(pod.ipus)) if args.device_port >= 0 else None
    if device_threads is not None:
        try:
            device, device_port = build_device_server(plane, args.host, args.device_port, device_threads, tls)
        except OSError as e:
            plane.close()
            print(f"vipu-server: error: {e}", file=sys.stderr)
            return CONFLICT if isinstance(e, PortInUse) else BAD_INPUT
        plane.device_address = f"{plane.api_host}:{device_port}"
        plane.device_cert = args.tls_cert.read_text() if tls else None
    metrics_line = "metrics off"
    if args.metrics_port >= 0:
        register_metrics(plane)
        try:
            key_role = None if not args.secure or args.metrics_open else plane.key_role
            http = metrics_endpoint.serve(args.metrics_port, args.metrics_host, plane.metrics.registry, key_role,
                                          lambda: plane.store_writes().writable)
        except OSError as e:
            plane.close()
            print(f"vipu-server: error: cannot serve metrics on {args.metrics_host}:{args.metrics_port}: {e};"
                  " pick another --metrics-port (or -1 to turn metrics off)", file=sys.stderr)
            return CONFLICT if e.errno == errno.EADDRINUSE else BAD_INPUT
        metrics_line = f"metrics on http://{args.metrics_host}:{http.server_port}/metrics"
    signals = StopSignals()
    signals.install()
    if plane.machines_enabled:
        try:
            started = (not args.ray_wait or wait_until_reachable(args.ray, args.ray_wait, signals.stop)) \
                and start_machines(plane, signals.stop, signals.now)
        except Exception as e:  # noqa: BLE001 - say what failed and how to run without it
            print(f"vipu-server: error: {no_ray(args.ray, e)}", file=sys.stderr)
            return BAD_INPUT if isinstance(e, VipuError) else 1
        signals.install()  # again: Ray's core worker put a handler of its own in front of ours
        if not started:
            plane.stop_machines()
            plane.close()
            print("vipu-server: stopped while starting Ray; nothing was served", file=sys.stderr, flush=True)
            return 0
        try:  # now: runs' ends recorded on other Ray nodes are read there
            recover_stored(plane)
        except (VipuError, OSError, sqlite3.OperationalError) as e:  # the store could not write the recovery
            plane.stop_machines()
            plane.close()
            why = e.message if isinstance(e, VipuError) else cannot_write(Path(state_dir), e).message
            print(f"vipu-server: error: {why}", file=sys.stderr)
            return EXIT_CODES[grpc.StatusCode.UNAVAILABLE]
    plane.served = served(args, port, metrics_line.removeprefix("metrics "), device_threads)
    server.start()
    if device is not None:
        device.start()
    plane.start()
    print(
        f"vipu-server {__version__} listening on {args.host}:{port} ({pod.name}, {pod.ipus} IPUs; state in {state_dir};"
        f" {scheduling(plane)}, scheduler config {args.scheduler_config or 'built in'});"
        f" {metrics_line}{'; secure' if args.secure else ''}{'; TLS' if tls else ''}"
        f"{f'; jobs reach it at {plane.api_host}:{port}' if plane.api_host != args.host else ''}"
        f"; {f'IPUs served on {plane.device_address}' if device is not None else 'IPUs not served'}",
        flush=True,
    )
    if key_file:
        print(f"vipu-server: created admin user 'admin'; its access key is in {key_file}", flush=True)
    signals.stop.wait()
    return stop_serving(plane, server, device, signals.now, args.write_timeout)


if __name__ == "__main__":
    sys.exit(main())
