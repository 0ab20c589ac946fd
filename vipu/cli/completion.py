"""Shell completion for bash and zsh: commands and flags from the CLI itself, job ids and partition names from the
controller.

Why names come from the controller with a short deadline: completion runs at every Tab, so it makes one listing
call and gives up after half a second; a controller that does not answer leaves the shell's own completion.

Why the completers are attached here by parameter name rather than where each command is declared: every job id
argument, present and future, gets the same completer without each command having to remember it.
"""

from __future__ import annotations

import typer

SHELLS = ("bash", "zsh")
DEADLINE_S = 0.5
JOB_ID_PARAMS = ("id", "ids")  # the argument names of the commands that take job ids (job_ids.py)
PARTITION_COMMANDS = ("get partition", "remove partition", "reset partition")
ACTIVE = ("PENDING", "RUNNING")


def _connection(prog: str):
    from vipu.cli.connection import Connection, resolve

    return Connection(prog, resolve(prog), timeout=DEADLINE_S)


def job_ids(ctx, param, incomplete: str) -> list[str]:
    """The caller's pending and running jobs, as N and, for array tasks, N_T."""
    from vipu.v1 import job_pb2 as j

    conn = _connection(ctx.find_root().info_name or "vipu")
    request = j.ListJobsRequest(me=True, states=list(ACTIVE), brief=True, page_size=1000)  # as the controller knows me
    try:
        reply = conn.jobs.ListJobs(request, timeout=DEADLINE_S, metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - an unreachable or refusing controller completes nothing
        return []
    names = []
    for x in reply.jobs:
        names.append(str(x.id))
        if x.HasField("array_job_id"):
            names.append(f"{x.array_job_id}_{x.array_task_id}")
    return [n for n in dict.fromkeys(names) if n.startswith(incomplete)]


def partition_names(ctx, param, incomplete: str) -> list[str]:
    from vipu.v1 import partition_pb2 as p

    conn = _connection(ctx.find_root().info_name or "vipu")
    try:
        reply = conn.partitions.ListPartitions(p.ListPartitionsRequest(), timeout=DEADLINE_S,
                                               metadata=conn.metadata())
    except Exception:  # noqa: BLE001 - as above
        return []
    return [x.name for x in reply.partitions if x.name.startswith(incomplete)]


def attach(command, path: str = "") -> None:
    """Give every job id argument and partition name argument under `command` its completer."""
    for param in command.params:
        if param.param_type_name != "argument":
            continue
        if param.name in JOB_ID_PARAMS:
            param._custom_shell_complete = job_ids  # click's hook for a parameter's own completion
        elif param.name == "name" and path in PARTITION_COMMANDS:
            param._custom_shell_complete = partition_names
    for name, sub in getattr(command, "commands", {}).items():
        attach(sub, f"{path} {name}".strip())


def script(prog: str, shell: str) -> str:
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name=prog, complete_var=f"_{prog.replace('-', '_').upper()}_COMPLETE",
                                 shell=shell)


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
