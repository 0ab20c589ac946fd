"""Whole numbers on the command line, checked once for every command: each must fit the protobuf field that
carries it (a value that did not made building the request raise ValueError, a traceback and exit code 1), and a
negative number is a number where a command takes numbers as arguments (click read `fail ipus -1` as an option).

run_app() calls wire_ints() on the command tree before it parses anything, so a new command is covered without a
line of its own. A parameter is taken to travel as int32, the narrowest integer on the wire; one carried as int64
says so with `click_type=int64()` (the bounds the command itself declares, such as min=1, still hold).

Where the wire's bound says nothing a user can act on (int32's 2147483647 for `vipu submit --ipus 99999999999`, a
number no Pod takes), the option declares what a value past it is: `click_type=WireInt(past=pod_ipus)`, so the
refusal names the largest the controller would take and how to give it. A value that fits the wire goes on to the
controller as before."""

from __future__ import annotations

import difflib
import os
import re
import sys
from typing import Callable

import typer

# typer may bring its own copy of click (failure.py): reach it through a class typer exports
_types = sys.modules[f"{typer.BadParameter.__module__.rpartition('.')[0]}.types"]
_exceptions = sys.modules[typer.BadParameter.__module__]

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
NUMBER = re.compile(r"[+-]?[0-9_]+")  # what int() takes, so `-1` is a number and `--jsn` an option


Past = Callable[[int, object], str]  # (the number, click's context) -> what it is: "more than bow-pod64 can hold ..."


class _Wire:
    """Mixed into click's integer types: after their own checks, the value must fit `wire`; one past it is said
    by `past` where the option has one, else by the wire's bound."""

    wire = INT32
    past: Past | None = None

    def convert(self, value, param, ctx):
        argument = param is not None and param.param_type_name == "argument"
        if argument and isinstance(value, str) and value.startswith("-") and not NUMBER.fullmatch(value.strip()):
            # the command lets unknown options through as arguments, for negative numbers: this was an option
            names = [name for p in (ctx.command.params if ctx else []) for name in getattr(p, "opts", [])]
            raise _exceptions.NoSuchOption(value, possibilities=difflib.get_close_matches(value, names), ctx=ctx)
        number = super().convert(value, param, ctx)
        low, high = self.wire
        if isinstance(number, int) and not low <= number <= high and self.past is not None:
            self.fail(f"{number} is {self.past(number, ctx)}", param, ctx)
        if isinstance(number, int) and not low <= number <= high:
            least, most = getattr(self, "min", None), getattr(self, "max", None)  # an IntRange's own bounds
            low, high = low if least is None else max(low, least), high if most is None else min(high, most)
            # a bound of the wire alone is no advice: "from -2147483648" read as if negative IPUs were fine
            advice = f"give {low} to {high}" if low >= 0 else f"give at most {high}" if number > high \
                else f"give at least {low}"
            self.fail(f"{number} is out of range; {advice}", param, ctx)
        return number


class WireInt(_Wire, _types.IntParamType):
    def __init__(self, wire: tuple[int, int] = INT32, past: Past | None = None):
        self.wire, self.past = wire, past


class WireIntRange(_Wire, _types.IntRange):
    def __init__(self, wire: tuple[int, int] = INT32, past: Past | None = None, **bounds):
        super().__init__(**bounds)
        self.wire, self.past = wire, past


class Word(_types.StringParamType):
    """A word argument of a command that lets unknown options through, for its negative numbers (job ids: `-3`
    reaches their check and its one line): a word like an option that is no number is an unknown option, said as
    click says one (`vipu cancel --nmae x` said "'--nmae' is not a job id")."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.startswith("-") and not NUMBER.match(value) and value != "-":
            names = [name for p in (ctx.command.params if ctx else []) for name in getattr(p, "opts", [])]
            raise _exceptions.NoSuchOption(value, possibilities=difflib.get_close_matches(value, names), ctx=ctx)
        return super().convert(value, param, ctx)


def int64(past: Past | None = None) -> WireInt:
    """For `click_type=`: a whole number carried as int64."""
    return WireInt(INT64, past)


# What a number past the wire is, for the options whose real bound is the controller's (WireInt's `past`)

def pod_ipus(number: int, ctx) -> str:
    """The largest job the Pod takes: its largest partition, a power of two (the controller's `vipu info`)."""
    cli = getattr(ctx.find_root(), "obj", None) if ctx is not None else None
    try:
        info = cli.conn.client.info()
    except Exception:  # noqa: BLE001 - no controller to ask (or a refusal): the advice without its number
        return "no number of IPUs a Pod has; give a power of two no larger than the Pod (`vipu info`)"
    total = sum(d.total for d in info.ilds)
    largest = 1 << (total.bit_length() - 1) if total else 0
    if number < 1:
        return f"no number of IPUs; give a power of two from 1 to {largest}"
    return f"more than {info.pod} can hold ({total} IPUs); give a power of two up to {largest}"


def nice_bound(number: int, ctx) -> str:
    from vipu.scheduler.updates import MAX_NICE  # here: only a refusal needs it

    return f"out of range; give -{MAX_NICE} to {MAX_NICE} (negative: admins only)"


def priority_bound(number: int, ctx) -> str:
    from vipu.scheduler.updates import MAX_PRIORITY

    return f"out of range; give 1 to {MAX_PRIORITY}, or 0 to hold the job"


def throttle_bound(number: int, ctx) -> str:
    return "out of range; give the tasks to run at once (at most the array's), or 0 for no limit"


PAST = {"pod_ipus": pod_ipus, "nice": nice_bound}  # by the name a plain table gives (sbatch_options.py's `past`)


def _wired(kind):
    if isinstance(kind, _Wire):
        return kind
    if isinstance(kind, _types.IntRange):
        return WireIntRange(min=kind.min, max=kind.max, min_open=kind.min_open, max_open=kind.max_open,
                            clamp=kind.clamp)
    if isinstance(kind, _types.IntParamType):
        return WireInt()
    return None


def command_of(app):
    """The click command a typer app runs as (failure.run_app): every integer parameter wired, and job ids and
    partition names completed in a shell."""
    command = typer.main.get_command(app)
    wire_ints(command)  # every integer checked against the wire, and `fail ipus -1` read as a number
    if any(k.endswith("_COMPLETE") for k in os.environ):  # a shell asks for completions (completion.py)
        from vipu.cli import completion

        completion.init(command)
    return command


def wire_ints(command) -> None:
    """Give every integer parameter under `command` its wire check; a command with an integer argument lets
    `-1` through as that argument, and in a command that lets unknown options through, a word argument that looks
    like an option and is no number is refused as an unknown option (Word)."""
    for param in command.params:
        wired = _wired(param.type)
        if wired is None:
            continue
        param.type = wired
        if param.param_type_name == "argument":
            command.context_settings = {**(command.context_settings or {}), "ignore_unknown_options": True}
    if (command.context_settings or {}).get("ignore_unknown_options"):
        for param in command.params:
            if param.param_type_name == "argument" and type(param.type) is _types.StringParamType:
                param.type = Word()
    for sub in getattr(command, "commands", {}).values():
        wire_ints(sub)
