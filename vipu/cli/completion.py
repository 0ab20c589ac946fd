"""Shell completion for bash and zsh: commands and flags from the CLI itself, job ids and partition names from the
controller.

Why names come from the controller with a short deadline: completion runs at every Tab, so it makes one listing
call and gives up after half a second; a controller that does not answer leaves the shell's own completion.

Why the completers are attached here by parameter name rather than where each command is declared: every job id
argument, present and future, gets the same completer without each command having to remember it.
"""

from __future__ import annotations

import re

import typer

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


def my_job_ids(prog: str) -> list[str]:
    """The caller's pending and running jobs: N for a job, and for an array its id N once and each task as N_T
    (a task's own id is another name of N_T, so it is not offered as well)."""
    from vipu.v1 import job_pb2 as j

    conn = _connection(prog)
    request = j.ListJobsRequest(me=True, states=list(ACTIVE), brief=True, page_size=1000)  # as the controller knows me
    try:
        reply = conn.jobs.ListJobs(request, timeout=DEADLINE_S, metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - an unreachable or refusing controller completes nothing
        return []
    names = []
    for x in reply.jobs:
        if x.HasField("array_job_id"):
            names += [str(x.array_job_id), f"{x.array_job_id}_{x.array_task_id}"]
        else:
            names.append(str(x.id))
    return list(dict.fromkeys(names))


def job_ids(ctx, param, incomplete: str) -> list[str]:
    return [n for n in my_job_ids(ctx.find_root().info_name or "vipu") if n.startswith(incomplete)]


def update_words(ctx, param, incomplete: str) -> list[str]:
    """`vipu update`'s words: `job` (or JobId=), then the caller's job ids, then the Field= names not given yet.

    bash splits a word at `=` (TimeLimit=30 reaches here as TimeLimit, =, 30), zsh does not: the words are joined
    again before they are read."""
    given = re.sub(r"\s*=\s*", "=", " ".join(ctx.params.get(param.name) or [])).split()
    if "=" in incomplete:  # zsh: JobId=1<Tab>; a field's value is not completed
        key, _, value = incomplete.partition("=")
        return [f"{key}={n}" for n in job_ids(ctx, param, value)] if not given and key.lower() == "jobid" else []
    if given and given[-1].endswith("="):  # bash: JobId= 1<Tab>
        return job_ids(ctx, param, incomplete) if given[0].lower() == "jobid=" and len(given) == 1 else []
    if not given:
        return [w for w in ("job", "JobId=") if w.lower().startswith(incomplete.lower())]
    if [w.lower() for w in given] == ["job"]:
        return job_ids(ctx, param, incomplete)
    named = {w.partition("=")[0].lower() for w in given}
    return [f for f in UPDATE_FIELDS if f[:-1].lower() not in named and f.lower().startswith(incomplete.lower())]


def partition_names(ctx, param, incomplete: str) -> list[str]:
    from vipu.v1 import partition_pb2 as p

    conn = _connection(ctx.find_root().info_name or "vipu")
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
    """Give every job id argument and partition name argument under `command` its completer."""
    for param in command.params:
        if param.param_type_name != "argument":
            continue
        if param.name == "words" and path == "update":
            param._custom_shell_complete = update_words
        elif param.name in JOB_ID_PARAMS:
            param._custom_shell_complete = job_ids  # click's hook for a parameter's own completion
        elif param.name == "name" and path in PARTITION_COMMANDS:
            param._custom_shell_complete = partition_names
    for name, sub in getattr(command, "commands", {}).items():
        attach(sub, f"{path} {name}".strip())


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
