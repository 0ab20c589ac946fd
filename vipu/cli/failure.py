"""How the CLI fails: one clear line on stderr and an exit code that tells the kind of failure apart."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

import grpc

from vipu.client.api_error import TIMEOUT, ApiError
from vipu.errors import elided

OK = 0
ERROR = 1  # anything not listed below (an internal error of the server)
BAD_INPUT = 2  # the request can never succeed as written (also usage errors)
NOT_FOUND = 3
CONFLICT = 4  # exists already, in use, or in the wrong state
UNREACHABLE = 5  # no server answered in time, or it cannot serve now (retry)
DENIED = 6  # missing or wrong credentials, or not allowed
NO_CAPACITY = 7  # valid, but there is no room now

EXIT_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT: BAD_INPUT,
    grpc.StatusCode.OUT_OF_RANGE: BAD_INPUT,
    grpc.StatusCode.NOT_FOUND: NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS: CONFLICT,
    grpc.StatusCode.FAILED_PRECONDITION: CONFLICT,
    grpc.StatusCode.ABORTED: CONFLICT,
    grpc.StatusCode.UNAVAILABLE: UNREACHABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: UNREACHABLE,
    grpc.StatusCode.PERMISSION_DENIED: DENIED,
    grpc.StatusCode.UNAUTHENTICATED: DENIED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: NO_CAPACITY,
}


def error(prog: str, message: str) -> None:
    """The line a failure prints, for a command that goes on (to its next job id)."""
    print(f"{prog}: error: {elided(message)}", file=sys.stderr)


# --timeout is an option of the program, as --api-host is, so it goes before the command; said where it matters
TIMEOUT_HOW = "give a longer --timeout before the command: {prog} --timeout SECONDS COMMAND ..."


def fail(prog: str, message: str, code: int) -> NoReturn:
    error(prog, message)
    raise SystemExit(code)


def refuse_empty(flag: str, give: str) -> NoReturn:
    """A flag or field given with nothing in it: refused rather than read as not given (squeue refuses it too)."""
    fail("vipu", f"{flag} is empty: give {give}", BAD_INPUT)


def warn(prog: str, message: str) -> None:
    print(f"{prog}: warning: {elided(message)}", file=sys.stderr)


def fail_api(prog: str, error: ApiError, address: str, change: bool = False, check: str | None = None) -> NoReturn:
    """End the command on a failed call: the controller's own message (it names the field or object and the fix),
    or what kept the call from it, with the exit code of its kind. `change`: the call asked for a change to jobs (a
    submit, cancel, update, hold, release or requeue); `check`: it asked for another change (an admin's, a
    partition's), and this command shows whether it was made. A deadline does not stop the controller, so such a
    change may have been made after all: "retry" alone had a script cancel or submit twice (walk26f: a cancel of
    49,000 jobs)."""
    message = error.message
    if error.reason == TIMEOUT and (change or check):
        check = check or f"`{prog} queue -u USER` or `{prog} show job ID`"
        message = (f"the V-IPU controller at {address} did not answer in time, but the change may have been made all"
                   f" the same: check with {check} before trying again; to wait longer,"
                   f" {TIMEOUT_HOW.format(prog=prog)}")
    elif error.reason == TIMEOUT:  # how to wait longer is the CLI's to say
        message = f"the V-IPU controller at {address} did not answer in time; retry, or {TIMEOUT_HOW.format(prog=prog)}"
    fail(prog, message, EXIT_CODES.get(error.code, ERROR))


def fail_rpc(prog: str, error: grpc.RpcError, address: str) -> NoReturn:
    fail_api(prog, ApiError.of_call(error, address), address)


def run_app(app, prog: str) -> NoReturn:
    """Run a typer app as the `prog` command. Why not app() alone: click reports a usage error (a missing
    argument, an unknown option, a value of the wrong type) as a five-line box; here it is one line naming the
    command's --help, like every other failure, with exit code 2. A group run without a command still shows its
    help.

    A reader that goes away (`vipu queue | head -1`) ends the command as it ends a C tool such as squeue: by
    SIGPIPE, silently. Python ignores that signal, so a write raised BrokenPipeError instead, which click turned
    into exit code 1, the code of an internal error. (gRPC's sockets send with MSG_NOSIGNAL: the signal only ever
    comes from stdout and stderr.)"""
    import typer

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    # typer may bring its own copy of click, so its exception classes are found through one typer exports
    errors = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
    usage_error, click_exception = errors["UsageError"], errors["ClickException"]
    no_args = getattr(sys.modules[usage_error.__module__], "NoArgsIsHelpError", ())
    from vipu.cli.params import command_of

    command = command_of(app)
    try:
        code = command(prog_name=prog, standalone_mode=False)
    except no_args as e:
        from typer import rich_utils

        rich_utils.rich_format_error(e)  # the group's help, as typer draws it
        raise SystemExit(e.exit_code) from None
    except usage_error as e:
        path = e.ctx.command_path if e.ctx else named_command(command, prog, sys.argv[1:])
        fail(prog, f"{e.format_message().rstrip('.')}; see `{path} --help`", BAD_INPUT)
    except click_exception as e:
        fail(prog, e.format_message(), e.exit_code)
    except typer.Abort:
        print("Aborted!", file=sys.stderr)
        raise SystemExit(ERROR) from None
    raise SystemExit(code if isinstance(code, int) else OK)


def named_command(command, prog: str, args: list[str]) -> str:
    """The command `args` run, as `vipu submit`: for a usage error click raised without a context (its parser's
    "Option '-b' requires an argument" has none), so its line names the subcommand's --help, not the program's."""
    path = [prog]
    for arg in args:
        sub = getattr(command, "commands", {}).get(arg)  # a group's subcommands
        if sub is not None:
            path.append(arg)
            command = sub
    return " ".join(path)
