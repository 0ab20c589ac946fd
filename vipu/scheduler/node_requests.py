"""sbatch -w/--nodelist and -x/--exclude: the IPU-Machines a job must hold and those it must not touch, turned into
the mask of IPUs the job may be placed on, which the walk ANDs with its allocation's (policies/engine.py).

Slurm's rule kept: the job gets every node of its list, and more when it needs more. Here a job's IPUs are one
aligned block (partition/placement.py), so the more are the machines of the block of its size around the listed
ones (node_region), and a list no one block holds is refused at submit, naming the field, rather than left to wait
forever. Names are read against the Pod's node names (`vipu info -N`: the agents', a machine without one as
machineNN), which the control plane keeps here (use()); a job reads them when it enters the queue.

Cost: nothing for a job without either field (the table asks only when one is set); a mask is worked out once per
(nodelist, exclude, IPUs) and kept until the names change.
"""

from __future__ import annotations

from typing import Mapping

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.partition.admin_records import DEFAULT_ALLOCATION
from vipu.partition.node_names import agent_name, expand, hostlist, machine_name
from vipu.partition.placement import block_mask, largest_free_block, node_region
from vipu.partition.pod_state import PodState
from vipu.scheduler.job_spec import JobSpec

# how a refusal names the fields: the spec's (the CLI adds its flag, -w/-x), or scontrol update's; and the fixes
# only a submit has ("ipus", "allocation"): an update changes neither the job's size nor its allocation
SPEC_FIELDS = {"nodelist": "nodelist", "exclude": "exclude", "ipus": "ask for fewer IPUs",
               "allocation": "name another allocation (-p)"}
UPDATE_FIELDS = {"nodelist": "ReqNodeList", "exclude": "ExcNodeList"}


def default_names(pod: PodConfig) -> dict[str, int]:
    """The names a Pod's machines have before any agent is renamed: the agents the controller registers on first
    start (ag00), and machineNN, the name `vipu info -N` gives a machine without an agent."""
    machines = pod.machines
    return {**{machine_name(m, machines): m for m in range(machines)},
            **{agent_name(m, machines): m for m in range(machines)}}


class NodeNames:
    def __init__(self, pod: PodConfig):
        self.pod, self.per_machine = pod, pod.machine.ipus
        self.full = (1 << pod.ipus) - 1
        self.names: Mapping[str, int] = default_names(pod)
        self._masks: dict[tuple[str | None, str | None, int], int] = {}
        self._by_machine: dict[int, str] | None = None

    def use(self, names: Mapping[str, int]) -> bool:
        """Read node names as these from now on (name -> machine); True if they changed."""
        if dict(names) == dict(self.names):
            return False
        self.names, self._masks, self._by_machine = dict(names), {}, None
        return True

    def mask(self, spec: JobSpec) -> int:
        """The IPUs the job may be placed on by its nodelist and exclude (0 if a name it gives is no longer a node:
        it waits until one is, or is cancelled). Only for a spec that sets one of them."""
        key = (spec.nodelist, spec.exclude, spec.ipus)
        mask = self._masks.get(key)
        if mask is None:
            try:
                mask = self._mask(spec)
            except InvalidArgument:
                mask = 0
            self._masks[key] = mask
        return mask

    def _mask(self, spec: JobSpec, shown: Mapping[str, str] = SPEC_FIELDS) -> int:
        mask, listed = self.full, []
        if spec.nodelist is not None:
            listed = self._machines("nodelist", spec.nodelist, shown)
            region = node_region(listed, spec.ipus, self.per_machine)
            if region is None:
                span = max(spec.ipus, self.per_machine) // self.per_machine
                raise InvalidArgument(
                    f"{shown['nodelist']} {spec.nodelist!r} names machines that no job of {spec.ipus} IPUs can hold"
                    f" together: a job's IPUs are one aligned block ({span} machine{'s' if span > 1 else ''}: "
                    f"{self._blocks(span)}, ...); name machines of one block, or ask for more IPUs", field="nodelist")
            mask = region
        if spec.exclude is not None:
            excluded = self._machines("exclude", spec.exclude, shown)
            both = sorted(set(excluded) & set(listed))
            if both:
                raise _both(f"{shown['exclude']} and {shown['nodelist']} both name {self._names(both)}; a job cannot"
                            " both hold and avoid a machine: leave it out of one")
            for m in excluded:
                mask &= ~block_mask(m * self.per_machine, self.per_machine)
        return mask

    def check(self, spec: JobSpec, shown: Mapping[str, str] = SPEC_FIELDS) -> None:
        """InvalidArgument naming the field (as `shown` names it), for names that are no node, machines too far
        apart for the job, a machine both listed and excluded; nothing for a spec without either field."""
        if spec.nodelist is not None or spec.exclude is not None:
            self._mask(spec, shown)

    def _machines(self, field: str, text: str, shown: Mapping[str, str]) -> list[int]:
        names = expand(text)
        unknown = [n for n in names if n not in self.names]
        if unknown:
            listed = hostlist(unknown[:8]) + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
            what = "is no IPU-Machine" if len(unknown) == 1 else "are no IPU-Machines"
            raise InvalidArgument(f"{shown[field]} names {listed}, which {what} of this Pod; `vipu info -N` lists"
                                  f" the nodes (e.g. {self._blocks(1)})", field=field)
        return [self.names[n] for n in names]

    def name_of(self, machine: int) -> str:
        """The machine's name as `vipu info -N` shows it (its agent's; machineNN without one)."""
        if self._by_machine is None:
            self._by_machine = {}
            for name, m in self.names.items():  # an agent's name over the machineNN the defaults also give
                if m not in self._by_machine or self._by_machine[m].startswith("machine"):
                    self._by_machine[m] = name
        return self._by_machine.get(machine) or machine_name(machine, self.pod.machines)

    def no_block(self, spec: JobSpec, allocation: str, capacity: int, shown: Mapping[str, str]) -> InvalidArgument:
        """Why the job's nodelist and exclude leave it no block of its size among the allocation's IPUs
        (`capacity`), naming the field at fault and the fix: a listed node outside the allocation, the one block the
        listed nodes force reaching outside it or onto an excluded node, or an excluded node in every block of it."""
        whole = (1 << self.per_machine) - 1
        ours = {m for m in range(self.pod.machines) if capacity >> (m * self.per_machine) & whole == whole}
        where = f"allocation {allocation}, whose nodes are {self._names(sorted(ours)) or 'none'}"
        span = max(spec.ipus, self.per_machine) // self.per_machine
        if spec.nodelist is not None:
            listed = self._machines("nodelist", spec.nodelist, shown)
            outside = sorted(set(listed) - ours)
            if outside:
                return InvalidArgument(f"{shown['nodelist']} names {self._names(outside)}, which"
                                       f" {'is' if len(outside) == 1 else 'are'} not in {where}: "
                                       + _either(["name nodes of it"], "allocation", shown), field="nodelist")
            start = min(listed) // span * span
            block = range(start, start + span)
            forced = f"{self._names(block)}, the only block of {spec.ipus} IPUs that holds {spec.nodelist}"
            beyond = [m for m in block if m not in ours]
            if beyond:
                return InvalidArgument(f"{shown['nodelist']} {spec.nodelist!r} needs {forced}, and"
                                       f" {self._names(beyond)} of it is not in {where}: "
                                       + _either(["list nodes of a block inside it"], "ipus", shown), field="nodelist")
            # the rest: the block holds an excluded node (a block in the allocation without one would fit the job)
            excluded = set(self._machines("exclude", spec.exclude, shown)) if spec.exclude is not None else set()
            taken = self._names(m for m in block if m in excluded)
            return _both(f"{shown['exclude']} takes {taken} from {forced} ({shown['nodelist']}): "
                         + _either([f"exclude only nodes outside {self._names(block)}",
                                    f"list nodes of a block of {spec.ipus} IPUs without {taken}"], "ipus", shown))
        blocks = [range(k, k + span) for k in range(0, self.pod.machines, span) if ours.issuperset(range(k, k + span))]
        listing = ", ".join(map(self._names, blocks[:2])) + (", ..." if len(blocks) > 2 else "")
        fix = _either(["exclude fewer nodes"], "allocation", shown)
        if not blocks:  # an update's (a submit's size is checked against the allocation first)
            why = (f": it holds no aligned block of {spec.ipus} IPUs even with nothing excluded: submit the job again"
                   " smaller, or to another allocation")
        elif span == 1:  # a job of a machine or less: its blocks are the nodes
            why = f", every one excluded: {fix}"
        else:
            why = (f": each of its {len(blocks)} aligned blocks of {spec.ipus} IPUs ({listing}) holds an excluded node,"
                   f" and a job's IPUs are one such block: {fix}")
        return InvalidArgument(f"{shown['exclude']} {spec.exclude!r} leaves the job no {spec.ipus} IPUs of"
                               f" {where}{why}", field="exclude")

    def _names(self, machines) -> str:
        return hostlist(map(self.name_of, machines))

    def _blocks(self, span: int) -> str:
        """The first blocks of `span` machines, as node lists: what a job of that size may hold."""
        count = max(1, min(2, self.pod.machines // span))
        return ", ".join(self._names(range(k * span, (k + 1) * span)) for k in range(count))


def _either(fixes: list[str], submits: str, shown: Mapping[str, str]) -> str:
    """The fixes as one phrase ("a, b, or c"), with the one only a submit has (`shown[submits]`) where it has it."""
    fixes = fixes + [shown[submits]] if submits in shown else fixes
    return fixes[0] if len(fixes) == 1 else f"{', '.join(fixes[:-1])}, or {fixes[-1]}"


def _both(message: str) -> InvalidArgument:
    """A refusal of exclude that names nodelist too: both fields at fault (a violation each), exclude first, so a
    client that names fields by its own words (vipu submit's flags) names each where the message does."""
    return InvalidArgument(message, violations=(("exclude", message), ("nodelist", message)))


def rename_nodes(sched, names: Mapping[str, int], now: float) -> None:
    """The Pod's node names are now `names` (an agent created or removed): pending jobs with a nodelist or exclude
    read them again, as a job entering the queue now would."""
    table = sched.table
    if table.nodes.use(names):
        stale = [table.jobs[i] for i, q in table.pending.items() if q.nodes is not None]
        if stale:
            sched._remember(stale, now)


def check_nodes_in_allocation(spec: JobSpec, nodes: NodeNames, state: PodState,
                              shown: Mapping[str, str] = SPEC_FIELDS) -> None:
    """InvalidArgument naming the field (as `shown` names it) when the nodes the spec lets the job use hold no
    block of its size inside its allocation, even with every partition gone, drain ended and failure repaired: it
    would wait forever."""
    nodes.check(spec, shown)
    allocation = spec.allocation or DEFAULT_ALLOCATION
    capacity = state.capacity_mask(allocation)
    if largest_free_block(capacity & nodes.mask(spec), state.pod.ipus) >= spec.ipus:
        return
    raise nodes.no_block(spec, allocation, capacity, shown)
