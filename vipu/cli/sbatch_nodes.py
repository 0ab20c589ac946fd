"""sbatch -N/--nodes: a Slurm node is one IPU-Machine here (`vipu info -N`), so `-N N` asks for N machines' IPUs
(N x 4 on a Pod of 4-IPU machines), the job's size where --ipus does not give it.

A job's IPUs are one aligned block of a power of two, so N is a power of two no larger than the Pod; sbatch's
`-N min-max` is taken only as one count (min = max): a job here has one size. -N and --ipus both given must agree:
--ipus's block spans N machines (`-N 1 --ipus 2` is 2 IPUs of one machine). The command line's size (either) wins
over a script's #SBATCH one, as each flag wins over its directive. The machine's IPUs are the controller's (its
Pod's), asked only when -N (or -w alone) is given.

-w/--nodelist, as in Slurm: the job gets every node listed, so -N may not be fewer than the list's nodes, and -w
with no size (no -N, no --ipus, on the command line or in the script) makes the list's node count the job's size.
"""

from __future__ import annotations

from typing import Callable

FLAG = "-N/--nodes"
LIST_FLAG = "-w/--nodelist"


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
    listed = listed_nodes(rest.get("nodelist"))
    if listed > nodes:  # Slurm's rule: the job gets every listed node, so -N may not be fewer
        raise ValueError(f"{who} {nodes} is fewer than the {listed} IPU-Machines {LIST_FLAG} {rest['nodelist']}"
                         f" names, and a job holds every node listed: give -N {1 << (listed - 1).bit_length()}, or"
                         f" leave -N out (the list's nodes are then the job's size)")
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


def listed_nodes(nodelist: object) -> int:
    """The IPU-Machines a -w list names, each once (0: none, or a list the controller will refuse, naming it)."""
    if not isinstance(nodelist, str):
        return 0
    from vipu.partition.node_names import expand

    try:
        return len(set(expand(nodelist)))
    except ValueError:
        return 0


def sized_by_list(options: dict, machines: Callable[[], PodMachines], who: str = LIST_FLAG) -> dict:
    """`options` that give no size (no -N, no --ipus) but -w: the listed nodes are the job's size, as sbatch -w
    node[1-4] gets 4 nodes; ValueError naming `who` (the flag, or the directive's line) where that count is no job's
    size. The controller then checks the nodes form the block of that size."""
    count = listed_nodes(options.get("nodelist"))
    if not count or "ipus" in options or "nodes" in options:
        return options
    if count & (count - 1):
        wider = 1 << count.bit_length()
        raise ValueError(f"{who} {options['nodelist']} names {count} IPU-Machines, and with no -N or --ipus they are"
                         f" the job's size; a job's IPUs are one aligned block, a power of two of machines: give -N"
                         f" {wider} (the block around them), or list {wider >> 1} or {wider}")
    # a list longer than the Pod's machines has names that are no node: the controller names them, or the size
    return {**options, "ipus": count * machines().ipus}


def in_nodes(ipus: int, nodelist: str | None = None, where: str | None = None) -> Callable:
    """How a refusal of a job's size by its allocation (an ApiError whose metadata has the allocation's figures) is
    said for a size of `ipus` asked in nodes (by -N, or by -w `nodelist` alone; `where`, a script's line that asked
    it): in nodes, as sbatch refuses more nodes than the partition has ("Requested node configuration is not
    available"); any other refusal as it is."""
    lead, fix = (f"{LIST_FLAG} {nodelist} ({{n}} nodes)", "list the nodes of a block of at most {n}") if nodelist \
        else (f"{FLAG} {{n}}", "give at most -N {n}")
    lead = f"{where}: {lead}" if where else lead
    return lambda error: _in_nodes(error, ipus, lead, fix)


def _in_nodes(error, ipus: int, lead: str, fix: str):
    figures = error.metadata
    per = int(figures.get("ipus_per_machine") or 0)
    largest, total = int(figures.get("largest_ipus") or 0) // max(per, 1), int(figures.get("allocation_ipus") or 0)
    if not per or not largest:
        return error
    from vipu.client.api_error import ApiError
    from vipu.partition.admin_records import DEFAULT_ALLOCATION, DEFAULT_HOLDS  # the controller's words for it

    allocation = figures["allocation"]
    if allocation == DEFAULT_ALLOCATION:  # what a job naming no allocation gets
        allocation += f" ({DEFAULT_HOLDS})"
    shape = "" if largest * per == total else \
        f", whose largest aligned block is {largest} node{'s' if largest > 1 else ''} ({largest * per} IPUs)"
    message = (f"{lead.format(n=ipus // per)}: allocation {allocation} has {total // per} nodes ({total} IPUs){shape};"
               f" {fix.format(n=largest)}, or name a larger allocation with -p (`vipu list allocations`)")
    return ApiError(error.code, error.reason, message, error.field_violations, error.resource, error.from_controller,
                    error.metadata)
