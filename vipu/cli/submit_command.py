"""`vipu submit`'s command line as typer reads it; what it sends is submit.py's."""

from __future__ import annotations

import typer

from vipu.cli.context import JSON_HELP
from vipu.cli.slurm_time import FORMS
from vipu.cli.submit import submit_jobs


def register(app: typer.Typer) -> None:
    @app.command()
    def submit(
        ctx: typer.Context,
        specs: list[str] = typer.Argument(
            None, metavar="[SCRIPT [ARGS]... | SPEC...]", show_default=False,
            help="a batch script (its first line #!) and its arguments (after -- if they start with -); or YAML or"
                 " JSON job specs, each its own job, all queued or none ('-' reads one, or a script, from stdin);"
                 " omit to use the flags"),
        name: str = typer.Option(None, "--job-name", "-J", "--name", help="job name (a script's: its file name)"),
        ipus: int = typer.Option(None, "--ipus", help="IPUs: a power of two"),
        time: str = typer.Option(None, "--time", "-t", help=f"time limit as sbatch reads it: {FORMS}"),
        time_limit: str = typer.Option(None, "--time-limit", help="e.g. 90s, 10m, 1h30m, 1-00:00:00: a unit or"
                                       " colons, never a bare number (-t/--time reads 90 as minutes)"),
        duration: str = typer.Option(None, "--duration", help="a sleep workload of this length (e.g. 30s)"),
        wrap: str = typer.Option(None, "--wrap", help="run this shell command: a batch script of #!/bin/sh and it"
                                 " (sbatch --wrap)"),
        qos: str = typer.Option(None, "--qos", "-q"),
        user: str = typer.Option(None, "--user"),
        account: str = typer.Option(None, "--account", "-A"),
        nice: int = typer.Option(None, "--nice"),
        dependency: str = typer.Option(None, "--dependency", "-d", help="afterok:ID,afterany:ID,afternotok:ID,singleton"),
        array: str = typer.Option(None, "--array", "-a", help="e.g. 0-99%10"),
        hold: bool = typer.Option(None, "--hold/--no-hold", "-H", help="submit held (release with vipu release)"),
        begin: str = typer.Option(
            None, "--begin", "-b",
            help="not before this time (BeginTime), as sbatch takes it: 16:00, teatime, tomorrow, 11/22-16:00,"
                 " now+10m, now+1hour, now+90 (seconds), or ISO-8601 like 2026-11-22T14:00:00 (local time unless it"
                 " ends in Z or +01:00)",
        ),
        requeue: bool = typer.Option(None, "--requeue/--no-requeue", help="requeue after a node failure"),
        allocation: str = typer.Option(None, "--allocation", "--partition", "-p",
                                       help="V-IPU allocation to run in (Slurm's partition)"),
        nodelist: str = typer.Option(None, "--nodelist", "-w",
                                     help="IPU-Machines (nodes, vipu info -N) the job must hold, a host list such as"
                                          " ag[00-01]; more with more IPUs: the aligned block of its size around"
                                          " them"),
        exclude: str = typer.Option(None, "--exclude", "-x", help="IPU-Machines the job must not run on, e.g."
                                    " ag[02-03]"),
        output: str = typer.Option(None, "--output", "-o",
                                   help="the job's output file, relative to its working directory; %j job id, %A"
                                        " array job, %a task, %x name, %u user, %J id and step, %N first"
                                        " IPU-Machine (see the spec); the controller writes it, never over a file"
                                        " it did not write for this job or an earlier one of yours (but"
                                        " --open-mode=append adds to a file of your own)"),
        error_file: str = typer.Option(None, "--error", "-e",
                                       help="a batch script's stderr (default: with its output); patterns as -o"),
        chdir: str = typer.Option(None, "--chdir", "-D", help="a batch script's working directory (default: here)"),
        export: str = typer.Option(None, "--export", help="the environment a batch script gets: ALL (default), NONE,"
                                   " or ALL,VAR=value,... or VAR1,VAR2=value (only those), as sbatch"),
        request_id: str = typer.Option(None, "--request-id", help="a retry with the same id never queues twice (with"
                                       " several specs, each gets ID/1, ID/2, ...)"),
        parsable: bool = typer.Option(False, "--parsable",
                                      help="print only the job id (an array's: its first task's), as sbatch"
                                           " --parsable, e.g. jid=$(vipu submit --parsable ...)"),
        test_only: bool = typer.Option(
            False, "--test-only",
            help="queue nothing: check the job and print when it would start if queued now (sbatch --test-only)"),
        json_out: bool = typer.Option(
            False, "--json", "--showjson",
            help=f"{JSON_HELP}: job_ids (every job), duplicate (all were queued before, by these request ids), jobs"
                 " (job_ids and duplicate per spec)"),
        open_mode: str = typer.Option(None, "--open-mode",
                                      help="a batch script's output and error files: truncate (the default: each run"
                                           " starts them afresh) or append (each run adds to them; a file of your"
                                           " own from before is added to, where truncate refuses it)"),
        comment: str = typer.Option(None, "--comment", help="accepted with a warning: not kept"),
        mail_type: str = typer.Option(None, "--mail-type", help="accepted with a warning: no mail is sent"),
        mail_user: str = typer.Option(None, "--mail-user", help="accepted with a warning: no mail is sent"),
        time_min: str = typer.Option(None, "--time-min", help="accepted with a warning: the whole -t limit holds"),
        exclusive: bool = typer.Option(False, "--exclusive",
                                       help="accepted with a warning: a job's IPUs are always its own"),
        nodes: str = typer.Option(None, "--nodes", "-N", help="refused: give --ipus N"),
        ntasks: str = typer.Option(None, "--ntasks", "-n",
                                   help="1 only (a job runs its script once); more is refused: start processes in the"
                                        " script with poprun --num-instances N"),
        ntasks_per_node: str = typer.Option(None, "--ntasks-per-node", help="1 only, as -n/--ntasks"),
        cpus_per_task: str = typer.Option(None, "--cpus-per-task", "-c",
                                          help="accepted with a warning: no host CPUs are allotted"),
        mem: str = typer.Option(None, "--mem", help="accepted with a warning: no host memory is allotted"),
        mem_per_cpu: str = typer.Option(None, "--mem-per-cpu", help="accepted with a warning, as --mem"),
        gres: str = typer.Option(None, "--gres", help="refused: give --ipus N (--gres=ipu:4 is --ipus 4)"),
        priority: str = typer.Option(None, "--priority",
                                     help="refused: an admin sets it after the submit (vipu update job)"),
        signal: str = typer.Option(None, "--signal", help="refused: no signal before the time limit here"),
        kill_on_invalid_dep: str = typer.Option(None, "--kill-on-invalid-dep",
                                                help="no (the default, and all there is here); yes is refused"),
    ):
        """Queue a job (sbatch): a batch script, a command (--wrap), spec files, or the flags alone. Prints the job
        id.

        A batch script's #SBATCH lines before its first command are read as sbatch reads them; the flags win over
        them, and sbatch's input variables (SBATCH_JOB_NAME, SBATCH_TIMELIMIT, ...) come between: a flag wins over
        its variable, the variable over the #SBATCH line. Several spec files: a job each, in one call, all queued or
        none (a refusal names its file); flags apply to all."""
        submit_jobs(
            ctx.obj, specs, name=name, ipus=ipus, time=time, time_limit=time_limit, duration=duration, wrap=wrap,
            qos=qos, user=user, account=account, nice=nice, dependency=dependency, array=array, hold=hold,
            begin=begin, requeue=requeue, allocation=allocation, nodelist=nodelist, exclude=exclude, output=output,
            error_file=error_file, chdir=chdir, export=export, request_id=request_id, parsable=parsable, test_only=test_only, json_out=json_out,
            open_mode=open_mode, comment=comment, mail_type=mail_type, mail_user=mail_user, time_min=time_min,
            exclusive=exclusive, nodes=nodes, ntasks=ntasks, ntasks_per_node=ntasks_per_node,
            cpus_per_task=cpus_per_task, mem=mem, mem_per_cpu=mem_per_cpu, gres=gres, priority=priority,
            signal=signal, kill_on_invalid_dep=kill_on_invalid_dep)
