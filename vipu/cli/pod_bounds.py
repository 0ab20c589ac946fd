"""Whole-number flags whose real bound is the controller's, not the wire's: a value too large for the request to
carry is refused naming the largest the controller would take and how to give it (`vipu submit --ipus 99999999999`:
the Pod's largest partition), where the wire check alone (params.py) quoted int32's 2147483647, a number no Pod
takes. run_app installs these on the command tree after the wire checks; a value that fits the wire goes on to
them and to the controller as before."""

from __future__ import annotations

from typing import Callable

from vipu.cli.params import WireInt, WireIntRange


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


def nice(number: int, ctx) -> str:
    from vipu.scheduler.updates import MAX_NICE  # here: only a refusal needs it

    return f"out of range; give -{MAX_NICE} to {MAX_NICE} (negative: admins only)"


def priority(number: int, ctx) -> str:
    from vipu.scheduler.updates import MAX_PRIORITY

    return f"out of range; give 1 to {MAX_PRIORITY}, or 0 to hold the job"


def throttle(number: int, ctx) -> str:
    return "out of range; give the tasks to run at once (at most the array's), or 0 for no limit"


# (command, parameter) -> what to say of a value past the wire
BOUNDS: dict[tuple[str, str], Callable[[int, object], str]] = {
    ("submit", "ipus"): pod_ipus, ("create partition", "size"): pod_ipus, ("submit", "nice"): nice,
    ("update", "nice"): nice, ("update", "priority"): priority, ("update", "throttle"): throttle,
}


class _Bounded:
    """Mixed into the wire's integer types: a value past the wire is refused with the controller's bound."""

    say: Callable

    def convert(self, value, param, ctx):
        try:
            number = int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            number = None
        low, high = self.wire
        if number is not None and not low <= number <= high:
            self.fail(f"{number} is {self.say(number, ctx)}", param, ctx)
        return super().convert(value, param, ctx)


class BoundedInt(_Bounded, WireInt):
    def __init__(self, wire, say: Callable):
        super().__init__(wire)
        self.say = say


class BoundedIntRange(_Bounded, WireIntRange):
    def __init__(self, kind: WireIntRange, say: Callable):
        super().__init__(kind.wire, min=kind.min, max=kind.max, min_open=kind.min_open, max_open=kind.max_open,
                         clamp=kind.clamp)
        self.say = say


def bound(command, path: str = "") -> None:
    """Give the parameters in BOUNDS under `command` (a root; `path`: its subcommand's words) the controller's
    bound."""
    for name, sub in getattr(command, "commands", {}).items():
        bound(sub, f"{path} {name}".strip())
    for param in command.params:
        say = BOUNDS.get((path, param.name))
        if say is None or isinstance(param.type, _Bounded):
            continue
        kind = param.type
        if isinstance(kind, WireIntRange):
            param.type = BoundedIntRange(kind, say)
        elif isinstance(kind, WireInt):
            param.type = BoundedInt(kind.wire, say)
