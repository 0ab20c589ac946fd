"""`vipu top`: a live terminal view of the Pod (the gc-monitor of this cluster): each machine's IPUs and who holds
them, running jobs and the head of the queue. It has nothing to crash on when nothing runs: empty is a state.

On a Pod of more than MACHINE_ROWS machines (a Pod1024 has 256, the largest 16,384) a row stands for the IPU-Link
domains (Pod64 racks) whose machines show the same marks, as sinfo puts nodes of one state on a line, at most
RACK_ROWS of them. Only the running jobs that fit and the head of the queue are fetched, never the whole queue
(100,000 pending jobs are 100 pages); a "... N more" line counts the rest, as top does past the screen's end."""

from __future__ import annotations

import time

from typing import TYPE_CHECKING

import typer

from vipu.cli.job_ids import job_id
from vipu.partition.node_names import ranges
from vipu.client.messages import seconds
from vipu.partition.node_names import natural_key
from vipu.v1 import job_pb2 as j
from vipu.v1 import partition_pb2 as p

if TYPE_CHECKING:
    from rich.console import Group

MACHINE_ROWS = 64  # a Pod256's machines, one row each; above it, a row per IPU-Link domain
RACK_ROWS = 16  # rows of racks of the same marks, before "... N more"
RUNNING_ROWS = 20  # running jobs shown when not on a terminal (on one: what fits its height)
UNWRAPPED = 1000  # columns when not on a terminal: no line of a frame is this long
PARTITION_NAMES = 4  # partitions named on a row of racks, before "+N"
COLOURS = ["green", "cyan", "magenta", "yellow", "blue", "bright_green", "bright_cyan", "bright_magenta"]


# which of its IPUs' states a machine's mark shows: completing over allocated, as sinfo's comp over mix
ORDER = ("failed", "draining", "drained", "completing", "allocated", "idle")


def _by_machine(ipus) -> list[list]:
    out: dict[int, list] = {}
    for ipu in ipus:
        out.setdefault(ipu.machine, []).append(ipu)
    return list(out.values())


def _mark(state: str, partition: str, colour: dict) -> tuple[str, str]:
    # draining: the drain's yellow, not the partition's colour, which the partitions column still names;
    # completing: the partition's colour (it still holds them), but another mark: its job has ended
    return {"failed": ("X", "bold red"), "allocated": ("#", colour.get(partition, "")),
            "completing": ("c", colour.get(partition, "")), "draining": ("~", "bold yellow"),
            "drained": ("-", "yellow")}.get(state, (".", "dim"))


def _marked(machine: p.Machine) -> str:
    """A machine's mark on a row of racks: its IPUs' first state in the order failed, draining, drained,
    completing, allocated, idle (a machine with a failed IPU shows X)."""
    return next(state for state in ORDER if getattr(machine, state))


def _racks(machines) -> list[tuple[list[int], list, list]]:
    """Racks whose machines show the same marks, in the order of their first: (their ILDs, their machines, the
    first rack's machines); a row's marks take its first rack's colours."""
    by_ild: dict[int, list] = {}
    for machine in machines:
        by_ild.setdefault(machine.ild, []).append(machine)
    same: dict[str, tuple[list[int], list, list]] = {}
    for ild, members in sorted(by_ild.items()):
        key = "".join(_marked(m)[0] for m in members)  # states, not partitions: 691 jobs' racks share a row
        group = same.setdefault(key, ([], [], members))
        group[0].append(ild)
        group[1].extend(members)
    return list(same.values())


def _names(partitions: set[str], every: bool) -> str:
    """The partitions on a row, slurm_9 before slurm_10; on a row of racks the first few and +N."""
    names = sorted(partitions, key=natural_key)
    more = 0 if every else len(names) - PARTITION_NAMES
    return " ".join(names[:len(names) - max(more, 0)]) + (f" +{more}" if more > 0 else "")


def frame(conn, queue_rows: int = 10, running_rows: int = RUNNING_ROWS) -> Group:
    from rich.console import Group  # rich costs ~30 ms to import: only `vipu top` pays it
    from rich.table import Table
    from rich.text import Text

    # a row per rack on a big Pod: its machines' counts (16,384 rows), not its every IPU (65,536); a mark per
    # IPU, so the IPUs, only up to a Pod256
    listed = conn.every_page(conn.partitions.ListMachines, p.ListMachinesRequest()).machines
    per_machine = len(listed) <= MACHINE_ROWS
    ipus = conn.every_page(conn.partitions.ListIpus, p.ListIpusRequest()).ipus if per_machine else ()
    info = conn.call(conn.jobs.ClusterInfo, j.ClusterInfoRequest())
    listing = conn.call(conn.jobs.ListJobs, j.ListJobsRequest(brief=True, states=["R", "CG"], page_size=running_rows))
    running_jobs, visible = listing.jobs, listing.total_size  # (under --secure, the caller's: the title counts all)
    head = conn.call(conn.jobs.ListJobs, j.ListJobsRequest(brief=True, states=["PD"], page_size=queue_rows)).jobs
    colour = {}
    for name in [i.partition for i in ipus] if per_machine else [n for m in listed for n in m.partitions]:
        if name and name not in colour:
            colour[name] = COLOURS[len(colour) % len(COLOURS)]
    counts = {s: sum(getattr(d, s) for d in info.ilds) for s in ORDER}
    title = Text(f"{info.pod}: {sum(m.ipus for m in listed)} IPUs  ", style="bold")
    title.append(f"{counts['allocated']} allocated  ", style="cyan")
    if counts["completing"]:  # only while a stopped job's program ends (KillWait)
        title.append(f"{counts['completing']} completing  ", style="cyan")
    title.append(f"{counts['idle']} idle  ")
    for drain in ("draining", "drained"):  # only when an agent is drained: most Pods never show them
        if counts[drain]:
            title.append(f"{counts[drain]} {drain}  ", style="yellow")
    title.append(f"{counts['failed']} failed  ", style="red" if counts["failed"] else "")
    completing = f"{info.completing_jobs} completing, " if info.completing_jobs else ""  # (CG: listed with the running)
    title.append(f"| {info.running_jobs} running, {completing}{info.pending_jobs} pending jobs")

    caption = "# allocated  c completing  ~ draining  . idle  - drained  X failed" + (
        "" if per_machine else " (a mark per machine)")
    machines = Table(title="IPU-Machines" if per_machine else "IPU-Link domains (Pod64 racks)", show_edge=False,
                     pad_edge=False)
    machines.add_column("machine" if per_machine else "ild")
    machines.add_column("agent" if per_machine else "machines")
    machines.add_column("IPUs")
    machines.add_column("util")
    machines.add_column("partitions")
    if per_machine:  # a mark per IPU
        for m in sorted(_by_machine(ipus), key=lambda m: m[0].machine):
            cells = Text()
            for ipu in m:
                cells.append(*_mark(ipu.state, ipu.partition, colour))
            # one decimal: the small emulated jobs keep their IPUs under 1% busy, which whole percents showed as idle
            util = sum(i.utilization for i in m) / len(m)
            names = _names({i.partition for i in m if i.partition}, True)
            machines.add_row(str(m[0].machine), m[0].agent, cells, f"{util:6.1%}", Text(names))
    else:
        rows = _racks(listed)
        for numbers, members, marked in rows[:RACK_ROWS]:
            cells = Text()
            for m in marked:
                cells.append(*_mark(_marked(m), (m.partitions or [""])[0], colour))
            util = sum(m.utilization for m in members) / len(members)
            spans = ranges({m.machine for m in members})
            where = spans if len(spans) <= 24 else f"{len(members)} machines"
            names = _names({n for m in members for n in m.partitions}, False)
            machines.add_row(ranges(numbers), where, cells, f"{util:6.1%}", Text(names))
        if len(rows) > RACK_ROWS:
            machines.add_row(f"... {len(rows) - RACK_ROWS} more rows", "", "", "", "")

    running = Table(title="Running", show_edge=False, pad_edge=False)
    waiting = Table(title=f"Queue (first {queue_rows})", show_edge=False, pad_edge=False)
    for table in (running, waiting):
        for column in ("JOBID", "NAME", "USER", "IPUS"):
            table.add_column(column)
    running.add_column("PARTITION")
    waiting.add_column("REASON")
    now = time.time()
    shown = [x for x in running_jobs if x.state_code in ("R", "CG")][:running_rows]
    # a modelled job computes nothing: its IPUs' figures are the planner's prediction. Said in a column of its own,
    # only when one is shown, so its name is the one every other view gives
    modelled = any(x.modelled for x in shown)
    if modelled:
        running.add_column("RUN")
    ending = any(x.state_code == "CG" for x in shown)  # a stopped job's program still ending: squeue's ST, CG
    if ending:
        running.add_column("ST")
    for x in shown:
        run = (Text("modelled", style="dim") if x.modelled else "",) if modelled else ()
        state = (Text(x.state_code, style="yellow" if x.state_code == "CG" else ""),) if ending else ()
        running.add_row(job_id(x), x.name, x.user, str(x.ipus), Text(x.partition, style=colour.get(x.partition, "")),
                        *run, *state)
    if visible > len(shown) and shown:
        running.add_row(f"... {visible - len(shown)} more", *[""] * (len(running.columns) - 1))
    n = info.running_jobs
    idle = ("No job is running." if not n else "The running job is not yours." if n == 1 else
            f"None of the {n} running jobs is yours.")
    pending = [x for x in head if x.state_code == "PD"][:queue_rows]
    for x in pending:
        start = f" (start ~{max(0, seconds(x.expected_start) - now):.0f}s)" if x.HasField("expected_start") else ""
        waiting.add_row(job_id(x), x.name, x.user, str(x.ipus), x.reason + start)
    # the legend on a line of its own: a caption would wrap to the table's width, mid-phrase
    parts = [title, machines, Text(caption, style="dim"),
             running if running.row_count else Text(idle, style="dim"),
             waiting if waiting.row_count else Text("The queue is empty.", style="dim")]
    return Group(*parts)


def register(app: typer.Typer) -> None:
    @app.command()
    def top(
        ctx: typer.Context,
        interval: float = typer.Option(1.0, "--interval", min=0.1, help="seconds between refreshes"),
        once: bool = typer.Option(False, "--once", help="print one frame and exit (also when not on a terminal)"),
    ):
        """A live view of IPUs per machine, running jobs and the queue (Ctrl-C to quit)."""
        from rich.console import Console
        from rich.live import Live

        conn = ctx.obj.conn
        console = Console()
        if not console.is_terminal:  # a pipe or a file: whole lines, to grep (rich would wrap at 80 columns)
            console = Console(width=UNWRAPPED)
        # on a terminal, the running jobs that fit below the rest of the frame (about 20 lines and the queue's)
        fits = max(5, console.height - 24 - RACK_ROWS) if console.is_terminal else RUNNING_ROWS
        if once or not console.is_terminal:
            console.print(frame(conn, running_rows=fits))
            return
        try:
            with Live(frame(conn, running_rows=fits), console=console, refresh_per_second=4, screen=False) as live:
                while True:
                    time.sleep(interval)
                    live.update(frame(conn, running_rows=fits))
        except KeyboardInterrupt:
            pass
