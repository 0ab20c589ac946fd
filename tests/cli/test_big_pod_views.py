"""`vipu info` and `vipu top` stay a screen long on a big Pod: racks of the same state share a line (sinfo's
grouping), `top` names only the running jobs that fit, and a frame for a pipe keeps each line whole. Built from
messages, no controller."""

from __future__ import annotations

import json
from types import SimpleNamespace

from rich.console import Console

from vipu.cli.node_info import Group, Node, chosen, collapsed, node_state as shown_state, summary
from vipu.partition.agent_states import node_state
from vipu.cli.nodes import Machines, blocks_of, numbered, ranges
from vipu.partition.node_names import hostlist
from vipu.cli.top import UNWRAPPED, frame
from vipu.v1 import job_pb2 as j
from vipu.v1 import partition_pb2 as p


def test_numbered_names_span_widths():
    assert ranges([3, 0, 1, 2, 5, 9, 10, 11]) == "0-3,5,9-11"
    assert numbered("pod64-", range(1024)) == "pod64-[0-1023]"
    assert numbered("pod64-", [7]) == "pod64-7"


def test_racks_of_the_same_counts_share_a_row():
    """Columns: IPUS, IDLE, ALLOCATED, COMPLETING, DRAINING, DRAINED, FAILED."""
    ilds = [j.Pod64Info(ild=n, total=64, idle=64) for n in range(1024)]
    ilds[3] = j.Pod64Info(ild=3, total=64, idle=60, failed=4)
    ilds[5] = j.Pod64Info(ild=5, total=64, idle=56, allocated=4, completing=4)
    assert collapsed(ilds) == [["pod64-[0-2,4,6-1023]", 64, 64, 0, 0, 0, 0, 0], ["pod64-3", 64, 60, 0, 0, 0, 0, 4],
                               ["pod64-5", 64, 56, 4, 4, 0, 0, 0]]


def test_summary_json_is_a_line_per_partition_not_its_machines():
    def node(n: int, partition: str, state: str) -> Node:
        machine = p.Machine(machine=n, name=f"ag{n:02d}", ipus=4, state="down" if state == "failed" else state,
                            **{state: 4})
        return Node(machine.name, partition, machine, shown_state(machine))

    default = Group((node(0, "default", "allocated"), node(1, "default", "idle"), node(2, "default", "failed")))
    assert json.loads(json.dumps(summary([default, Group((node(3, "a1", "idle"),))]))) == [
        {"partition": "default", "default": True, "avail": "up", "timelimit": "infinite",
         "nodes": {"allocated": 1, "idle": 1, "other": 1, "total": 3},
         "ipus": {"allocated": 4, "idle": 4, "other": 4, "total": 12}, "nodelist": "ag[00-02]"},
        {"partition": "a1", "default": False, "avail": "up", "timelimit": "infinite",
         "nodes": {"allocated": 0, "idle": 1, "other": 0, "total": 1},
         "ipus": {"allocated": 0, "idle": 4, "other": 0, "total": 4}, "nodelist": "ag03"}]


class _Pod:
    """A controller's replies for a Pod of 16 racks of 16 machines: racks 0-13 each held by 4 jobs' partitions, rack
    14 idle with a failed IPU, rack 15 idle; 56 running jobs, 3 pending. `completing`: rack 13's 4 jobs have ended,
    their programs still ending (KillWait), so its IPUs are completing."""

    def __init__(self, completing: bool = False):
        self.partitions, self.jobs = self, self
        self.ipus = []
        for n in range(16 * 64):
            rack, machine = divmod(n, 64)[0], n // 4
            held = "completing" if completing and rack == 13 else "allocated"
            state, holder = (held, f"slurm_{1 + n // 16}") if rack < 14 else ("idle", "")
            self.ipus.append(p.Ipu(id=n, machine=machine, ild=rack, agent=f"ag{machine}", state=state,
                                   partition=holder))
        self.ipus[14 * 64 + 5].state = "failed"
        self.running = [j.Job(id=1 + k, name="sleep", user="u", ipus=16, state_code="R", partition=f"slurm_{1 + k}")
                        for k in range(56)]

    def every_page(self, call, request):
        return call(request)

    def call(self, call, request):
        return call(request)

    def ListIpus(self, request):
        return p.ListIpusResponse(ipus=self.ipus)

    def ListMachines(self, request):
        machines = {}
        for i in self.ipus:
            m = machines.setdefault(i.machine, p.Machine(machine=i.machine, ild=i.ild, name=i.agent, agent=i.agent,
                                                         ipus=4))
            setattr(m, i.state, getattr(m, i.state) + 1)
            if i.partition and i.partition not in m.partitions:
                m.partitions.append(i.partition)
        for m in machines.values():  # as the controller says it (vipu/partition/ipu_status.py)
            m.state = node_state(m.draining + m.drained > 0, bool(m.partitions), m.ipus,
                                 m.allocated + m.completing + m.draining, m.failed, m.completing)
        return p.ListMachinesResponse(machines=list(machines.values()), ipus_per_machine=4)

    def ClusterInfo(self, request):
        ilds = [j.Pod64Info(ild=r, total=64) for r in range(16)]
        for i in self.ipus:
            setattr(ilds[i.ild], i.state, getattr(ilds[i.ild], i.state) + 1)
        return j.ClusterInfoResponse(pod="big", ilds=ilds, running_jobs=56, pending_jobs=3)

    def ListJobs(self, request):
        if "R" in request.states:
            return j.ListJobsResponse(jobs=self.running[:request.page_size], total_size=len(self.running))
        return j.ListJobsResponse(jobs=[j.Job(id=100 + k, name="wait", user="u", ipus=1024, state_code="PD",
                                              reason="Resources") for k in range(3)])


def test_a_big_pod_frame_groups_racks_and_counts_the_jobs_it_leaves_out():
    console = Console(width=UNWRAPPED, record=True, color_system=None)
    console.print(frame(_Pod(), running_rows=5))
    lines = console.export_text().splitlines()
    assert lines[0] == "big: 1024 IPUs  896 allocated  127 idle  1 failed  | 56 running, 3 pending jobs"
    racks = [line.split("│") for line in lines if "│" in line and line[0].isdigit() and "sleep" not in line]
    assert [[c.strip() for c in r] for r in racks if "#" in r[2] or "." in r[2]] == [
        ["0-13", "0-223", "#" * 16, "0.0%", "slurm_1 slurm_2 slurm_3 slurm_4 +52"],
        ["14", "224-239", "." + "X" + "." * 14, "0.0%", ""],
        ["15", "240-255", "." * 16, "0.0%", ""]]
    running = [line for line in lines if "sleep" in line]
    assert len(running) == 5 and any(line.startswith("... 51 more") for line in lines)
    assert len(lines) < 40


def test_a_big_pod_frame_shows_a_rack_whose_jobs_are_completing_apart():
    """Rack 13's jobs ended, their programs still ending: its machines are marked c, not #, on a row of their own, and
    the title counts its IPUs completing apart from allocated, as `vipu info` and vipu_ipus do."""
    console = Console(width=UNWRAPPED, record=True, color_system=None)
    console.print(frame(_Pod(completing=True), running_rows=5))
    lines = console.export_text().splitlines()
    assert lines[0] == "big: 1024 IPUs  832 allocated  64 completing  127 idle  1 failed  | 56 running, 3 pending jobs"
    racks = [[c.strip() for c in line.split("│")] for line in lines if "│" in line and line[0].isdigit()]
    assert racks[:2] == [["0-12", "0-207", "#" * 16, "0.0%", "slurm_1 slurm_2 slurm_3 slurm_4 +48"],
                         ["13", "208-223", "c" * 16, "0.0%", "slurm_53 slurm_54 slurm_55 slurm_56"]]
    assert "# allocated  c completing  ~ draining" in "\n".join(lines)


def test_the_queue_asks_only_for_the_machines_its_running_jobs_span():
    """`vipu queue -l` on 65,536 IPUs read every IPU for the node lists of a few jobs; it asks ListMachines for the
    blocks its placed jobs hold, and with none of them for one machine (the Pod's IPUs per machine)."""
    asked = []

    class Conn:
        partitions = SimpleNamespace(ListMachines="ListMachines")

        def every_page(self, call, request):
            asked.append([(b.first_ipu, b.ipus) for b in request.blocks])
            names = {m: f"ag{m:05d}" for f, n in asked[-1] for m in range(f // 4, (f + n - 1) // 4 + 1)}
            return p.ListMachinesResponse(machines=[p.Machine(machine=m, name=x) for m, x in names.items()],
                                          ipus_per_machine=4)

    running = j.Job(id=1, ipus=16, state_code="R", detail={"first_ipu": 65_520})
    pending = j.Job(id=2, ipus=64, state_code="PD")
    machines = Machines.fetch(Conn(), blocks_of([running, pending, running]))
    assert asked == [[(65_520, 16)]]
    assert hostlist(machines.spanned(65_520, 16)) == "ag[16380-16383]" and machines.count(64) == 16
    assert Machines.fetch(Conn(), blocks_of([pending])).per_machine == 4 and asked[-1] == [(0, 1)]


def test_comp_counts_allocated_and_a_machine_with_failed_ipus_and_none_in_use_other():
    """sinfo's NODES(A/I/O/T): comp is allocated, as sinfo counts a COMPLETING node; a mix machine with nothing in
    use (an IPU failed, the rest idle) is other, neither at work nor whole; -t comp picks the comp one."""
    def node(n: int, state: str, **ipus: int) -> Node:
        machine = p.Machine(machine=n, name=f"ag{n:02d}", ipus=4, state=state, **ipus)
        return Node(machine.name, "default", machine, shown_state(machine))

    nodes = [node(0, "completing", completing=4), node(1, "mixed", idle=3, failed=1),
             node(2, "mixed", allocated=1, idle=2, failed=1), node(3, "idle", idle=4)]
    assert [n.state for n in nodes] == [("comp", "completing"), ("mix", "mixed"), ("mix", "mixed"), ("idle", "idle")]
    group = Group(tuple(nodes))
    assert (group.machines(True), group.ipus()) == ("2/1/1/4", "5/9/2/16")
    assert [n.name for n in chosen(nodes, [], ["comp"])] == ["ag00"]
    assert [n.name for n in chosen(nodes, [], ["completing", "mix"], ["ag[00-01]"])] == ["ag00", "ag01"]
