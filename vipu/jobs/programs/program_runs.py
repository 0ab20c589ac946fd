"""The `command` kind's runner: each run of a user's program under a supervisor of its own (stepd.py), on this
machine with `--ray off`, or on the Ray node that holds the job's first machine (hosts.py), so a Ray cluster
spreads jobs over its nodes as Slurm spreads them over compute nodes.

Its IPUs: when the controller serves the DeviceService, the run gets VIPU_DEVICE_ADDRESS and a token of its own
(VIPU_RUN_TOKEN) that opens a session on its partition's emulated IPUs (run_sessions.py, vipu/jobs/sessions), for
vipu.sdk; the session ends with the run, whatever ended it, and the steps the program reported stay in its record.

What a run leaves: its output files (sbatch's --output, --error, with Slurm's patterns; by default slurm-%j.out in
the working directory) and a record in the store (kind "program_run", program_record.py): where its output went, the
node it ran on, why it failed to start if it did, and its reported steps. A run ends when its program exits
(COMPLETED on 0:0, else FAILED, with code and signal), or when the controller stops it (cancel, time limit,
preemption, lost IPUs): SIGTERM to its process group, then SIGKILL after KillWait. The controller's restart ends
the runs it had (NODE_FAIL, requeued as the spec allows): their supervisors stop their programs when the controller
goes, even by kill -9, and the restarted controller keeps their partitions until they have (run_locks.py).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from vipu.errors import FailedPrecondition
from vipu.jobs.output_folder import OutputRefused, allowed_folders, fresh_files, missing_workdir, writer_mark
from vipu.jobs.programs.command_spec import WarnSignal, parse_signal
from vipu.jobs.programs.environment import job_environment, node_names
from vipu.jobs.programs.hosts import TAIL_BYTES, Steps, call_on, output_lines
from vipu.jobs.programs.spool import spool_for, tidy
from vipu.jobs.programs import program_log
from vipu.jobs.programs.program_record import ProgramRecord, run_record
from vipu.jobs.programs.run_exits import end_untold, exit_path, forget_exits, recorded_end
from vipu.jobs.programs.run_locks import GONE_WAIT_S, left_running, when_gone
from vipu.jobs.programs.run_nodes import RunNodes
from vipu.jobs.programs.run_watch import watch_failed
from vipu.jobs.programs.run_sessions import device_environment, keep_steps, open_session
from vipu.scheduler.effects import StartJob, StopJob
from vipu.scheduler.job_states import JobState
from vipu.scheduler.workload import RunExit

log = logging.getLogger("vipu.programs")
WARN_RECHECK_S = 5.0  # how late an --signal may be after its time moved earlier (Slurm's: up to 60 s early)


@dataclass(eq=False)
class _Run:
    job_id: int
    started: float
    key: str
    record: ProgramRecord
    host: object = None  # the Steps (or a node's actor) its supervisor runs on, once chosen
    token: str | None = None  # what opens its session on its IPUs (VIPU_RUN_TOKEN), if the DeviceService is on
    session: object = None  # that session, once open (run_sessions.py)
    stopped: bool = False
    launched: bool = False  # its supervisor was started
    finished: threading.Event = field(default_factory=threading.Event)
    keeps: str | None = None  # the partition a stopped run holds until its program has ended
    hosted: threading.Event = field(default_factory=threading.Event)  # set once `host` is chosen


class ProgramRuns:
    """The `command` kind's runner (vipu/control/workloads.py); `ctx` is the RunContext the control plane gives it."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.local = Steps()
        self.spool = spool_for(ctx.settings.state_dir)
        self.runs: dict[int, _Run] = {}  # each job's latest run in this controller
        self.nodes = RunNodes()  # with Ray: the supervisors' actors, one a node
        self._lock = threading.Lock()
        self._stopping = False
        self._closing = threading.Event()  # set at shutdown: the watches of old runs end (when_gone)

    # -- a run ------------------------------------------------------------------------------------------------
    def _fresh(self, job, record: ProgramRecord) -> list[str]:
        """The files a run opened as the controller's user must make new (fresh_files); OutputRefused if one may not
        be written. The previous run's files are this job's to write over."""
        work, settings, earlier = job.spec.workload, self.ctx.settings, self.record(job.id)
        missing = missing_workdir(work.workdir)
        if missing:
            raise OutputRefused(missing)
        files = {"output": record.output, **({"error": record.error} if record.error else {})}
        dirs = allowed_folders(job.spec.submit_dir or work.submit_dir, settings.state_dir,
                               settings.output_dirs) + [Path(work.workdir)]
        return fresh_files(files, dirs, job.display_id, [earlier.output, earlier.error or ""] if earlier else [],
                           append=work.open_mode == "append", mark=writer_mark(settings.state_dir, job.user))

    def output_refusal(self, job) -> str | None:
        """Why the job's next run would fail at once on its output files (an old slurm-N.out it did not write, a
        missing folder), or None. Why: a release checks it, so a job held for such a file is not let go only to
        fail (walk22d)."""
        try:
            if self.ctx.run_as(job.user) is not None:  # opened as its user's account: the supervisor decides
                return None
            self._fresh(job, run_record(job, job.runs_started + 1))
        except OutputRefused as e:
            return str(e)
        except Exception:  # noqa: BLE001 - its user's mapping went: the start says so
            return None
        return None

    def start(self, start: StartJob) -> None:
        """Called under the controller's lock once the job's partition exists; the program starts beside it."""
        ctx = self.ctx
        job = ctx.job(start.job_id)
        work = job.spec.workload
        state = ctx.pod_state()
        partition = state.get("partition", start.partition)
        host, port = ctx.api_address()
        number = job.runs_started  # this run included
        record = run_record(job, number, next(iter(node_names(partition, state)), None), self.spool)
        run = _Run(job.id, start.start_time, f"job{job.id}.run{number}", record)
        try:
            user = ctx.run_as(job.user)
        except Exception as e:  # noqa: BLE001 - the mapping went since the submit: the run fails, saying why
            record.failure = getattr(e, "message", str(e))
            user = None
        fresh = None  # opened as its user's account (--secure)
        if user is None and record.failure is None:  # it opens its files as the controller's own user
            fresh = []
            try:
                fresh = self._fresh(job, record)
            except OutputRefused as e:  # the run fails saying why, as when its supervisor cannot open a file
                record.failure = str(e)
        env = job_environment(job, partition, state, host, port)
        run.token = self.ctx.sessions.new_token()
        env.update(device_environment(ctx, run.token))
        launch = {"job_id": job.id, "run": number, "script": work.script, "args": work.args, "cwd": work.workdir,
                  "env": env, "stdout": record.output,
                  "stderr": record.error, "append": work.open_mode == "append", "fresh": fresh, "user": user,
                  "mark": writer_mark(ctx.settings.state_dir, job.user),
                  "kill_wait_s": ctx.settings.kill_wait_s,
                  "spool": self.spool}
        ctx.store.commit([("program_run", record.name, record)], [])
        self.runs[job.id] = run
        machines = state.topology.machines_of(start.first_ipu, start.ipus)
        where = (start.partition, start.first_ipu, start.ipus, machines)
        try:  # (no thread to be had: the job fails saying so, executor.py, and its stop finds the run ended)
            if work.signal is not None:
                threading.Thread(target=self._warn, args=(run, parse_signal(work.signal)),
                                 name=f"vipu-warn-{job.id}", daemon=True).start()
            threading.Thread(target=self._run, args=(run, launch, where), name=f"vipu-program-{job.id}",
                             daemon=True).start()
        except BaseException:
            run.finished.set()
            raise

    def _run(self, run: _Run, launch: dict, where: tuple) -> None:
        partition, first_ipu, size, machines = where
        result = None
        try:
            if run.record.failure is not None:
                result = {"failed": run.record.failure}
            else:
                try:
                    if "VIPU_RUN_TOKEN" in launch["env"]:  # its session opens before the program can call it
                        run.session = open_session(self.ctx, run.token, run.job_id, run.record.run, partition,
                                                   first_ipu, size, machines)
                        if run.stopped:  # stopped meanwhile: stop() found no session to close
                            self._close(run, f"job {run.job_id}'s run was stopped before its program started")
                    run.host = self._host(run, machines)
                    run.hosted.set()
                    if run.stopped:  # stopped while its host was chosen: nothing to start
                        return
                    self._call(run.host, "start", run.key, launch)
                    run.launched = True
                    result = self._call(run.host, "wait", run.key)
                except Exception as e:  # noqa: BLE001 - the run fails, saying why
                    if run.launched:
                        raise  # its program runs, but is not watched any more: run_watch.py
                    result = {"failed": f"its supervisor could not be started: {type(e).__name__}: {e}"}
            self._ended(run, result)
        except BaseException as e:  # noqa: BLE001 - whatever failed, the run ends (run_watch.py)
            watch_failed(self, run, e, result)
        finally:
            with self._lock:
                run.finished.set()
                kept, run.keeps = run.keeps, None
            if kept is not None:
                self.ctx.release(kept)

    def _warn(self, run: _Run, warn: WarnSignal) -> None:
        """sbatch --signal: the signal `warn.before_s` seconds before the run's time limit, not before the first
        check after its start (WarnSignal.moment), once, through its supervisor as `vipu cancel -s` sends one; nothing
        if the run ends first. The limit is read again every WARN_RECHECK_S (vipu update may move it), on the
        controller's clock, as the time limit itself is kept."""
        while True:
            job = self.ctx.job(run.job_id)
            if job is None or not self.ctx.still_running(run.job_id, run.started):
                return
            left = warn.moment(run.started, job.end_by, WARN_RECHECK_S) - self.ctx.now()
            if left <= 0:
                break
            if run.finished.wait(min(left, WARN_RECHECK_S)):
                return
        while not run.hosted.wait(WARN_RECHECK_S):  # (its supervisor not yet started: a short limit)
            if run.finished.is_set():
                return
        try:
            self.signal(run.job_id, warn.number, "batch" if warn.batch else "children")
        except FailedPrecondition:  # it has just ended, or was stopped
            pass

    def _ended(self, run: _Run, result: dict) -> None:
        ctx = self.ctx
        self._close(run, f"job {run.job_id}'s program has ended: its session with it")
        with ctx.lock:
            if self._stopping:  # the controller stops its programs: the restart records how their jobs ended
                return
            if "failed" in result:
                run.record.failure = result["failed"]
            records = [("program_run", run.record.name, run.record)] if "failed" in result or run.session is not None \
                else []
            if ctx.still_running(run.job_id, run.started):  # its record written with its end (control/run_ends.py)
                if "failed" in result:
                    log.error("job %s: its program could not start: %s", run.job_id, result["failed"])
                    ctx.finish(run.job_id, run.started, 1, JobState.FAILED, records=records)
                else:
                    ended = result["ended"]
                    ctx.finish(run.job_id, run.started, ended["exit_code"], None, ended["signal"], records=records)
            else:
                if "ended" in result:  # stopped from outside: its job's ExitCode is what the stop did to it
                    ended = result["ended"]
                    ctx.stopped_end(run.job_id, run.started, ended["exit_code"], ended["signal"])
                if records:
                    ctx.store.commit(records, [])
        if "ended" in result:
            self._end_written(run)
        ctx.wake()

    def _end_written(self, run: _Run) -> None:
        """Its end is in the store: its exit record goes (kept while the store cannot write: a restart may read it)."""
        if self.ctx.store.writable:
            self._call(run.host, "forget_exit", str(exit_path(self.spool, run.job_id, run.record.run)), wait=False)

    def stop(self, stop: StopJob) -> float | None:
        """The run ended from outside: its supervisor stops the program (SIGTERM to its group, SIGKILL after
        KillWait). The run keeps its partition until the program has ended, as Slurm keeps a job's nodes
        COMPLETING, so no other job gets its IPUs while it still runs. Returns KillWait, when it is SIGKILLed and
        should be gone: the scheduler plans its IPUs free then, and as free just after now once that has passed
        (SIGKILLed processes may take longer: run_locks.GONE_WAIT_S). None: it had ended."""
        run = self.runs.get(stop.job_id)
        if run is None:
            return self._keep_for_old_runs(stop)
        run.stopped = True
        self._close(run, f"job {stop.job_id}'s run was stopped ({stop.state.value}); its session with it")
        if run.host is not None:
            self._call(run.host, "terminate", run.key, stop.state.value, wait=False)
        with self._lock:
            if run.finished.is_set():
                return None
            run.keeps = stop.partition
            return self.ctx.settings.kill_wait_s

    def _keep_for_old_runs(self, stop: StopJob) -> float | None:
        """A stop of a job this controller has not run: its partition is from before a restart, and the programs of
        that controller's runs go on ending through KillWait (run_locks.py; on their node: run_nodes.py), which
        began when it went. The partition stays until they have (Cleaning). Returns KillWait; None: none left."""
        left, watch = left_running(self.spool, stop.job_id), when_gone
        if not left and self.ctx.machines.pool is not None:
            left, watch = self.nodes.left_running(self.record(stop.job_id), stop.job_id)
        if not left:
            return None
        log.info("job %s: the program of its run from before the restart is still ending (supervisor pid %s): its"
                 " partition %s is kept until it has", stop.job_id, ", ".join(map(str, left.values())), stop.partition)
        watch(left, partial(self._old_run_gone, stop.job_id, stop.partition), self._closing,
              self.ctx.settings.kill_wait_s + GONE_WAIT_S, f"job {stop.job_id}")
        return self.ctx.settings.kill_wait_s

    def _old_run_gone(self, job_id: int, partition: str) -> None:
        """The program of a run from before the restart has ended: that run's ExitCode becomes what ended it, as its
        supervisor recorded it (0:9 if it was SIGKILLed), as for a run stopped in this controller's life; its End
        stays the restart's, when it was stopped (the rest is Slurm's COMPLETING, no run time). Then its partition
        goes."""
        self.ask_ends([job for job in [self.ctx.job(job_id)] if job is not None], left=False)  # without the lock
        with self.ctx.lock:
            job = self.ctx.job(job_id)
            started = None if job is None else job.latest_start  # (requeued meanwhile: its start is in its history)
            ended = self.recorded_end(job) if started is not None else None
            if ended is not None:  # (not while the store cannot write: plane.py _stopped_end)
                self.ctx.stopped_end(job_id, started, ended.exit_code, ended.signal)
        self.ctx.release(partition)

    def signal(self, job_id: int, sig: int, to: str = "full") -> None:
        """scancel --signal: `sig` to the run's program, `to` which of its processes (stepd.command), through its
        supervisor; the run goes on. Refused while the program is still being started (its supervisor not yet
        there) or once it has ended."""
        run = self.runs.get(job_id)
        if run is None or run.finished.is_set() or run.stopped:
            raise FailedPrecondition(f"job {job_id}'s program is not running; only a running program can be"
                                     " signalled")
        if run.host is None:
            raise FailedPrecondition(f"job {job_id}'s program is still being started; signal it again in a moment")
        if isinstance(run.host, Steps):
            if not run.host.signal(run.key, sig, to):
                raise FailedPrecondition(f"job {job_id}'s program is not running just now (it is starting, or has"
                                         " just ended); signal it again while `vipu queue` shows it running")
        else:
            self._call(run.host, "signal", run.key, sig, to, wait=False)  # a node's actor: not waited for (lock)

    def _close(self, run: _Run, why: str) -> None:
        """End the run's session (its calls fail with `why`, its tensors are freed) and keep its steps."""
        session = self.ctx.sessions.close(run.token, why) if run.token is not None else None
        if session is not None:  # (run.session may not be set yet: this is the session the token opened)
            keep_steps(run.record, session, self.ctx.pod.machine.ipus)

    # -- where supervisors run ----------------------------------------------------------------------------------
    def _host(self, run: _Run, machines: list[int]):
        """--ray off: this machine's Steps; else the NodeSteps actor of the job's first machine's node, stored with
        the run first (a restart asks that node how it ended: run_nodes.py)."""
        if not self.ctx.machines.enabled:
            return self.local
        host, run.record.node, run.record.node_address = self.nodes.host(self.ctx.machines, machines)
        with self.ctx.lock:
            self.ctx.store.commit([("program_run", run.record.name, run.record)], [])
        return host

    _call = staticmethod(call_on)

    # -- what it left --------------------------------------------------------------------------------------------
    def recorded_end(self, job) -> RunExit | None:
        """A restart's: how the job's latest run ended, as recorded in this machine's spool, else on the node its
        record names, as ask_ends heard it (run_nodes.py); None if neither has it."""
        return recorded_end(self.spool, job) or self.nodes.recorded_end(job, self.record(job.id), self.ctx.store)

    def ask_ends(self, jobs, left: bool = True) -> None:
        """Before recorded_end and a stop run for `jobs` under the state lock: their runs' Ray nodes asked
        (run_nodes.py)."""
        self.nodes.ask(jobs, self.record, left, connected=self.ctx.machines.pool is not None)

    def forget(self, job_id: int) -> None:
        run = self.runs.get(job_id)
        if run is not None and run.finished.is_set():
            del self.runs[job_id]
        forget_exits(self.spool, job_id)  # those a restart read, or whose end waited for the store: written now
        self.nodes.forget(job_id)

    def record(self, job_id: int) -> ProgramRecord | None:
        run = self.runs.get(job_id)
        if run is not None:
            if run.session is not None and not run.finished.is_set():  # live: its steps so far
                record = run.record.model_copy()
                keep_steps(record, run.session, self.ctx.pod.machine.ipus)
                return record
            return run.record
        return self.ctx.store.get("program_run", str(job_id), ProgramRecord)

    def log_lines(self, job_id: int) -> list[str]:
        """`vipu logs ID`: how each earlier run ended (a requeued job's), then the end of the program's output (its
        last MiB), as it is now; and why it failed to start, if it did."""
        record = self.record(job_id)
        return [] if record is None else program_log.earlier(self, job_id, record.run) + self._run_lines(job_id, record)

    def _run_lines(self, job_id: int, record: ProgramRecord) -> list[str]:
        run = self.runs.get(job_id)
        host = run.host if run is not None and run.host is not None else self.local
        if record.failure is not None:  # its output was never opened by this run: what is there is not its own
            return [f"run {record.run} could not start: {record.failure}", *record.step_lines()]
        job = self.ctx.job(job_id)
        try:  # read as the job's user's account (--secure), whatever its folders have become since the run
            user = self.ctx.run_as(job.user if job is not None else "")
        except Exception as e:  # noqa: BLE001 - its user's mapping went: nobody may read it for them
            return [f"(the output of run {record.run} is not shown: {getattr(e, 'message', e)})", *record.step_lines()]
        try:
            text, cut = self._call(host, "tail", record.output, TAIL_BYTES, user)
        except Exception as e:  # noqa: BLE001 - a node gone: say so, keep the rest
            return [f"(the output of run {record.run} on node {record.node} cannot be read: {e})"]
        lines = output_lines(text)
        if cut:
            lines = [f"(only the end of {record.output} is shown)", *lines[1:]]
        if record.error is not None and record.error != record.output:  # (-e apart from -o: not shown, said where)
            lines.append(f"(its stderr goes to {record.error}, not shown here)")
        return lines + record.step_lines()

    def log_after(self, job_id: int, mark, partial: bool = False):
        return program_log.log_after(self, job_id, mark, partial)

    def progress(self) -> dict:
        """Running programs' steps so far, by job id (metrics, `vipu top`; machine stats with --ray off)."""
        return {job_id: list(run.session.reports) for job_id, run in list(self.runs.items())
                if run.session is not None and not run.finished.is_set() and run.session.reports}

    def shutdown(self) -> None:
        """The controller stops: its programs stop with it; the restart records how their jobs ended."""
        with self.ctx.lock:
            self._stopping = True
        self._closing.set()
        self.ctx.sessions.close_all("the controller is stopping")
        self.local.terminate_all()
        for actor in self.nodes.all():
            actor.terminate_all.remote()
        deadline = time.monotonic() + 5  # their supervisors' SIGTERM, then out: KillWait is for cancels
        for run in list(self.runs.values()):
            run.finished.wait(max(0.0, deadline - time.monotonic()))
        tidy(self.spool, lambda job_id, run: end_untold(self.ctx.job(job_id), run))  # this machine's

