"""How vipu-server stops: SIGTERM or SIGINT asks for a graceful stop and a second one for a stop at once; the
graceful stop's steps run within one bound, and a stop that gives up says on stderr what it gave up on.

Why the signal handler only writes a byte to a pipe: a Python handler runs in the main thread between two of its
bytecodes, wherever that thread is. The main thread waits for the stop in Event.wait(), which holds the Event's lock
for a few bytecodes before it sleeps; a SIGTERM landing there ran stop.set(), which waited for that same lock for
ever, and the controller hung without a word until the test fixture's SIGKILL 30 s later (seen once on a loaded
machine, in a teardown of tests/server/test_state_files.py). A thread of its own reads the pipe and sets the events.

Why a bound over the whole stop: each step waits on something another thread does (the calls under way, the
scheduling loop, the runs, Ray, the store's disk, the log's writes to stderr, the threads the interpreter's exit
joins), and one that never ended hung the stop silently (a stderr nobody read did, for ever). A stop that takes
long says which step it is in, after NOTICE_S and again each time its time has doubled; past its bound (STOP_S,
plus the store's --write-timeout, which closing it may use) or at a second signal it gives up: it says which step
it was in and which threads were still running, ends a local Ray, and the process exits as a kill -9 would leave
the state: every change a caller was told was made is stored (control/lock.py), and the next start recovers the
rest.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Callable

import grpc

from vipu.cli.failure import EXIT_CODES
from vipu.server import log_format

if TYPE_CHECKING:
    from vipu.control.plane import ControlPlane

SIGNALS = (signal.SIGTERM, signal.SIGINT)
# the steps but the store's close, each waiting its own bound: gRPC's grace 2 s, the loop 5, the programs 5, the
# training threads 10 (train/runs.py SHUTDOWN_WAIT_S), the IPUs' calls 1, the machines and Ray 10
STOP_S = 35.0
NOTICE_S = 5.0  # a stop taking longer says where it is then, and again each time its time has doubled
SAY_S = 2.0  # a line to stderr may block (a pipe nobody reads, a frozen disk): the stop waits no longer for one


class StopSignals:
    """`stop` is set by the first SIGTERM or SIGINT, `now` by the next one."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.now = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        threading.Thread(target=self._listen, name="vipu-signals", daemon=True).start()

    def install(self) -> None:
        """Handle both signals (again after Ray's core worker put handlers of its own in front of these)."""
        for sig in SIGNALS:
            signal.signal(sig, self._heard)

    def _heard(self, signum, frame) -> None:
        try:
            os.write(self._write, b".")
        except BlockingIOError:  # the pipe is full of signals not yet read: one more changes nothing
            pass

    def _listen(self) -> None:
        while True:
            for _ in os.read(self._read, 64):
                (self.now if self.stop.is_set() else self.stop).set()


def say(text: str) -> bool:
    """Write a line to stderr (fd 2, past Python's buffer, which a blocked writer holds) within SAY_S; False if the
    write did not end by then (it is left behind)."""
    written = threading.Thread(target=os.write, args=(2, f"vipu-server: {text}\n".encode()), daemon=True,
                               name="vipu-say")
    written.start()
    written.join(SAY_S)
    return not written.is_alive()


def _waiting_threads() -> str:
    """The threads the interpreter's exit would wait for, and where the main thread is."""
    main = threading.main_thread()
    names = sorted(t.name for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive())
    frame = sys._current_frames().get(main.ident)
    stack = traceback.extract_stack(frame) if frame is not None else []
    ours = [f for f in stack if f"{os.sep}vipu{os.sep}" in f.filename] or stack  # the step's own wait, not Python's
    at = f"; the main thread was in {ours[-1].name} ({ours[-1].filename}:{ours[-1].lineno})" if ours else ""
    return f"threads still running: {', '.join(names) or 'none but daemons'}{at}"


class Stopping:
    """The graceful stop under way: step() names the step it is in. A watcher thread says where it is (the module
    says when), and gives up past `bound_s` or at a second signal (`now`): it says so, calls `end` (which ends what
    must not outlive the process) and exits the process, with 0 if a signal asked for it, else `code`."""

    def __init__(self, now: threading.Event, bound_s: float, end: Callable[[], None], code: int):
        self.doing = "stopping"
        self._began = time.monotonic()
        self._end, self._code = end, code
        threading.Thread(target=self._watch, args=(now, bound_s), name="vipu-stop-watch", daemon=True).start()

    def step(self, doing: str) -> None:
        self.doing = doing

    def _watch(self, now: threading.Event, bound_s: float) -> None:
        deadline, notice = self._began + bound_s, self._began + NOTICE_S
        while not now.wait(max(0.0, min(notice, deadline) - time.monotonic())):
            took = time.monotonic() - self._began
            if took >= bound_s:
                break
            say(f"still stopping after {took:.0f} s: {self.doing} (signal again to stop at once)")
            notice = self._began + 2 * took  # at 5, 10, 20, 40 s...: an hour's --write-timeout says it ten times
        asked = now.is_set()
        why = "a second signal asked to stop at once" if asked else f"it did not end in {bound_s:g} s"
        log_format.stop(SAY_S)  # the lines logged so far first, if stderr takes them
        say(f"the stop gave up ({why}) while {self.doing}; {_waiting_threads()}. Every change a caller was told was"
            " made is stored; the next start recovers the state as after a kill -9")
        try:
            self._end()
        finally:
            os._exit(0 if asked else self._code)


def stop_serving(plane: ControlPlane, server: grpc.Server, device: grpc.Server | None, now: threading.Event,
                 write_timeout_s: float) -> int:
    """The graceful stop, step by step, within Stopping's bound; returns the exit code, or exits the process."""
    stopping = Stopping(now, STOP_S + write_timeout_s, plane.kill_local_ray if plane.machines_enabled else lambda: None,
                        EXIT_CODES[grpc.StatusCode.UNAVAILABLE])
    stopping.step("stopping the API's calls (2 s of grace)")
    server.stop(grace=2).wait()
    stopping.step("stopping the scheduling loop and the runs")
    plane.stop()  # before the machines go: the runs' end is the restart's to record (programs' sessions close)
    if device is not None:
        stopping.step("stopping the IPUs' calls (1 s of grace)")
        device.stop(grace=1).wait()
    stopping.step("stopping the machines and Ray")
    # releasing actors on a lost Ray node can hang; the state is safe in SQLite, so give it a few seconds only
    closing = threading.Thread(target=plane.stop_machines, daemon=True)
    closing.start()
    closing.join(timeout=10)
    stopping.step("closing the state store")
    if not plane.close():
        # a thread stuck in the kernel would keep the interpreter's exit waiting until the disk answers
        print(f"vipu-server: the state store's disk did not answer in {write_timeout_s:g} s (a stalled"
              " disk); stopping without waiting for it: every change a caller was told was made is stored, and"
              " the write still in the kernel ends when the disk answers", file=sys.stderr, flush=True)
        plane.kill_local_ray()
        log_format.stop()
        os._exit(EXIT_CODES[grpc.StatusCode.UNAVAILABLE])
    if closing.is_alive():
        # the interpreter's exit would wait on, or abort in, Ray's threads: end what this process started and leave
        print("vipu-server: stopping the machines and Ray took over 10 s; ending Ray's processes", file=sys.stderr,
              flush=True)
        plane.kill_local_ray()
        sys.stdout.flush()
        log_format.stop()
        os._exit(0)
    stopping.step("writing the log's last lines")
    if not log_format.stop():  # its writer blocked in a write to stderr: the interpreter's exit would wait for it
        say(f"the log's last lines were not written in {log_format.STOP_WAIT_S:g} s (stderr takes nothing: a pipe"
            " nobody reads, or a frozen disk); stopping without them")
        os._exit(0)
    stopping.step("the process's exit, which waits for the threads still running")
    return 0
