"""`vipu info`: the Pod by IPU-Link domain, or, with sinfo's options (-N, -s, -o, -R), its IPU-Machines as sinfo shows
nodes: grouped by partition (the V-IPU allocation whose agent holds the machine) and by every other field shown,
or a line each with -N."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

import typer

from vipu.cli.context import JsonOption, ShortNoHeaderOption
from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_selection import given
from vipu.cli.nodes import DEFAULT_PARTITION, numbered
from vipu.cli.output import as_dict, print_json, table
from vipu.cli.slurm_format import Column, percent_layout, render
from vipu.cli.slurm_time import stamp
from vipu.client.messages import seconds
from vipu.partition.ipu_states import IN_USE, IPU_STATES
from vipu.partition.node_names import expand, hostlist, natural_key
from vipu.v1 import job_pb2 as j
from vipu.v1 import partition_pb2 as p

# a machine's state, as the controller gives it (vipu/partition/agent_states.py): (sinfo's compact, long)
_STATES = {"idle": ("idle", "idle"), "allocated": ("alloc", "allocated"), "mixed": ("mix", "mixed"),
           "completing": ("comp", "completing"), "draining": ("drng", "draining"), "drained": ("drain", "drained"),
           "down": ("down", "down")}
MIXED = _STATES["mixed"]
BUSY = {_STATES[s] for s in ("allocated", "mixed", "completing")}  # sinfo counts these nodes allocated (%A, %F)
OUT_OF_SERVICE = {_STATES[s] for s in ("draining", "drained", "down")}  # sinfo -R lists these, and any with a reason


def node_state(m: p.Machine) -> tuple[str, str]:
    """The controller's one rule (agent_states.node_state): down when every IPU failed; a machine whose agent is
    drained (or that has none) draining while a partition holds some of its IPUs, else drained; alloc when running
    jobs hold all its IPUs but failed ones; comp while a stopped job's run is torn down on it; mix when some IPUs
    are in use or failed and others idle (a failed IPU counts as other in %C); else idle."""
    return _STATES.get(m.state, ("unk", "unknown"))  # sinfo's UNKNOWN: a controller older than its state field


class Node(NamedTuple):  # not a dataclass: 16,384 are made for the largest Pod, a tenth of the time
    name: str
    partition: str
    machine: p.Machine  # its IPUs counted by state
    state: tuple[str, str]  # node_state(machine): worked out once, as 16,384 nodes are grouped and counted

    @property
    def ipus(self) -> int:
        return self.machine.ipus

    def count(self, *states: str) -> int:
        return sum(getattr(self.machine, s) for s in states)


@dataclass(frozen=True)
class Group:
    """The nodes a line of sinfo stands for."""

    nodes: tuple[Node, ...]

    @property
    def first(self) -> Node:
        return self.nodes[0]

    def ipu_counts(self) -> tuple[int, int, int, int]:
        """Allocated (completing and draining ones too: a job holds them), idle, other (drained, failed), total."""
        a = sum(n.count(*IN_USE) for n in self.nodes)
        i = sum(n.count("idle") for n in self.nodes)
        t = sum(n.ipus for n in self.nodes)
        return a, i, t - a - i, t

    def ipus(self) -> str:
        """A/I/O/T."""
        return "/".join(map(str, self.ipu_counts()))

    def machine_counts(self) -> tuple[int, int, int, int]:
        """Nodes allocated (alloc, mix, comp: as sinfo counts them), idle, other (draining, drained, down, and mix with
        none in use: some IPUs failed and the rest idle, a machine neither at work nor whole), total."""
        a = sum(n.state in BUSY and n.count(*IN_USE) > 0 for n in self.nodes)
        i = sum(n.state == _STATES["idle"] for n in self.nodes)
        t = len(self.nodes)
        return a, i, t - a - i, t

    def machines(self, other: bool) -> str:
        """A/I(/O/T)."""
        counts = self.machine_counts()
        return "/".join(map(str, counts if other else counts[:2]))


def _partition(g: Group) -> str:
    return g.first.partition + ("*" if g.first.partition == DEFAULT_PARTITION else "")


AGGREGATES = {"D", "N", "C", "A", "F"}  # a group's sums; every other field is the same on each node of a line
LETTERS: dict[str, Column] = {
    "a": Column("AVAIL", lambda g: "up"),
    "A": Column("NODES(A/I)", lambda g: g.machines(False)),
    "c": Column("CPUS", lambda g: str(g.first.ipus)),
    "C": Column("CPUS(A/I/O/T)", Group.ipus),
    "D": Column("NODES", lambda g: str(len(g.nodes))),
    "E": Column("REASON", lambda g: g.first.machine.reason.text or "none"),
    "H": Column("TIMESTAMP", lambda g: stamp(seconds(g.first.machine.reason.time) if _has_reason(g) else None)),
    "F": Column("NODES(A/I/O/T)", lambda g: g.machines(True)),
    "h": Column("OVERSUBSCRIBE", lambda g: "NO"),
    "l": Column("TIMELIMIT", lambda g: "infinite"),  # no limit of its own (a job's is at most 366 days)
    "N": Column("NODELIST", lambda g: hostlist(n.name for n in g.nodes), cut=False),
    "P": Column("PARTITION", _partition),
    "R": Column("PARTITION", lambda g: g.first.partition),
    "t": Column("STATE", lambda g: g.first.state[0]),
    "T": Column("STATE", lambda g: g.first.state[1]),
    "u": Column("USER", lambda g: g.first.machine.reason.user or "Unknown"),
    "U": Column("USER", lambda g: g.first.machine.reason.user or "Unknown"),  # sinfo adds the uid: a vipu user has none
}
_SUMS = {id(LETTERS[k]) for k in AGGREGATES}
SUMMARIZE = "%#P %.5a %.10l %.16F  %N"  # sinfo's formats (man sinfo)
DEFAULT = "%#P %.5a %.10l %.6D %.6t %N"  # sinfo's own default: vipu info's, with -p or -t and no other format
NODE = "%#N %.6D %#P %6t"
REASONS = "%20E %9u %19H %N"  # sinfo -R
LONG = {"": "%#P %.5a %.10l %.6D %.11T %N", "N": "%#N %.6D %#P %.11T %.4c %20E", "R": "%20E %12U %19H %6t %N"}


def _has_reason(g: Group) -> bool:
    return g.first.machine.HasField("reason")


def _listed(n: Node) -> bool:
    """sinfo -R's nodes: drained, draining or down, or with a reason (a machine with a failed IPU)."""
    return n.state in OUT_OF_SERVICE or n.machine.HasField("reason")


def nodes(conn) -> list[Node]:
    """Every IPU-Machine, by partition then machine, each in the partition its agent is in."""
    machines = conn.every_page(conn.partitions.ListMachines, p.ListMachinesRequest()).machines
    allocations = conn.every_page(conn.partitions.ListAllocations, p.ListAllocationsRequest()).allocations
    partition_of = {agent: a.name for a in allocations for agent in a.agents}
    found = [Node(m.name, partition_of.get(m.agent, DEFAULT_PARTITION), m, node_state(m)) for m in machines]
    order = {name: (name != DEFAULT_PARTITION, natural_key(name)) for name in {n.partition for n in found}}
    return sorted(found, key=lambda n: order[n.partition])  # stable: machine order within a partition


def chosen(found: list[Node], partitions: list[str], states: list[str], names: list[str] = ()) -> list[Node]:
    """sinfo's -p, -t and -n: the machines in these partitions, in these states (names or sinfo's short forms, in
    any case; drain matches draining and drained, as in sinfo) and named by these host lists (ag[00-03],ag07);
    names that are no machine of the Pod are refused, naming them."""
    machines = named(found, names)
    if machines is not None:
        found = [n for n in found if n.name in machines]
    wanted = {s.lower() for s in states}
    known = {name for pair in (*_STATES.values(), MIXED) for name in pair}
    for state in sorted(wanted - known):
        fail("vipu", f"-t/--states: {state!r} is not a node state here; give some of {', '.join(sorted(known))}",
             BAD_INPUT)
    if "drain" in wanted:
        wanted.add("drng")
    return [n for n in found if (not partitions or n.partition in partitions)
            and (not wanted or not wanted.isdisjoint(n.state))]


def named(found: list[Node], lists: list[str]) -> set[str] | None:
    """The machines -n's host lists name (None: -n not given), refused naming those that are none of `found`."""
    if not lists:
        return None
    try:
        names = {name for text in lists for name in expand(text)}
    except ValueError as e:
        fail("vipu", f"-n/--nodes: {e}", BAD_INPUT)
    unknown = names - {n.name for n in found}
    if unknown:
        fail("vipu", f"-n/--nodes names {hostlist(sorted(unknown, key=natural_key))}, which"
             f" {'is no IPU-Machine' if len(unknown) == 1 else 'are no IPU-Machines'} of this Pod; `vipu info -N`"
             " lists them", BAD_INPUT)
    return names


def grouped(found: list[Node], layout, per_node: bool) -> list[Group]:
    """sinfo's lines: nodes that show the same value in every field but the sums share one (a line each with
    -N), in the order of their first node."""
    if per_node:
        return [Group((n,)) for n in found]
    lines: dict[tuple, list[Node]] = {}
    keys: dict[tuple, tuple] = {}  # every field but the sums reads only these: worked out once for each
    for n in found:
        r = n.machine.reason
        seen = (n.partition, n.state, n.ipus, r.text, r.user, r.time.seconds)
        key = keys.get(seen)
        if key is None:
            key = keys[seen] = tuple(c.column.value(Group((n,))) for c in layout.cells if id(c.column) not in _SUMS)
        lines.setdefault(key, []).append(n)
    return [Group(tuple(ns)) for ns in lines.values()]


def register(app: typer.Typer) -> None:
    @app.command()
    def info(
        ctx: typer.Context,
        node: bool = typer.Option(False, "--Node", "-N", help=f"a line per IPU-Machine, sinfo -N's {NODE!r}"),
        summarize: bool = typer.Option(
            False, "--summarize", "-s",
            help=f"a line per partition with machines allocated/idle/other/total, {SUMMARIZE!r}"),
        fmt: str = typer.Option(None, "--format", "-o",
                                help="sinfo's %-format (see below); else SINFO_FORMAT; with -N a line per machine, and"
                                     " -s is ignored, as sinfo ignores it"),
        partition: list[str] = typer.Option(None, "--partition", "-p",
                                            help="only the machines of these partitions (V-IPU allocations, a comma"
                                                 " list); else SINFO_PARTITION"),
        states: list[str] = typer.Option(None, "--states", "-t",
                                         help="only machines in these states (a comma list: idle, alloc, mix,"
                                              " comp, drng, drain, down, or their long names)"),
        machines: list[str] = typer.Option(None, "--nodes", "-n",
                                           help="only these IPU-Machines: a Slurm host list, ag[00-03],ag07 (sinfo"
                                                " -n); a name that is none is refused"),
        reasons: bool = typer.Option(False, "--list-reasons", "-R",
                                     help=f"only machines drained, draining or down, or with a failed IPU, with why,"
                                          f" who said so and when (sinfo -R's {REASONS!r})"),
        long: bool = typer.Option(False, "--long", "-l",
                                  help=f"long state names; with -R {LONG['R']!r} (sinfo -R -l), with -N"
                                       f" {LONG['N']!r}"),
        json_out: bool = JsonOption,
        no_header: bool = ShortNoHeaderOption,
    ):
        """IPUs idle, allocated, completing, draining, drained and failed per IPU-Link domain (a Pod64 of a Bow Pod;
        sinfo).

        With -N, -s, -o, -p, -t, -n, -R or -l, the IPU-Machines as sinfo shows nodes: a node is a machine (named by its
        agent), its CPUs are its IPUs, and its partition is the V-IPU allocation its agent is in (default*). Its
        state: down when all its IPUs failed; drng when its agent is drained (or it has none) and a partition still
        holds some of its IPUs, drain once none does (`vipu-admin get agent` says the same: DRAINING, DRAINED);
        alloc when running jobs hold all its IPUs but failed ones; comp while a stopped job's program ends there
        (KillWait; squeue's CG); mix when some IPUs are in use or failed and others idle (a machine with a failed
        IPU is not whole, though its others take work); else idle. A failed IPU counts as other in %C, and a mix
        machine with none in use as other in %F.

        -R lists the machines out of service, those with the same reason, user and time on one line: an agent's
        drain reason (`vipu-admin drain agent NAME --reason TEXT`), else the latest of its IPUs' failures
        (`vipu-admin fail ipus --reason`, or what failed them); none for one drained before reasons were kept.

        Formats (-o): %P partition (* for the default), %R partition, %a avail, %l time limit, %D nodes, %t and
        %T state, %N node list, %c IPUs per node, %C IPUs allocated/idle/other/total, %A nodes allocated/idle,
        %F nodes allocated/idle/other/total, %E reason (none when none), %u and %U who set it, %H when, %h
        oversubscribe; %.Nx right-justifies in N characters.

        Without them, IPU-Link domains with the same counts share a row, named as a range (pod64-[0-1023]): each
        figure is one domain's.

        --json: each domain's counts; with -N, -o or -R also "nodes", each machine's partition, state, IPUs by
        state and reason (text, user, time; null when none); with -s only "partitions", -s's lines: nodes and IPUs
        allocated, idle, other, total, and the node list."""
        cli = ctx.obj
        parts = given(partition or ([os.environ["SINFO_PARTITION"]] if os.environ.get("SINFO_PARTITION") else []),
                      "-p/--partition", "partitions (e.g. -p default)")
        wanted = given(states, "-t/--states", "node states (e.g. -t idle,mix)")
        names = given(machines, "-n/--nodes", "IPU-Machine names (e.g. -n ag[00-03])")
        spec = fmt if fmt is not None else (  # -o '' is refused, not read as the default, as vipu queue refuses it
            os.environ.get("SINFO_FORMAT") or (LONG["R" if reasons else "N" if node else ""] if long else None)
            or (REASONS if reasons else NODE if node else SUMMARIZE if summarize else None)
            or (DEFAULT if parts or wanted or names else None))
        if spec is None:
            by_domain(cli, cli.wants_json(json_out), no_header)
            return
        if cli.wants_json(json_out) and summarize and not node and fmt is None:
            print_json({"partitions": summary(grouped(chosen(nodes(cli.conn), parts, wanted, names),
                                                      percent_layout(SUMMARIZE, LETTERS, "-s"), False))})
            return
        if cli.wants_json(json_out):
            found = chosen(nodes(cli.conn), parts, wanted, names)
            by_domain(cli, True, no_header, [n for n in found if _listed(n)] if reasons else found)
            return
        variable = "SINFO_FORMAT" if spec == os.environ.get("SINFO_FORMAT") and not fmt else "-o/--format"
        layout = percent_layout(spec, LETTERS, variable)
        found = chosen(nodes(cli.conn), parts, wanted, names)
        if reasons:
            found = [n for n in found if _listed(n)]
        lines = render(layout, grouped(found, layout, node), cli.with_header(no_header))
        if lines:
            print("\n".join(lines))


def _reason(n: Node) -> dict | None:
    """--json: why the machine is out of service, who said so and when (RFC 3339, as every --json time), or null."""
    if not n.machine.HasField("reason"):
        return None
    r = n.machine.reason
    return {"text": r.text, "user": r.user, "time": as_dict(n.machine)["reason"]["time"]}


def summary(groups: list[Group]) -> list[dict]:
    """-s --json: sinfo -s's lines, a partition each, not its machines."""
    kinds = ("allocated", "idle", "other", "total")
    return [{"partition": g.first.partition, "default": g.first.partition == DEFAULT_PARTITION, "avail": "up",
             "timelimit": "infinite", "nodes": dict(zip(kinds, g.machine_counts())),
             "ipus": dict(zip(kinds, g.ipu_counts())), "nodelist": hostlist(n.name for n in g.nodes)}
            for g in groups]


def collapsed(ilds) -> list[list]:
    """The table's rows: racks with the same counts share one, named as a host range (pod64-[0-1023]), as sinfo
    puts nodes of the same state on one line; in the order of their first rack."""
    same: dict[tuple, list[int]] = {}
    for r in ilds:
        same.setdefault((r.total, r.idle, r.allocated, r.completing, r.draining, r.drained, r.failed), []).append(r.ild)
    return [[numbered(f"pod{key[0]}-", members), *key] for key, members in same.items()]


def by_domain(cli, as_json: bool, no_header: bool, machines: list[Node] | None = None) -> None:
    """The table by IPU-Link domain, racks of the same counts on one row; --json: each domain's counts, and with
    -N or -o each machine's too (`machines`)."""
    reply = cli.conn.call(cli.conn.jobs.ClusterInfo, j.ClusterInfoRequest())

    def name(ild) -> str:  # pod64-1 for the second Pod64 of a Bow-Pod128; pod16-0 for a Bow-Pod16's one domain
        return f"pod{ild.total}-{ild.ild}"

    if as_json:
        data = as_dict(reply)
        for row, ild in zip(data["ilds"], reply.ilds):
            row["name"] = name(ild)  # what the table shows
        if machines is not None:
            data["nodes"] = [{"name": n.name, "partition": n.partition, "state": n.state[1], "ipus": n.ipus,
                              **{s: n.count(s) for s in IPU_STATES}, "reason": _reason(n)} for n in machines]
        print_json(data)
        return
    rows = collapsed(reply.ilds)
    header = ["ILD", "IPUS", "IDLE", "ALLOCATED", "COMPLETING", "DRAINING", "DRAINED", "FAILED"]
    print(table(header, rows, cli.with_header(no_header)))
    comp = f" (comp: {reply.completing_nodes})" if reply.completing_nodes else ""  # the nodes `info -N` shows comp
    completing = f", {reply.completing_jobs} completing{comp}" if reply.completing_jobs else ""
    print(f"\n{reply.pod}: {reply.running_jobs} running{completing}, {reply.pending_jobs} pending")
