"""sbatch -N/--nodes: a Slurm node is one IPU-Machine here (`vipu info -N`), so `-N N` asks for N machines' IPUs
(N x 4 on a Pod of 4-IPU machines), the job's size where --ipus does not give it.

A job's IPUs are one aligned block of a power of two, so N is a power of two no larger than the Pod; sbatch's
`-N min-max` is taken only as one count (min = max): a job here has one size. -N and --ipus both given must agree:
--ipus's block spans N machines (`-N 1 --ipus 2` is 2 IPUs of one machine). The command line's size (either) wins
over a script's #SBATCH one, as each flag wins over its directive. The machine's IPUs are the controller's (its
Pod's), asked only when -N is given.
"""

from __future__ import annotations

from typing import Callable

FLAG = "-N/--nodes"


class PodMachines:
    """How many IPU-Machines the Pod has and their IPUs; nodes.Machines has their names. A plain class: a
    NamedTuple's making costs each `vipu submit` more than this module."""

    __slots__ = ("ipus", "count")

    def __init__(self, ipus: int, count: int):
        self.ipus, self.count = ipus, count  # each machine's IPUs; the Pod's machines


def node_count(value: str) -> int:
    """-N's value as sbatch writes it (N, or min-max with min = max); ValueError saying the fix."""
    low, dash, high = value.strip().partition("-")
    high = high if dash else low
    if not all(n.isascii() and n.isdigit() for n in (low, high)):
        raise ValueError(f"{value!r} is not a count of IPU-Machines; give a whole number, e.g. -N 2")
    low, high = int(low), int(high)
    if low < 1:
        raise ValueError(f"{value!r}: a job needs at least 1 IPU-Machine (for fewer IPUs give --ipus 1 or 2)")
    if high != low:
        raise ValueError(f"{value!r} is a range, and a job here has one size (its IPUs one block): give one count,"
                         f" e.g. -N {low} or -N {high}")
    return low


def sized(options: dict, machines: Callable[[], PodMachines], who: str = FLAG) -> dict:
    """`options` with `nodes` (a node count) turned into `ipus`; ValueError naming `who` (the flag, or the
    directive's line) and the fix where the count is no job's size or --ipus gives another."""
    if "nodes" not in options:
        return options
    rest = dict(options)
    nodes = rest.pop("nodes")
    if isinstance(nodes, str):  # the command line's (a directive's is read by node_count where it is parsed)
        try:
            nodes = node_count(nodes)
        except ValueError as e:
            raise ValueError(f"{who}: {e}") from None
    pod = machines()
    ipus = nodes * pod.ipus
    if nodes & (nodes - 1) or nodes > pod.count:
        largest = 1 << (pod.count.bit_length() - 1)
        nearest = sorted({min(1 << (nodes.bit_length() - 1), largest), min(1 << nodes.bit_length(), largest)})
        raise ValueError(f"{who} {nodes}: a job's IPUs are one aligned block, a power of two of IPU-Machines (1 to"
                         f" {largest} on this Pod of {pod.count} machines of {pod.ipus} IPUs): give"
                         f" {' or '.join(f'-N {n}' for n in nearest)}")
    given = rest.get("ipus", ipus)
    if -(-given // pod.ipus) != nodes:  # a block smaller than a machine lies on one: -N 1 --ipus 2 agree
        raise ValueError(f"{who} {nodes} is {ipus} IPUs ({nodes} IPU-Machine{'s' if nodes > 1 else ''} of {pod.ipus})"
                         f" but --ipus is {given}: give one of them")
    rest["ipus"] = given
    return rest
