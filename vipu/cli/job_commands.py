"""Slurm's words for jobs: `vipu hold|release|requeue` and `vipu logs` (`vipu submit`: submit.py; `vipu cancel`:
cancel_command.py; `vipu update job`: update_command.py; `vipu show job`: job_detail.py; `vipu show config`:
config_command.py; `vipu queue`: queue_listing.py, `history`: accounting.py, `info`: node_info.py, `priority`:
priorities.py)."""

from __future__ import annotations

import typer

from vipu.cli import config_command, job_output
from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_detail import show
from vipu.cli.job_ids import IDS, IDS_HELP, act, finish, lines
from vipu.cli.job_selection import split


def register(app: typer.Typer) -> None:
    def bulk(command: str, rpc: str, verb: str, doc: str):
        @app.command(command, context_settings=IDS)
        def action(ctx: typer.Context,
                   ids: list[str] = typer.Argument(..., help=IDS_HELP),
                   json_out: bool = JsonOption):
            cli = ctx.obj
            as_json = cli.wants_json(json_out)
            finish(*act(cli, rpc, verb, ids, as_json), as_json)

        action.__doc__ = doc

    @app.command("hold", context_settings=IDS)
    def hold_jobs(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(..., help=IDS_HELP),
        admin: bool = typer.Option(
            False, "--admin",
            help="an admin hold (JobHeldAdmin): needs an admin (without --secure every caller is one), and only"
                 " an admin can release it",
        ),
        json_out: bool = JsonOption,
    ):
        """Hold pending jobs (scontrol hold): they wait with reason JobHeldUser, or JobHeldAdmin with --admin."""
        cli = ctx.obj
        as_json = cli.wants_json(json_out)
        finish(*act(cli, "HoldJobs", "held", ids, as_json, admin=admin), as_json)

    bulk("release", "ReleaseJobs", "released",
         "Release held jobs (scontrol release); an admin hold (JobHeldAdmin) only by an admin.")
    @app.command("requeue", context_settings=IDS)
    def requeue_jobs(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(..., help=IDS_HELP),
        hold: bool = typer.Option(False, "--hold",
                                  help="hold each job requeued too, in the same call (scontrol requeuehold): it"
                                       " waits JobHeldUser until vipu release"),
        json_out: bool = JsonOption,
    ):
        """Put running jobs, or jobs that ended COMPLETED, FAILED, TIMEOUT, NODE_FAIL or PREEMPTED (not CANCELLED:
        submit those again), back in the queue under the same id; an array job: its tasks that are not pending.
        A running job's run ends REQUEUED, as `vipu history -D` shows it."""
        cli = ctx.obj
        as_json = cli.wants_json(json_out)
        finish(*act(cli, "RequeueJobs", "requeued and held" if hold else "requeued", ids, as_json, hold=hold),
               as_json)

    @app.command(context_settings=IDS)
    def logs(ctx: typer.Context,
             id: str = typer.Argument(..., help="job id: N, N_T for task T of array N, or an array's N: every task,"
                                                " each under a line naming it (==> job N_T <==)"),
             follow: bool = typer.Option(
                 False, "-f", "--follow",
                 help="print what is there, then new output as it comes until the job ends (a pending job: once it"
                      " starts), then how it ended (state and exit code, on stderr, as a pending job's reason: stdout"
                      " is the output alone), and exit 0; Ctrl-C exits 130. A line the"
                      " program has not ended yet shows as far as it has come, as tail -f shows it (a progress bar's"
                      " carriage returns too; --json: whole lines only). An array:"
                      " every task's, each under a line naming it, until all have ended. With --json: one JSON"
                      " object per line, {job, line} for each line, {job, state, reason} when pending and again each"
                      " time the reason changes (a text line too), {job, state,"
                      " exit_code, signal} at the end"),
             json_out: bool = JsonOption):
        """A job's output: a program's (the end of its output file, then the steps it reported through vipu.sdk),
        or a training job's loss per step, emulated step time on the real Pod, and per-IPU utilisation and SRAM.

        Each step line splits the emulated step into the parts `vipu plan` predicts, in its order and by
        its names (compute, pipeline bubble, tensor-parallel collectives, pipeline sends, batch-norm
        statistics, syncs, data-parallel allreduce, streaming memory, host I/O), then comm and the bubble's share.

        A requeued job's current run, below a line on how each earlier run ended.

        --json: the run as data (run, environment, earlier_runs, steps, result, error, ended) and the lines; an
        array's: {job, tasks}, tasks holding one such object per task."""
        cli = ctx.obj
        job_output.logs(cli, id, cli.wants_json(json_out), follow)

    config_command.register(show)
    app.add_typer(show, name="show")
