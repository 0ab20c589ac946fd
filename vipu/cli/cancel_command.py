"""`vipu cancel` (scancel): jobs by id, narrowed by scancel's filters, or chosen by the filters alone; and --signal,
which sends a signal to running programs instead of ending them."""

from __future__ import annotations

import shlex
import signal as signals

import typer

from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, OK, fail, warn
from vipu.cli.job_commands import split
from vipu.cli.job_selection import given, job_states, selected_users, whole
from vipu.cli.job_ids import IDS, IDS_HELP, TaskIds, act, finish, graver, lines, one_call_each
from vipu.scheduler.job_states import ACTIVE
from vipu.v1 import job_pb2 as j

MAX_SIGNAL = 64
SIGNAL_HELP = "a name such as USR1, SIGUSR1, TERM or INT, or a number from 1 to 64"


def signal_number(text: str) -> int:
    """A signal as scancel --signal takes it: a name, with or without SIG, or a number."""
    word = text.strip().upper()
    if word.isdigit():
        number = int(word)
        if not 1 <= number <= MAX_SIGNAL:
            fail("vipu", f"-s/--signal {text}: signals are 1 to {MAX_SIGNAL}; give {SIGNAL_HELP}", BAD_INPUT)
        return number
    try:
        return signals.Signals[word if word.startswith("SIG") else f"SIG{word}"].value
    except KeyError:
        fail("vipu", f"-s/--signal {text!r} is not a signal; give {SIGNAL_HELP}", BAD_INPUT)


def described(filters: dict[str, list[str]], me: bool) -> str:
    """The filters as the command line gave them: "-u bob -t PD"."""
    flags = {"users": "-u", "names": "-n", "states": "-t", "partitions": "-p", "qos": "-q", "accounts": "-A"}
    words = [" ".join(f"-n {shlex.quote(v)}" for v in values) if key == "names" else f"{flags[key]} {','.join(values)}"
             for key, values in filters.items() if values]
    return " ".join(words + (["--me"] if me else []))


def register(app: typer.Typer) -> None:
    @app.command(context_settings=IDS)
    def cancel(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(None, help=IDS_HELP),
        user: list[str] = typer.Option(None, "--user", "-u", help="only jobs of these users"),
        me: bool = typer.Option(False, "--me", help="only your own jobs"),
        name: list[str] = typer.Option(None, "--name", "-n", "--jobname", help="only jobs of this name, matched whole"
                                  " (as scancel's: commas and spaces are part of it); repeat for several"),
        state: list[str] = typer.Option(None, "--state", "-t", help="only jobs in these states: PENDING (PD) or"
                                        " RUNNING (R)"),
        partition: list[str] = typer.Option(None, "--partition", "-p", help="only jobs in these V-IPU allocations"
                                            " (Slurm's partitions; a job that names none is in default)"),
        qos: list[str] = typer.Option(None, "--qos", "-q", help="only jobs of these QOS"),
        account: list[str] = typer.Option(None, "--account", "-A", help="only jobs of these accounts"),
        signal: str = typer.Option(None, "--signal", "-s", help=f"send this signal ({SIGNAL_HELP}) to each running"
                                   " program chosen, instead of cancelling: the job goes on"),
        batch: bool = typer.Option(False, "--batch", "-b", help="with --signal: signal the batch script's own"
                                   " process only, not what it started (for a script that traps the signal and"
                                   " forwards it)"),
        full: bool = typer.Option(False, "--full", "-f", help="with --signal: signal the batch script and every"
                                  " process it started (-b is then ignored)"),
        json_out: bool = JsonOption,
    ):
        """Cancel jobs (scancel): pending ones leave the queue, running ones stop.

        The filters narrow, as scancel's do: with ids, a job is cancelled only if it matches every filter given
        (an array job: its tasks that do; an id that matches none gets an error line, exit 3); without ids, the
        filters choose among the active jobs you may see (every job, without --secure). Each filter takes several
        values, repeated or comma-separated, but for -n: a name is taken whole (repeat -n for several). With
        neither ids nor filters nothing is done (exit 2).

        --signal: the signal goes to each running program chosen (a batch script or --wrap): as scancel's, by
        default to every process the script started but not the script itself (a job here has no steps but its
        batch step), with -b to the script alone, with -f to both; the job goes on unless the program ends.
        -s KILL (without -b) cancels the job, as scancel's: it ends CANCELLED. The controller's built-in
        workloads (sleep, hold, train) have no process: a signal named at one is refused (exit 4); with filters
        alone only running programs are chosen."""
        cli = ctx.obj
        ended = sorted(s.value for s in (job_states(state, "-t/--state") or set()) - ACTIVE)
        if ended:  # scancel acts on jobs in these states; no job ended can be (its "Valid job states" line)
            fail("vipu", f"-t/--state {','.join(ended)}: only active jobs can be cancelled or signalled; give PENDING"
                 " (PD) or RUNNING (R)", BAD_INPUT)
        filters = {"users": selected_users(user), "names": whole(name, "-n/--name", "a job name (e.g. -n train)"),
                   "states": split(state),
                   "partitions": given(partition, "-p/--partition", "allocations (e.g. -p default)"),
                   "qos": given(qos, "-q/--qos", "QOS names (e.g. -q normal)"),
                   "accounts": given(account, "-A/--account", "accounts (e.g. -A physics)")}
        chosen = any(filters.values()) or me
        if not ids and not chosen:
            fail("vipu", "name job ids, or choose jobs with filters such as --user, --name, --state or --me (vipu"
                 " queue lists them)", BAD_INPUT)
        as_json = cli.wants_json(json_out)
        # brief replies unless --json prints them: a cancel of 50,000 jobs got 34 MB back and missed its deadline
        fields = {**filters, "me": me, "brief": not as_json}
        number = signal_number(signal) if signal is not None else 0
        if number == signals.SIGKILL and (full or not batch):
            number = 0  # a cancel, as scancel -s KILL's (the controller does the same for the API's callers)
        if number:
            fields["signal"] = number
            fields["signal_target"] = j.SIGNAL_FULL if full else j.SIGNAL_BATCH if batch else j.SIGNAL_CHILDREN
            done, failed = signalled(cli, ids or [], as_json, fields)
        elif ids:
            done, failed = act(cli, "CancelJobs", "cancelled", ids, as_json, request=j.CancelJobsRequest, **fields)
        else:
            done, failed = list(cli.conn.call(cli.conn.jobs.CancelJobs, j.CancelJobsRequest(**fields)).jobs), OK
            for line in [] if as_json else lines(done, "cancelled"):
                print(line)
        if not ids and not done and not as_json:
            what = "running program" if number else "active job"
            warn("vipu", f"no {what} matches {described(filters, me)}; nothing was done")
        finish(done, failed, as_json)


def signalled(cli, ids: list[str], as_json: bool, fields: dict) -> tuple[list[j.Job], int]:
    """scancel --signal: the programs the ids name (a call each, so each refusal gets its line), or those the
    filters choose; a line for each job signalled."""
    method = cli.conn.jobs.CancelJobs
    try:
        name = signals.Signals(fields["signal"]).name
    except ValueError:  # a real-time signal: its number
        name = str(fields["signal"])
    if ids:
        targets, failed = TaskIds(cli).resolve_all(ids)
        replies, code = one_call_each(cli, method, targets, j.CancelJobsRequest, **fields)
        done, failed = [x for jobs in replies.values() for x in jobs], graver(failed, code)
    else:
        done, failed = list(cli.conn.call(method, j.CancelJobsRequest(**fields)).jobs), OK
    for line in [] if as_json else lines(done, f"signalled ({name})"):
        print(line)
    return done, failed
