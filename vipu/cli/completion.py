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
# bash: a completion ending in = (TimeLimit=, JobId=) takes its value right after it, so no space is added
NO_SPACE_AFTER_EQUALS = '    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null\n'


def _connection(prog: str):
    from vipu.cli.connection import Connection, resolve

    return Connection(prog, resolve(prog), timeout=DEADLINE_S)


def my_job_ids(prog: str, states: tuple[str, ...] = ACTIVE, held: bool | None = None,
               history: bool = False) -> list[str]:
    """The caller's jobs in `states` (with `held`, only those held, or only those not): N for a job, and for an
    array its id N once and each task as N_T (a task's own id is another name of N_T, so it is not offered as
    well). `history`: from sacct's listing, which has ended jobs too."""
    from vipu.v1 import job_pb2 as j

    conn = _connection(prog)
    kind, method = (j.HistoryRequest, conn.jobs.History) if history else (j.ListJobsRequest, conn.jobs.ListJobs)
    request = kind(me=True, states=list(states), brief=True, page_size=1000)  # as the controller knows me
    try:
        reply = method(request, timeout=DEADLINE_S, metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - an unreachable or refusing controller completes nothing
        return []
    names = []
    for x in reply.jobs:
        if held is not None and x.held is not held:
            continue
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

    conn = _connection(_prog(ctx))
    try:
        reply = conn.jobs.ClusterInfo(j.ClusterInfoRequest(), timeout=DEADLINE_S, metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - as above
        return []
    return [q for q in reply.qos if q.startswith(incomplete)]


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


def partition_names(ctx, param, incomplete: str) -> list[str]:
    from vipu.v1 import partition_pb2 as p

    conn = _connection(_prog(ctx))
    try:
        reply = conn.partitions.ListPartitions(p.ListPartitionsRequest(), timeout=DEADLINE_S,
                                               metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - as above
        return []
    return [x.name for x in reply.partitions if x.name.startswith(incomplete)]


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
                                            "priority": waiting_ids}.get(path, job_ids)
        elif param.name == "name" and path in PARTITION_COMMANDS:
            param._custom_shell_complete = partition_names
    for name, sub in getattr(command, "commands", {}).items():
        attach(sub, f"{path} {name}".strip())


# (command, option's parameter name) -> its completer
OPTIONS = {("queue", "jobs"): queue_ids, ("history", "jobs"): history_ids, ("queue", "state"): states,
           ("history", "state"): states, ("cancel", "state"): active_states, ("submit", "qos"): qos_names,
           ("cancel", "qos"): qos_names, ("cancel", "signal"): signal_names, ("priority", "jobs"): waiting_ids,
           ("update", "qos"): qos_names}


def script(prog: str, shell: str) -> str:
    from typer._completion_shared import get_completion_script

    text = get_completion_script(prog_name=prog, complete_var=f"_{prog.replace('-', '_').upper()}_COMPLETE",
                                 shell=shell)
    if shell == "bash":
        text = text.replace("    return 0\n", NO_SPACE_AFTER_EQUALS + "    return 0\n", 1)
    return text


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
