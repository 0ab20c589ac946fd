"""`vipu priority`: each pending job's multifactor priority and its weighted factors, with sprio's options."""

from __future__ import annotations


import typer

from vipu.cli.context import JsonOption, ShortNoHeaderOption
from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_ids import IDS, PRIORITY_IDS_HELP, TaskIds, finish, graver, job_id, one_call_each
from vipu.cli.job_selection import job_ids, selected_users, split
from vipu.cli.nodes import DEFAULT_PARTITION
from vipu.cli.output import table
from vipu.cli.queue_listing import said
from vipu.cli.slurm_format import Column, percent_layout, render
from vipu.v1 import job_pb2 as j

JOBS = frozenset({"jobs"})  # needs the jobs themselves (account, QOS name, allocation)


class Row:
    """A job's factors, and the job when a field needs it."""

    def __init__(self, factors: j.PriorityFactors, job: j.Job | None):
        self.factors, self.job = factors, job

    @property
    def allocation(self) -> str:
        return (self.job.spec.allocation if self.job is not None else "") or DEFAULT_PARTITION


def _weighted(name: str):
    return lambda r: f"{getattr(r.factors, name):.0f}"


# man sprio's letters for the factors vipu-sim weighs; the ones it does not (admin/site, association, partition,
# TRES) are 0 as sprio shows a factor of weight 0
LETTERS: dict[str, Column] = {
    "i": Column("JOBID", lambda r: job_id(r.factors)),
    "u": Column("USER", lambda r: r.factors.user),
    "Y": Column("PRIORITY", _weighted("priority")),
    "A": Column("AGE", _weighted("age")),
    "F": Column("FAIRSHARE", _weighted("fairshare")),
    "J": Column("JOBSIZE", _weighted("job_size")),
    "Q": Column("QOS", _weighted("qos")),
    "N": Column("NICE", _weighted("nice")),
    "S": Column("SITE", lambda r: "0"),
    "B": Column("ASSOC", lambda r: "0"),
    "P": Column("PARTITION", lambda r: "0"),
    "T": Column("TRES", lambda r: ""),
    "r": Column("PARTITION", lambda r: r.allocation, needs=JOBS),
    "o": Column("ACCOUNT", lambda r: r.job.account if r.job else "", needs=JOBS),
    "n": Column("QOSNAME", lambda r: r.job.qos if r.job else "", needs=JOBS),
}
LONG = "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N %.20T"  # sprio -l


def factors(cli, ids: list[str]) -> tuple[list[j.PriorityFactors], int]:
    """The factors of every pending job, or of the jobs `ids` name, highest priority first, and the exit code of
    the gravest failure (a line printed for each id that names no pending job)."""
    targets, failed = TaskIds(cli).resolve_all(ids)
    method = cli.conn.jobs.Priorities
    found = [] if ids else list(cli.conn.every_page(method, j.PrioritiesRequest()).jobs)  # every pending job
    for single in (False, True):  # a call for the ids of each kind (single: a task, not a whole array)
        wanted = [job for job, one in targets if one is single]
        reply = cli.conn.attempt(method, j.PrioritiesRequest(ids=wanted, single=single)) if wanted else None
        if reply is not None:
            found += reply.jobs
            if reply.next_page_token:  # an array's thousands of tasks: the pages after the first
                rest = j.PrioritiesRequest(ids=wanted, single=single, page_token=reply.next_page_token)
                found += cli.conn.every_page(method, rest).jobs
        elif wanted:  # refused, one of them not pending (or not the caller's): a call each, each refusal its line
            alone, code = one_call_each(cli, method, [(job, single) for job in wanted], j.PrioritiesRequest)
            found += [x for rows in alone.values() for x in rows]
            failed = graver(failed, code)
    return sorted({r.job_id: r for r in found}.values(), key=lambda r: -r.priority), failed  # 26 and 26_3: once


def unknown_users(cli, users: list[str]) -> set[str]:
    """The users named that the controller knows nothing of, by squeue's rule (ListJobsResponse.unknown_users):
    sprio, as squeue, says "Invalid user" for each and goes on."""
    request = j.ListJobsRequest(users=users, brief=True, page_size=1)  # the first page says; one job is enough
    return set(cli.conn.call(cli.conn.jobs.ListJobs, request).unknown_users)


def register(app: typer.Typer) -> None:
    @app.command(context_settings=IDS)
    def priority(
        ctx: typer.Context,
        ids: list[str] = typer.Argument(None, help=PRIORITY_IDS_HELP),
        jobs: list[str] = typer.Option(None, "--jobs", "-j", help="the same as the ids, in a comma list (sprio -j)"),
        user: list[str] = typer.Option(None, "--user", "-u", help="only these users' jobs (a comma list)"),
        fmt: str = typer.Option(None, "--format", "-o", help="sprio's %-format (see below)"),
        long: bool = typer.Option(False, "--long", "-l", help=f"sprio -l's format, {LONG!r}"),
        weights: bool = typer.Option(False, "--weights", "-w",
                                     help="refused: the weights are vipu-server's --scheduler-config (see there)"),
        json_out: bool = JsonOption,
        no_header: bool = ShortNoHeaderOption,
    ):
        """Each pending job's priority and its weighted factors (sprio), highest first.

        Formats (-o): %i job id, %u user, %Y priority, %A age, %F fair-share, %J job size, %Q QOS, %N nice,
        %n QOS name, %o account, %r partition (the V-IPU allocation); %S, %B and %P are 0 and %T empty, the
        factors vipu-sim does not weigh; %.Nx right-justifies in N characters."""
        cli = ctx.obj
        if weights:
            fail("vipu", "-w/--weights: the controller does not report its priority weights; they are the"
                 " `weights:` of the --scheduler-config file vipu-server runs with (default age 1000, fairshare 1000,"
                 " job_size 100, qos 2000; docs/job-spec.md)", BAD_INPUT)
        if fmt is not None and long:
            fail("vipu", "-o/--format and -l/--long both given; -l is the format " + repr(LONG) + ": give one",
                 BAD_INPUT)
        given = fmt is not None  # -o '' is refused, not read as the default, as vipu queue refuses it
        layout = percent_layout(fmt if given else LONG, LETTERS, "-o/--format" if given else "-l/--long") \
            if given or long else None
        as_json = cli.wants_json(json_out)
        job_ids(jobs, "-j/--jobs")  # a malformed one named with its flag, as queue and history name it
        found, failed = factors(cli, (ids or []) + split(jobs))
        users = selected_users(user)
        if users:
            found = [r for r in found if r.user in users]
            said(users, unknown_users(cli, users))
        if as_json:
            finish(found, failed, as_json)
        header = cli.with_header(no_header)
        if layout is None:
            cells = [[job_id(r), r.user, f"{r.priority:.0f}", f"{r.age:.0f}", f"{r.fairshare:.0f}",
                      f"{r.job_size:.0f}", f"{r.qos:.0f}", f"{r.nice:.0f}"] for r in found]
            lines = table(["JOBID", "USER", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "QOS", "NICE"], cells,
                          header).splitlines()
        else:
            listed = {}
            if "jobs" in layout.needs and found:
                request = j.ListJobsRequest(ids=[r.job_id for r in found])
                listed = {x.id: x for x in cli.conn.every_page(cli.conn.jobs.ListJobs, request).jobs}
            lines = render(layout, [Row(r, listed.get(r.job_id)) for r in found], header)
        if lines and (found or not failed):
            print("\n".join(lines))
        raise typer.Exit(failed)
