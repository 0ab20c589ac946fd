"""How IPU-Machines (Slurm's nodes) are named, written as Slurm host lists, and ordered.

Why padded to the Pod's widest index: a Slurm site names its nodes at a fixed width (node[0001-1024]), so names
sort as numbers do and a host list is one range; unpadded names on a Pod1024 read ag[00-99,100-255] and sort ag100
before ag11. Two digits at least, so a Pod16 to a Pod256 (at most 64 machines) keep the names they always had
(ag00 to ag63). Names are stored with their agents: a Pod made before keeps its names, whatever this module says.
"""

from __future__ import annotations

import re
from typing import Iterable

_NUMBERED = re.compile(r"(.*?)([0-9]+)")
_DIGITS = re.compile(r"([0-9]+)")


def digits(machines: int) -> int:
    """The width of a machine's number on a Pod of `machines` machines: its largest index's, at least 2."""
    return max(2, len(str(max(0, machines - 1))))


def agent_name(machine: int, machines: int) -> str:
    """The agent the controller registers for a machine on first start: ag00, or ag00000 on 65,536 IPUs."""
    return f"ag{machine:0{digits(machines)}d}"


def machine_name(machine: int, machines: int) -> str:
    """A machine that has no agent, as a node: machine03, padded as agents are."""
    return f"machine{machine:0{digits(machines)}d}"


def natural_key(name: str) -> tuple:
    """Orders names as a person reads them: slurm_2 before slurm_10, ag9 before ag10; the name last, so names
    that read the same (ag7, ag07) still have one order."""
    parts = _DIGITS.split(name)  # text, number, text, ...: each place holds one type, so tuples compare
    return (*((int(p), len(p)) if i % 2 else p for i, p in enumerate(parts)), name)


def ranges(numbers: Iterable[int]) -> str:
    """Numbers, each once, as runs: 0-13,15. Unlike hostlist(), a run spans numbers of different widths (0-15):
    these are numbers, not names written at a width."""
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed node list: ag[00-03,06],machine9; a name alone as it is. Prefixes in the order first
    seen, numbers in order, and a range only over numbers written with the same width."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for name in dict.fromkeys(names):
        m = _NUMBERED.fullmatch(name)
        if m is None:  # no number to range over: the name alone, even where it is another name's prefix
            groups[f"\0{name}"] = []
            continue
        groups.setdefault(m.group(1), []).append((int(m.group(2)), m.group(2)))
    parts = []
    for prefix, numbers in groups.items():
        if not numbers:
            parts.append(prefix[1:])
            continue
        numbers.sort()
        spans: list[list[tuple[int, str]]] = []
        for n in numbers:
            last = spans[-1][-1] if spans else None
            if last is not None and n[0] == last[0] + 1 and len(n[1]) == len(last[1]):
                spans[-1].append(n)
            else:
                spans.append([n])
        text = ",".join(s[0][1] if len(s) == 1 else f"{s[0][1]}-{s[-1][1]}" for s in spans)
        parts.append(f"{prefix}{text}" if len(numbers) == 1 else f"{prefix}[{text}]")
    return ",".join(parts)


MAX_EXPANDED = 65_536  # names one host list may stand for: the most machines a Pod has, with room
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")


def expand(text: str) -> list[str]:
    """A Slurm host list read into its names, in the order written: ag[00-03,06],gw1 is ag00 ag01 ag02 ag03 ag06 gw1;
    a range keeps its first number's width (ag[8-10] is ag8 ag9 ag10; ag[08-10] is ag08 ag09 ag10). ValueError
    saying what is wrong and how to write it."""
    names: list[str] = []
    for entry in re.split(r",(?![^\[]*\])", text):
        entry = entry.strip()
        if not entry:
            raise ValueError(f"{text!r} has an empty name; write names or ranges between commas, e.g. ag[00-03],ag07")
        names += _entry(entry, text)
        if len(names) > MAX_EXPANDED:
            raise ValueError(f"{text!r} names more than {MAX_EXPANDED:,} nodes; name fewer")
    return names


def _entry(entry: str, text: str) -> list[str]:
    m = _BRACKETS.search(entry)
    if m is None:
        if any(c in entry for c in "[]"):
            raise ValueError(f"{text!r} has an unmatched bracket; write a range as ag[00-03]")
        return [entry]
    head, tail = entry[:m.start()], entry[m.end():]
    if any(c in head for c in "[]"):
        raise ValueError(f"{text!r} has an unmatched bracket; write a range as ag[00-03]")
    out = []
    for span in m.group(1).split(","):
        first, dash, last = span.strip().partition("-")
        if not (first.isascii() and first.isdigit()) or (dash and not (last.isascii() and last.isdigit())):
            raise ValueError(f"{text!r}: [{m.group(1)}] is not a list of numbers and ranges; write e.g. [00-03,06]")
        low, high = int(first), int(last) if dash else int(first)
        if high < low:
            raise ValueError(f"{text!r}: the range {span.strip()} runs backwards; write it low to high")
        if len(out) + high - low >= MAX_EXPANDED:
            raise ValueError(f"{text!r} names more than {MAX_EXPANDED:,} nodes; name fewer")
        out += [f"{head}{n:0{len(first)}d}" for n in range(low, high + 1)]
    return [name + rest for name in out for rest in _entry(tail, text)] if tail else out
