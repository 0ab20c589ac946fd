"""`vipu update job ID Field=value ...` (scontrol update): Slurm's field names in any case, or the same changes as
flags; the controller checks who may change what (vipu/scheduler/updates.py)."""

from __future__ import annotations

import typer

from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, fail, refuse_empty
from vipu.cli.job_ids import IDS, MANY, TaskIds, finish, graver, job_id
from vipu.cli.params import INT32, INT64, WireInt, int64, nice_bound, priority_bound, throttle_bound
from vipu.cli.slurm_time import FORMS, UNLIMITED, slurm_limit, slurm_seconds
from vipu.client.messages import duration
from vipu.v1 import job_pb2 as j

# Slurm's field names, lower case -> the request's field
FIELDS = {"timelimit": "time_limit", "qos": "qos", "nice": "nice", "dependency": "dependency", "name": "name",
          "jobname": "name", "arraytaskthrottle": "array_task_throttle", "starttime": "begin", "begintime": "begin",
          "priority": "priority", "reqnodelist": "nodelist", "nodelist": "nodelist", "excnodelist": "exclude"}
SHOWN = {"time_limit": "TimeLimit", "time_limit_add": "TimeLimit", "time_limit_unlimited": "TimeLimit", "qos": "QOS",
         "nice": "Nice",
         "dependency": "Dependency", "name": "Name", "array_task_throttle": "ArrayTaskThrottle", "begin": "StartTime",
         "priority": "Priority", "nodelist": "ReqNodeList", "exclude": "ExcNodeList"}
NAMES = ("TimeLimit, QOS, Nice, Dependency, Name (JobName), ArrayTaskThrottle, StartTime, Priority, ReqNodeList"
         " (NodeList), ExcNodeList")
WHOLE = ("nice", "array_task_throttle", "priority")  # whole numbers
WIRE = {"nice": INT32, "array_task_throttle": INT32, "priority": INT64}  # the request's field's type
PAST = {"nice": nice_bound, "array_task_throttle": throttle_bound, "priority": priority_bound}  # as the flags say it


def time_limit(text: str, flag: str) -> dict:
    """TimeLimit=: Slurm's time as sbatch -t reads it (a bare number is minutes; UNLIMITED, INFINITE or 0: the
    longest the job's QOS allows), or +T / -T to add to or take from the current limit."""
    sign = text.strip()[:1]
    try:
        if sign in "+-" and sign:
            seconds = slurm_seconds(text.strip()[1:])
            return {"time_limit_add": duration(seconds if sign == "+" else -seconds)}
        limit = slurm_limit(text)
        return {"time_limit_unlimited": True} if limit == UNLIMITED else {"time_limit": duration(limit)}
    except ValueError as e:
        fail("vipu", f"{flag}: {e}; or +T / -T to add or take off time", BAD_INPUT)


def whole(text: str, flag: str, field: str) -> int:
    try:
        number = int(text.strip())
    except ValueError:
        fail("vipu", f"{flag} {text!r} is not a whole number; give e.g. {flag.split('=')[0]}=10", BAD_INPUT)
    low, high = WIRE[field]
    if not low <= number <= high:  # the request could not carry it: the controller's bound, not the wire's
        fail("vipu", f"{flag} {number} is {PAST[field](number, None)}", BAD_INPUT)
    return number


def field_values(pairs: list[str]) -> dict:
    """The request's fields from Field=value words (field names in any case)."""
    out: dict = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        field = FIELDS.get(key.strip().lower())
        if not eq or not key.strip():
            fail("vipu", f"{pair!r} is not Field=value; give e.g. TimeLimit=30 or QOS=high ({NAMES})", BAD_INPUT)
        if field is None:
            fail("vipu", f"{key!r} is not a field vipu update job changes; give one of {NAMES}", BAD_INPUT)
        if field == "name" and not value.strip():
            refuse_empty(f"{key}=", f"the job a name, e.g. {key}=job1")
        given = time_limit(value, f"{key}=") if field == "time_limit" else \
            {field: whole(value, f"{key}=", field) if field in WHOLE else value}
        again = shown(given) & shown(out)
        if again:
            fail("vipu", f"{again.pop()} is given twice; give each field once", BAD_INPUT)
        out.update(given)
    return out


def shown(fields: dict) -> set[str]:
    """The fields by Slurm's names (TimeLimit for a value and a change alike)."""
    return {SHOWN[f] for f in fields}


def target(words: list[str]) -> tuple[str, list[str]]:
    """The job id and the Field=value words: `job ID ...` or `JobId=ID ...` (scontrol's own form)."""
    if not words:
        fail("vipu", "name the job: vipu update job ID Field=value ... (e.g. vipu update job 12 TimeLimit=30)",
             BAD_INPUT)
    first, rest = words[0], words[1:]
    key, eq, value = first.partition("=")
    if eq and key.strip().lower() in ("jobid", "job"):
        return value, rest
    if first.lower() == "job" and rest:
        return rest[0], rest[1:]
    fail("vipu", f"{first!r}: vipu update changes jobs; give `job ID` or JobId=ID first, then Field=value pairs",
         BAD_INPUT)


def register(app: typer.Typer) -> None:
    @app.command(context_settings=IDS)
    def update(
        ctx: typer.Context,
        words: list[str] = typer.Argument(None, metavar="job ID [Field=value]...", show_default=False,
                                          help="the job (N, N_T or N_[A-B,C], or a comma list) and the fields"
                                               f" to change: {NAMES}; names in any case, as scontrol's; also"
                                               " JobId=ID first"),
        time: str = typer.Option(None, "--time", "-t", help=f"TimeLimit, as sbatch reads it: {FORMS}; +T or -T"
                                 " adds or takes off time"),
        qos: str = typer.Option(None, "--qos", "-q", help="QOS"),
        nice: int = typer.Option(None, "--nice", click_type=WireInt(past=nice_bound), help="Nice (negative: admins"
                                 " only)"),
        dependency: str = typer.Option(None, "--dependency", "-d", help="Dependency (\"\" removes it)"),
        name: str = typer.Option(None, "--job-name", "-J", "--name", help="Name"),
        begin: str = typer.Option(None, "--begin", "-b", help="StartTime: not before then (as vipu submit --begin)"),
        priority: int = typer.Option(None, "--priority", click_type=int64(past=priority_bound), help="Priority,"
                                     " admins only: a fixed priority; 0 holds the job"),
        throttle: int = typer.Option(None, "--array-task-throttle", click_type=WireInt(past=throttle_bound),
                                     help="ArrayTaskThrottle: an array's tasks at once (its %N); 0 removes the"
                                     " limit"),
        nodelist: str = typer.Option(None, "--nodelist", "-w", help="ReqNodeList: as vipu submit -w (\"\" removes"
                                     " it)"),
        exclude: str = typer.Option(None, "--exclude", "-x", help="ExcNodeList: as vipu submit -x (\"\" removes it)"),
        json_out: bool = JsonOption,
    ):
        """Change a job (scontrol update job): its time limit, QOS, nice, dependency, name, array throttle, begin
        time, node list, excluded nodes or (admins) priority.

        A pending job takes every field; a running job TimeLimit, which its owner may lower (a limit it has run
        past ends it at once, TIMEOUT) and only an admin may raise, Name and Nice. An array job's id changes each of
        its tasks not ended (fields other than TimeLimit, Name and Nice: its pending tasks). Priority=0 holds the job (JobHeldAdmin), as
        scontrol's does; a fixed priority releases it. Each change is kept durably and shown by `vipu show job`."""
        cli = ctx.obj
        text, pairs = target(words or [])
        fields = field_values(pairs)
        flags = {"qos": qos, "nice": nice, "dependency": dependency, "name": name, "begin": begin,
                 "priority": priority, "array_task_throttle": throttle, "nodelist": nodelist, "exclude": exclude}
        flagged = {k: v for k, v in flags.items() if v is not None}
        if name is not None and not name.strip():
            refuse_empty("-J/--job-name", "the job a name, e.g. -J job1")
        if time is not None:
            flagged.update(time_limit(time, "-t/--time"))
        both = sorted(shown(flagged) & shown(fields))
        if both:
            fail("vipu", f"{both[0]} is given as a flag and as {both[0]}=; give it once", BAD_INPUT)
        fields.update(flagged)
        if not fields:
            fail("vipu", f"nothing to change; give Field=value pairs ({NAMES}), e.g. TimeLimit=30", BAD_INPUT)
        as_json = cli.wants_json(json_out)
        targets, failed = TaskIds(cli).resolve_all([text])
        done: list[j.Job] = []
        changed = ", ".join(dict.fromkeys(SHOWN[f] for f in fields))
        for job, single in targets:
            try:
                reply = cli.conn.call(cli.conn.jobs.UpdateJob, j.UpdateJobRequest(id=job, single=single, **fields))
            except SystemExit as e:  # the call printed the line naming the job: on to the next
                failed = graver(failed, e.code)
                continue
            done += reply.jobs
            if not as_json and len(reply.jobs) > MANY:  # an array's thousands of tasks: one line
                print(f"{len(reply.jobs)} jobs updated ({changed})")
            for x in [] if as_json or len(reply.jobs) > MANY else reply.jobs:
                print(f"Job {job_id(x)} updated ({changed}): {x.state}")
        finish(done, failed, as_json)
