"""Shell completion for bash and zsh: commands, flags and job states from the CLI itself, job ids, partition names
and QOS names from the controller.

Why names come from the controller with a short deadline: completion runs at every Tab, so it makes one listing
call and gives up after half a second; a controller that does not answer leaves the shell's own completion.

Why the completers are attached here by parameter name rather than where each command is declared: every job id
argument, present and future, gets the same completer without each command having to remember it.
"""

from __future__ import annotations

import re

import typer

from vipu.scheduler.job_states import REQUEUABLE, JobState

SHELLS = ("bash", "zsh")
DEADLINE_S = 0.5
JOB_ID_PARAMS = ("id", "ids")  # the argument names of the commands that take job ids (job_ids.py)
PARTITION_COMMANDS = ("get partition", "remove partition", "reset partition")
ACTIVE = ("PENDING", "RUNNING")
# scontrol update's fields as `vipu update job ID` takes them (update_command.py's FIELDS, in scontrol's spelling)
UPDATE_FIELDS = ("TimeLimit=", "QOS=", "Nice=", "Dependency=", "Name=", "ArrayTaskThrottle=", "StartTime=",
                 "Priority=")
# typer's bash function with two changes. bash splits a word at ':' (afterok:12 reaches the function as afterok, :,
# 12): such words are joined again for the CLI, and its replies cut back to what follows the last ':', the part bash
# replaces. A completion ending in = or : (TimeLimit=, afterok:) takes its value right after it: no space is added.
BASH = """_{func}_completion() {{
    local IFS=$'\\n'
    local words=() w
    for w in "${{COMP_WORDS[@]:0:COMP_CWORD+1}}"; do
        if [[ ${{#words[@]}} -gt 1 && ( $w == : || ${{words[-1]}} == *: ) ]]; then words[-1]+=$w; else words+=("$w"); fi
    done
    COMPREPLY=( $( env COMP_WORDS="${{words[*]}}" \\
                   COMP_CWORD=$(( ${{#words[@]}} - 1 )) \\
                   {var}=complete_bash $1 ) )
    local cur=${{COMP_WORDS[COMP_CWORD]}} joined=${{words[-1]}}
    if [[ $joined != "$cur" && $joined == *:* ]]; then COMPREPLY=( "${{COMPREPLY[@]#"${{joined%:*}}:"}}" ); fi
    [[ ${{#COMPREPLY[@]}} -eq 1 && ${{COMPREPLY[0]}} == *[=:] ]] && compopt -o nospace 2>/dev/null
    return 0
}}

complete -o default -F _{func}_completion {prog}
"""


def _connection(prog: str):
    from vipu.cli.connection import Connection, resolve

    return Connection(prog, resolve(prog), timeout=DEADLINE_S)


def _ask(prog: str, service: str, method: str, request):
    """One call with completion's deadline, or None: an unreachable or refusing controller completes nothing."""
    conn = _connection(prog)
    try:
        return getattr(getattr(conn, service), method)(request, timeout=DEADLINE_S, metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - as said
        return None


def my_jobs(prog: str, states: tuple[str, ...] = ACTIVE, history: bool = False) -> list:
    """The caller's jobs in `states`; `history`: from sacct's listing, which has ended jobs too."""
    from vipu.v1 import job_pb2 as j

    conn = _connection(prog)
    kind, method = (j.HistoryRequest, conn.jobs.History) if history else (j.ListJobsRequest, conn.jobs.ListJobs)
    request = kind(me=True, states=list(states), brief=True, page_size=1000)  # as the controller knows me
    try:
        return list(method(request, timeout=DEADLINE_S, metadata=conn.metadata()).jobs)
    except Exception:  # noqa: BLE001 - an unreachable or refusing controller completes nothing
        return []


def my_job_ids(prog: str, states: tuple[str, ...] = ACTIVE, held: bool | None = None,
               history: bool = False) -> list[str]:
    """The caller's jobs in `states` (with `held`, only those held, or only those not): N for a job, and for an
    array its id N once and each task as N_T (a task's own id is another name of N_T, so it is not offered as
    well). `history`: from sacct's listing, which has ended jobs too."""
    return named([x for x in my_jobs(prog, states, history) if held is None or x.held is held])


def named(jobs) -> list[str]:
    names = []
    for x in jobs:
        if x.HasField("array_job_id"):
            names += [str(x.array_job_id), f"{x.array_job_id}_{x.array_task_id}"]
        else:
            names.append(str(x.id))
    return list(dict.fromkeys(names))


def _prog(ctx) -> str:
    return ctx.find_root().info_name or "vipu"


def job_ids(ctx, param, incomplete: str) -> list[str]:
    return [n for n in my_job_ids(_prog(ctx)) if n.startswith(incomplete)]


def pending_ids(ctx, param, incomplete: str) -> list[str]:
    """`vipu hold`: only pending jobs not held yet can be held."""
    return [n for n in my_job_ids(_prog(ctx), ("PENDING",), held=False) if n.startswith(incomplete)]


def held_ids(ctx, param, incomplete: str) -> list[str]:
    """`vipu release`: only held jobs can be released."""
    return [n for n in my_job_ids(_prog(ctx), ("PENDING",), held=True) if n.startswith(incomplete)]


def any_ids(ctx, param, incomplete: str) -> list[str]:
    """`vipu logs`, `vipu show job`: ended jobs too (an ended job's output is what one most often reads)."""
    return [n for n in my_job_ids(_prog(ctx), tuple(s.value for s in JobState), history=True)
            if n.startswith(incomplete)]


def requeue_ids(ctx, param, incomplete: str) -> list[str]:
    """`vipu requeue`: running jobs and those whose run ended as requeue takes (not pending, not cancelled)."""
    wanted = tuple(s.value for s in JobState if s in REQUEUABLE)
    return [n for n in my_job_ids(_prog(ctx), wanted, history=True) if n.startswith(incomplete)]


def waiting_ids(ctx, param, incomplete: str) -> list[str]:
    """`vipu priority`: only pending jobs not held have a priority to show (sprio leaves held ones out)."""
    return in_list(my_job_ids(_prog(ctx), ("PENDING",), held=False), incomplete)


def in_list(words: list[str], incomplete: str) -> list[str]:
    """Completions of the last item of a comma list (-j 3,4<Tab>, -t PD,R<Tab>), each with the items before it."""
    head, comma, tail = incomplete.rpartition(",")
    given = {w.upper() for w in head.split(",")} if comma else set()
    return [f"{head}{comma}{w}" for w in words if w.upper().startswith(tail.upper()) and w.upper() not in given]


def queue_ids(ctx, param, incomplete: str) -> list[str]:
    return in_list(my_job_ids(_prog(ctx)), incomplete)


def history_ids(ctx, param, incomplete: str) -> list[str]:
    return in_list(my_job_ids(_prog(ctx), tuple(s.value for s in JobState), history=True), incomplete)


def states(ctx, param, incomplete: str) -> list[str]:
    return in_list([*(s.value for s in JobState), "all"], incomplete)


def active_states(ctx, param, incomplete: str) -> list[str]:
    """`vipu cancel -t`: only the states of jobs that can be cancelled."""
    return in_list(list(ACTIVE), incomplete)


def signal_names(ctx, param, incomplete: str) -> list[str]:
    """`vipu cancel -s`: the signals by name as scancel's man page writes them (USR1), with SIG if typed so."""
    import signal

    prefix = "SIG" if incomplete.upper().startswith("SIG") else ""
    names = [prefix + s.name[3:] for s in signal.Signals if s.name.startswith("SIG") and "_" not in s.name]
    return [n for n in names if n.startswith(incomplete.upper())]


def qos_names(ctx, param, incomplete: str) -> list[str]:
    """The QOS the controller has (a job asks for one with -q)."""
    from vipu.v1 import job_pb2 as j

    reply = _ask(_prog(ctx), "jobs", "ClusterInfo", j.ClusterInfoRequest())
    return [q for q in reply.qos if q.startswith(incomplete)] if reply else []


def update_words(ctx, param, incomplete: str) -> list[str]:
    """`vipu update`'s words: `job` (or JobId=), then the caller's job ids, then the Field= names not given yet.

    bash splits a word at `=` (TimeLimit=30 reaches here as TimeLimit, =, 30), zsh does not: the words are joined
    again before they are read."""
    given = re.sub(r"\s*=\s*", "=", " ".join(ctx.params.get(param.name) or [])).split()
    if "=" in incomplete:  # zsh: JobId=1<Tab>; of the fields' values only QOS= is completed
        key, _, value = incomplete.partition("=")
        return [f"{key}={n}" for n in field_values(ctx, param, key, value, first=not given)]
    if given and given[-1].endswith("="):  # bash: JobId= 1<Tab>
        return field_values(ctx, param, given[-1][:-1], incomplete, first=len(given) == 1)
    if not given:
        return [w for w in ("job", "JobId=") if w.lower().startswith(incomplete.lower())]
    if [w.lower() for w in given] == ["job"]:
        return job_ids(ctx, param, incomplete)
    named = {w.partition("=")[0].lower() for w in given}
    return [f for f in UPDATE_FIELDS if f[:-1].lower() not in named and f.lower().startswith(incomplete.lower())]


def field_values(ctx, param, key: str, incomplete: str, first: bool) -> list[str]:
    """The values `vipu update` offers after Field=: job ids after a first JobId=, QOS names after QOS=."""
    if key.lower() == "jobid":
        return job_ids(ctx, param, incomplete) if first else []
    return qos_names(ctx, param, incomplete) if key.lower() == "qos" else []


def user_names(ctx, param, incomplete: str) -> list[str]:
    """`-u`: the users whose jobs the caller may see queued (sprio's: those with a pending job), in a comma list."""
    from vipu.v1 import job_pb2 as j

    conn = _connection(_prog(ctx))
    states = ["PENDING"] if _prog_path(ctx) == "priority" else list(ACTIVE)
    try:
        reply = conn.jobs.ListJobs(j.ListJobsRequest(states=states, brief=True, page_size=1000), timeout=DEADLINE_S,
                                   metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - as above
        return []
    return in_list(sorted({x.user for x in reply.jobs}), incomplete)


def _prog_path(ctx) -> str:
    return ctx.info_name or ""


def sort_letters(ctx, param, incomplete: str) -> list[str]:
    """`vipu queue -S`: squeue's field letters, each after a - (descending) or + if one is typed, in a comma list."""
    from vipu.cli.queue_fields import LETTERS

    head, comma, tail = incomplete.rpartition(",")
    sign = tail[:1] if tail[:1] in ("+", "-") else ""
    return [f"{head}{comma}{sign}{k}" for k in sorted(LETTERS) if (sign + k).startswith(tail)]


def field_names(ctx, param, incomplete: str) -> list[str]:
    """`vipu queue -O`: squeue's field names, in a comma list."""
    from vipu.cli.queue_fields import NAMES

    return in_list(sorted(NAMES), incomplete)


def dependencies(ctx, param, incomplete: str) -> list[str]:
    """`vipu submit -d`: the kinds (afterok:, singleton), then after a kind the caller's job ids, ':' between them;
    clauses joined by ',' (all of) or '?' (any of)."""
    from vipu.scheduler.deps import KINDS

    cut = max(incomplete.rfind(","), incomplete.rfind("?")) + 1
    head, clause = incomplete[:cut], incomplete[cut:]
    if ":" not in clause:
        return [f"{head}{k}" + ("" if k == "singleton" else ":") for k in KINDS if k.startswith(clause.lower())]
    before, _, last = clause.rpartition(":")
    given = set(before.split(":")[1:])
    ids = named(can_satisfy(my_jobs(_prog(ctx), tuple(s.value for s in JobState), history=True),
                            before.split(":")[0].lower()))
    return [f"{head}{before}:{n}" for n in ids if n.startswith(last) and n not in given]


def can_satisfy(jobs, kind: str) -> list:
    """The jobs a dependency of this kind may still name: those not ended, and those that ended in the last
    MinJobAge seconds (still in the controller's queue, as Slurm keeps them) in a way that meets the kind: afterok
    and aftercorr COMPLETED, afternotok any other end, after and afterany any end. A job long ended is left out."""
    import time

    from vipu.cli.queue_listing import MIN_JOB_AGE
    from vipu.client.messages import seconds

    recent = time.time() - MIN_JOB_AGE
    kept = []
    for x in jobs:
        if x.state in ("PENDING", "RUNNING", "COMPLETING"):
            kept.append(x)
        elif x.HasField("ended") and seconds(x.ended) >= recent and (
                kind not in ("afterok", "aftercorr", "afternotok")
                or (x.state == "COMPLETED") == (kind != "afternotok")):
            kept.append(x)
    return kept


def job_names(ctx, param, incomplete: str) -> list[str]:
    """`-n`/`--name` of queue and cancel: the names of the caller's queued jobs, in a comma list."""
    return in_list(sorted({x.name for x in my_jobs(_prog(ctx))}), incomplete)


def allocation_names(ctx, param, incomplete: str) -> list[str]:
    """`-p`: the V-IPU allocations (Slurm's partitions), `default` among them, in a comma list."""
    from vipu.cli.nodes import DEFAULT_PARTITION
    from vipu.v1 import partition_pb2 as p

    reply = _ask(_prog(ctx), "partitions", "ListAllocations", p.ListAllocationsRequest())
    return in_list(sorted({DEFAULT_PARTITION, *(a.name for a in reply.allocations)}), incomplete) if reply else []


def sacct_fields(ctx, param, incomplete: str) -> list[str]:
    """`vipu history -o`: sacct's field names, in a comma list."""
    from vipu.cli.accounting import FIELDS

    return in_list(sorted(FIELDS, key=str.lower), incomplete)


def partition_names(ctx, param, incomplete: str) -> list[str]:
    from vipu.v1 import partition_pb2 as p

    reply = _ask(_prog(ctx), "partitions", "ListPartitions", p.ListPartitionsRequest())
    return [x.name for x in reply.partitions if x.name.startswith(incomplete)] if reply else []


def init(command) -> None:
    """Ready click's completion for this run: typer's shells, zsh's descriptions kept to one line each, and the
    completers attached."""
    from typer._completion_classes import ZshComplete, add_completion_class, completion_init

    class OneLineZsh(ZshComplete):
        """zsh reads the completions as lines: a help typer wrapped (its rich rendering breaks long lines) is put
        back on one."""

        def format_completion(self, item) -> str:
            return re.sub(r"\s*\n\s*", " ", super().format_completion(item))

    completion_init()
    add_completion_class(OneLineZsh, "zsh")
    attach(command)


def attach(command, path: str = "") -> None:
    """Give every job id argument and partition name argument under `command` its completer, and the options
    that take job ids, states or a QOS theirs."""
    for param in command.params:
        if param.param_type_name != "argument":
            found = OPTIONS.get((path, param.name))
            if found is not None:
                param._custom_shell_complete = found
        elif param.name == "words" and path == "update":
            param._custom_shell_complete = update_words
        elif param.name in JOB_ID_PARAMS:
            # click's hook for a parameter's own completion
            param._custom_shell_complete = {"hold": pending_ids, "release": held_ids, "requeue": requeue_ids,
                                            "priority": waiting_ids, "logs": any_ids,
                                            "show job": any_ids}.get(path, job_ids)
        elif param.name == "name" and path in PARTITION_COMMANDS:
            param._custom_shell_complete = partition_names
    for name, sub in getattr(command, "commands", {}).items():
        attach(sub, f"{path} {name}".strip())


# (command, option's parameter name) -> its completer
OPTIONS = {("queue", "jobs"): queue_ids, ("history", "jobs"): history_ids, ("queue", "state"): states,
           ("history", "state"): states, ("cancel", "state"): active_states, ("submit", "qos"): qos_names,
           ("cancel", "qos"): qos_names, ("cancel", "signal"): signal_names, ("priority", "jobs"): waiting_ids,
           ("update", "qos"): qos_names, ("queue", "user"): user_names, ("priority", "user"): user_names,
           ("cancel", "user"): user_names, ("queue", "sort"): sort_letters, ("queue", "names"): field_names,
           ("submit", "dependency"): dependencies, ("update", "dependency"): dependencies,
           ("history", "fmt"): sacct_fields, ("cancel", "name"): job_names, ("queue", "name"): job_names,
           ("cancel", "partition"): allocation_names, ("submit", "allocation"): allocation_names,
           ("queue", "partition"): allocation_names, ("info", "partition"): allocation_names,
           ("queue", "qos"): qos_names}


def script(prog: str, shell: str) -> str:
    """The completion script of `shell` for `prog`: both call the same completers (this module's, through click's
    protocol), bash through BASH and zsh through typer's script."""
    from typer._completion_shared import get_completion_script

    func, var = prog.replace("-", "_"), f"_{prog.replace('-', '_').upper()}_COMPLETE"
    if shell == "bash":
        return BASH.format(func=func, var=var, prog=prog)
    return get_completion_script(prog_name=prog, complete_var=var, shell=shell)


def register(app: typer.Typer, prog: str) -> None:
    def completion(shell: str = typer.Argument(..., help="bash or zsh")):
        from vipu.cli.failure import BAD_INPUT, fail

        if shell not in SHELLS:
            fail(prog, f"completion: {shell!r} is not a shell this supports; give bash or zsh", BAD_INPUT)
        print(script(prog, shell))

    completion.__doc__ = (
        f"Print a script that completes commands, flags, your job ids and partition names in bash or zsh. Load it"
        f' with `eval "$({prog} completion bash)"` in ~/.bashrc, or `source <({prog} completion zsh)` in ~/.zshrc'
        " after compinit."
    )
    app.command("completion")(completion)
