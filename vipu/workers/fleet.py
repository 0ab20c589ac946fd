"""The emulated IPU-Machines behind the controller: Ray started or joined, actors brought up for a job's
machines, watched every few seconds (machine_failures.py says which were lost), and their counters read.

Why a callback and not the domain: Ray is an execution engine, not a rule. The control plane only hears "these
machines were lost" (`on_lost`) and turns that into failed IPUs, as an operator's `vipu-admin fail ipus` does.

Ray starts with the controller (`--ray local`, the default) or is attached to (`--ray ADDRESS`: machine actors then
spread over its nodes); `--ray off` never starts it. Machine actors themselves start only when a job first needs
their machine.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.workers import local_ray
from vipu.workers.machine_failures import FailureWatch

log = logging.getLogger("vipu.fleet")
LOCAL_RAY_ATTEMPTS = 3
REPAIR_WAIT_S = 10.0  # how long a repair waits for a restarting actor to answer
STATS_WAIT_S = 1.0  # the longest a scrape or a listing waits for the machines' counters
DEFAULT_BUNDLE = {"CPU": 0.01}  # what each machine reserves without --machine-bundle (pool.py says why)
WATCH_S = 2.0  # how often every machine actor is asked for its health (vipu-server --health-check-interval)


def ray_address_problem(mode: str) -> str | None:
    """What is wrong with a --ray value, or None: local, off, auto, ray://..., or HOST:PORT with a port of 1 to
    65535 (ray.init retried 127.0.0.1:-1 for minutes at full CPU)."""
    if mode in ("local", "off", "auto") or mode.startswith("ray://"):
        return None
    host, sep, port = mode.rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not 1 <= int(port) <= 65535:
        return "give local, off, auto, or a Ray cluster's HOST:PORT with a port of 1 to 65535 (e.g. 10.0.0.5:6379)"
    return None


def check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """ConnectionError naming the address unless something listens at a HOST:PORT Ray address. Why: ray.init
    retries an address where nothing listens for minutes, saying only Ray's own warnings, and the controller
    neither serves nor says why. ("auto" and ray:// addresses are Ray's to resolve.)"""
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(f"nothing answers at {address} ({e.strerror or e}); start the Ray head there"
                              " (`ray start --head`) or give its address") from None


def unreachable(mode: str) -> str | None:
    """Why a HOST:PORT (or ray://HOST:PORT) --ray address cannot be reached now, or None (and for other modes)."""
    if not waitable(mode):
        return None
    try:
        check_reachable(mode.removeprefix("ray://"))
    except ConnectionError as e:
        return str(e)
    return None


def wait_until_reachable(address: str, wait_s: float, stop: threading.Event, poll_s: float = 0.5) -> bool:
    """Wait up to `wait_s` for something to listen at a HOST:PORT (or ray://HOST:PORT) Ray address: True once it
    does, False if `stop` was set first; ConnectionError naming the address after `wait_s`. Why: a controller
    started beside its Ray head (a systemd unit after ray-head.service, a container in the head's pod) may start
    before the head listens, and would otherwise exit at once and be restarted until it does."""
    target = address.removeprefix("ray://")
    deadline = time.monotonic() + wait_s
    log.info("waiting up to %g s for the Ray head at %s (--ray-wait)", wait_s, address)
    while not stop.is_set():
        try:
            check_reachable(target, timeout_s=min(poll_s * 4, max(deadline - time.monotonic(), 0.1)))
            return True
        except ConnectionError:
            if time.monotonic() >= deadline:
                raise ConnectionError(f"nothing answered at {address} in {wait_s:g} s (--ray-wait); start the Ray"
                                      " head there (`ray start --head`) or give its address") from None
        stop.wait(poll_s)
    return False


def waitable(address: str) -> bool:
    """Whether --ray-wait can wait for this --ray value: a HOST:PORT or ray://HOST:PORT address."""
    target = address.removeprefix("ray://")
    return address not in ("local", "off", "auto") and ray_address_problem(target) is None and ":" in target


def bundle_text(bundle: dict[str, float]) -> str:
    """As --machine-bundle takes it: "ipu_host=1,CPU=0.01"."""
    return ",".join(f"{k}={v:g}" for k, v in bundle.items())


def bundle_problem(bundle: dict[str, float], nodes: list[dict]) -> str | None:
    """Why no live node of the Ray cluster (ray.nodes()) can ever hold one machine's bundle, or None. Why at start:
    a resource no node offers (a typo) left each job RUNNING, its machines' placement groups waiting unplaced."""
    live = [n for n in nodes if n.get("Alive")]
    if any(all(n.get("Resources", {}).get(k, 0) >= v for k, v in bundle.items()) for n in live):
        return None
    offers = "; ".join(f"{n.get('NodeManagerAddress', '?')} offers " + bundle_text(
        {k: v for k, v in sorted(n.get("Resources", {}).items()) if not k.startswith("node:")}) for n in live)
    return (f"--machine-bundle {bundle_text(bundle)}: no node of the Ray cluster offers all of it ({offers or 'no live node'});"
            " give resources a node offers, or start nodes that offer them (ray start --resources='{\"ipu_host\":"
            " 16}')")


def newest(kept: dict[int, tuple[int, dict]], fresh: dict[int, tuple[int, dict]], running: set[int]
           ) -> dict[int, tuple[int, dict]]:
    """Each machine's newest answer of `kept` and `fresh` (machine -> (the number of the ask it answers, its
    counters): MachinePool.stats), dropping those of `kept` no longer `running`. Why by number, not by arrival: two
    scrapes at once merge in either order, and the one asked first, merged last, put a counter back (a counter
    reset, to Prometheus)."""
    merged = {m: answer for m, answer in kept.items() if m in running}
    for m, answer in fresh.items():
        if m not in merged or merged[m][0] < answer[0]:
            merged[m] = answer
    return merged


class Fleet:
    def __init__(self, pod: PodConfig, on_lost: Callable[[list[int]], None], mode: str = "local",
                 bundle: dict[str, float] | None = None):
        self.pod = pod
        self.mode = mode  # "off", "local", or a Ray address
        self.bundle = bundle  # what each machine reserves on a Ray node (None: the pool's default)
        self.nodes_may_join = False  # the nodes offering the bundle may join after the start: not refused then
        self.watch_s = WATCH_S
        self.pool = None
        self._started_ray = False
        self.failures = FailureWatch(on_lost)
        self._work = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vipu-fleet")
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()
        self._ray_dir = local_ray.folder(os.getpid())
        self._last_stats: dict[int, tuple[int, dict]] = {}  # machine -> its newest answer to stats(), numbered
        self._traffic = None  # --ray off: the TrafficCounters that runs' transports count into (the first makes it)
        self._machines: dict = {}  # --ray off: machine -> (Machine, its lock), made when a session or a run first
        # needs it and kept, as an actor is

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def start(self) -> None:
        """Start (or attach to) Ray and the machine pool now rather than at the first job."""
        self._ensure_pool()

    def _ensure_pool(self):
        with self._lock:
            if self.pool is None:
                import ray

                from vipu.workers.pool import MachinePool

                if not ray.is_initialized():
                    if self.mode == "local":
                        self._start_local_ray(ray)
                    else:
                        check_reachable(self.mode)
                        ray.init(address=self.mode, log_to_driver=False, configure_logging=False)
                problem = self.bundle and bundle_problem(self.bundle, ray.nodes())
                if problem and not self.nodes_may_join:
                    raise InvalidArgument(problem, field="--machine-bundle")
                # generous: the first actors on a fresh machine wait for Ray's worker processes to start and import
                self.pool = MachinePool(self.pod, bundle=self.bundle, ready_timeout_s=300.0)
                if problem:  # a head started with its controller (KubeRay): the workers that offer it come later
                    log.error("%s; starting all the same: nodes may still join (--ray-wait), and until one offers"
                              " it, a job's machines fail to start after %g s", problem, self.pool.place_timeout_s)
                self.pool.lost = self.failures.lost  # a collective waiting on a lost machine ends
                self._watcher = threading.Thread(target=self._watch, name="vipu-fleet-watch", daemon=True)
                self._watcher.start()
            return self.pool

    def _start_local_ray(self, ray) -> None:
        """Ray's own head processes sometimes die or miss Ray's fixed 30 s registration wait while starting on a
        loaded machine (seen: its dashboard process aborting; two attempts in a row timing out beside a test suite):
        up to LOCAL_RAY_ATTEMPTS attempts, each after a clean shutdown, then the error goes to the caller."""
        local_ray.remove_stale_folders()
        local_ray.adopt_orphans()
        self._ray_dir = local_ray.private_folder(self._ray_dir)  # before Ray makes its own, open to all, inside
        local_ray.start_reaper(self._ray_dir)
        # our own errors name the machine that failed; Ray would also print each failed call nobody awaited (the
        # reads feeding a write that never ran when a machine dies mid-collective)
        os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
        for attempt in range(1, LOCAL_RAY_ATTEMPTS + 1):
            try:
                ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False,
                         configure_logging=False, _temp_dir=os.path.join(self._ray_dir, local_ray.RAY_FOLDER))
                self._started_ray = True
                return
            except Exception:  # noqa: BLE001 - retried, then raised
                ray.shutdown()
                if attempt == LOCAL_RAY_ATTEMPTS:
                    raise
                log.warning("starting a local Ray failed (attempt %d of %d); trying again", attempt,
                            LOCAL_RAY_ATTEMPTS, exc_info=True)

    def kill_local_ray(self, grace_s: float = 1.0) -> None:
        """End every process of a local Ray: after ray.shutdown(), what it left (see local_ray.py); or, alone, a
        Ray whose start is under way (ray.shutdown() knows only a cluster whose start finished) or whose shutdown
        hangs. Nothing else of this process may use Ray afterwards."""
        local_ray.end_descendants(grace_s)
        # its session logs and sockets: ~1 MB a start, left behind by every stopped controller otherwise
        shutil.rmtree(self._ray_dir, ignore_errors=True)

    # -- bringing machines up -------------------------------------------------------------------------------------
    def bring_up(self, machines: list[int]) -> None:
        """Start the actors of these machines in the background (a job never waits on the scheduling loop for it)."""
        if self.enabled and machines:
            self._work.submit(self._bring_up, sorted(set(machines)))

    def _bring_up(self, machines: list[int]) -> None:
        try:
            pool = self._ensure_pool()
            pool.actors_for(machines)
            self.failures.brought_up(machines)
        except Exception:  # noqa: BLE001 - a machine that will not start is found by the watcher or the next job
            if self._stop.is_set():
                log.info("machines %s were not brought up: the controller is stopping", machines)
            else:
                log.exception("could not bring up machines %s", machines)

    # -- watching ---------------------------------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._stop.wait(self.watch_s):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - keep watching
                log.exception("machine health check failed")

    def check(self) -> list[int]:
        """Ask every actor for its health now; machines that died or restarted are reported lost
        (machine_failures.py). Returns them."""
        if self.pool is None:
            return []
        return self.failures.check(self.pool.health(), report=not self._stop.is_set())

    # -- operator actions -------------------------------------------------------------------------------------------
    def kill(self, machine: int) -> None:
        """Fault injection: kill the machine's actor (Ray restarts it empty); the watcher marks its IPUs failed."""
        self._ensure_pool().kill(machine)

    def fail_link(self, a: int, b: int) -> None:
        """Tell the machines at either end that have an actor; the others learn of it from the failed IPUs."""
        if self.pool is not None and {a // self.pool.pod.machine.ipus, b // self.pool.pod.machine.ipus} & set(
                self.pool.machines):
            self.pool.fail_link(a, b)

    def actors_for(self, machines: list[int]):
        """The machine pool, once these machines' actors answer (the caller then moves data through them)."""
        pool = self._ensure_pool()
        pool.actors_for(machines)
        return pool

    def repaired(self, machines: list[int]) -> None:
        """The machines' actors told their IPUs work again, and what they report now taken as their normal. A
        repair can come while Ray still restarts the lost actor: it is waited for (a few seconds at most), so that
        its restart is not taken for a new loss, nor its new process for the normal after a later one."""
        health: dict[int, dict] = {}
        live = [m for m in machines if self.pool is not None and m in self.pool.machines]
        if live:
            self.pool.repair(live)
            deadline = time.monotonic() + REPAIR_WAIT_S
            health = self.pool.health(live)
            while not all(h.get("alive") for h in health.values()) and time.monotonic() < deadline:
                if self._stop.wait(0.2):
                    break
                health = self.pool.health(live)
        self.failures.repaired(machines, health)

    def machine_transport(self, machines: list[int]):
        """With --ray off, a transport over in-process Machines, the ones the actors would wrap (capacity and
        counters as on the actors: fabric/machine_transport.py), counting each collective's bytes into the fleet's
        link counters too: what a program's session and a training run use. The machines are made on first use and
        kept for the controller's life."""
        from vipu.fabric.machine_transport import MachineTransport
        from vipu.fabric.traffic import TrafficCounters
        from vipu.workers.machine import Machine

        with self._lock:
            if self._traffic is None:
                self._traffic = TrafficCounters()
            for m in machines:
                if m not in self._machines:
                    self._machines[m] = (Machine(self.pod, m), threading.Lock())
            mine = {m: self._machines[m] for m in machines}
        return MachineTransport(mine, self.pod.machine.ipus, self._traffic)

    def stats(self) -> dict[int, dict]:
        """Every running machine actor's counters (for metrics and `vipu top`), asked all at once and waited for at
        most STATS_WAIT_S: a machine that does not answer in time (busy, restarting, on a lost node) gives its last
        answer marked "stale": True, or is absent if it never answered. Machines without an actor are absent. With
        --ray off there are none: the control plane asks the runs' step reports instead.

        Why a short deadline: a scrape and a listing wait for this, and a scrape that takes longer than Prometheus's
        timeout reads as the controller being down."""
        if not self.enabled or self.pool is None:
            return {}
        fresh = self.pool.stats(STATS_WAIT_S)
        with self._lock:
            self._last_stats = newest(self._last_stats, fresh, set(self.pool.machines))
            return {m: answer if m in fresh else {**answer, "stale": True}
                    for m, (_, answer) in self._last_stats.items()}

    def link_bytes(self) -> dict[int, dict[str, list[int]]]:
        """With --ray off: machine -> link type -> [sent, received] bytes the runs' transports counted so far."""
        return self._traffic.by_machine(self.pod.machine.ipus) if self._traffic is not None else {}

    def shutdown(self) -> None:
        self._stop.set()
        self._work.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            try:
                self.pool.shutdown()
            except Exception:  # noqa: BLE001
                log.exception("machine pool shutdown failed")
        # a bring-up in progress gives up within a second of the pool's shutdown and kills what it started: let it
        # finish before Ray goes (its thread would also hold up the interpreter's exit)
        self._work.shutdown(wait=True)
        if self._started_ray:
            import ray

            ray.shutdown()
            self.kill_local_ray(grace_s=3.0)
