"""`vipu top`: a live terminal view of the Pod (the gc-monitor of this cluster): each machine's IPUs and who holds
them, running jobs and the head of the queue. It has nothing to crash on when nothing runs: empty is a state.

On a Pod of more than MACHINE_ROWS machines (a Pod1024 has 256, the largest 16,384) a row stands for an IPU-Link
domain (a Pod64 rack) instead of a machine, and only the running jobs and the head of the queue are fetched, never
the whole queue (100,000 pending jobs are 100 pages)."""

from __future__ import annotations

import time

from typing import TYPE_CHECKING

import typer

from vipu.cli.job_ids import job_id
from vipu.client.messages import seconds
from vipu.v1 import job_pb2 as j
from vipu.v1 import partition_pb2 as p

if TYPE_CHECKING:
    from rich.console import Group

MACHINE_ROWS = 64  # a Pod256's machines, one row each; above it, a row per IPU-Link domain
COLOURS = ["green", "cyan", "magenta", "yellow", "blue", "bright_green", "bright_cyan", "bright_magenta"]


ORDER = ("failed", "draining", "drained", "allocated", "idle")


def _by_machine(ipus) -> list[list]:
    out: dict[int, list] = {}
    for ipu in ipus:
        out.setdefault(ipu.machine, []).append(ipu)
    return list(out.values())


def frame(conn, queue_rows: int = 10) -> Group:
    from rich.console import Group  # rich costs ~30 ms to import: only `vipu top` pays it
    from rich.table import Table
    from rich.text import Text

    ipus = conn.every_page(conn.partitions.ListIpus, p.ListIpusRequest()).ipus
    info = conn.call(conn.jobs.ClusterInfo, j.ClusterInfoRequest())
    running_jobs = conn.every_page(conn.jobs.ListJobs, j.ListJobsRequest(brief=True, states=["R", "CG"])).jobs
    head = conn.call(conn.jobs.ListJobs, j.ListJobsRequest(brief=True, states=["PD"], page_size=queue_rows)).jobs
    colour = {}
    for ipu in ipus:
        if ipu.partition and ipu.partition not in colour:
            colour[ipu.partition] = COLOURS[len(colour) % len(COLOURS)]
    counts = {s: sum(1 for i in ipus if i.state == s) for s in ("idle", "allocated", "draining", "drained", "failed")}
    title = Text(f"{info.pod}: {len(ipus)} IPUs  ", style="bold")
    title.append(f"{counts['allocated']} allocated  ", style="cyan")
    title.append(f"{counts['idle']} idle  ")
    for drain in ("draining", "drained"):  # only when an agent is drained: most Pods never show them
        if counts[drain]:
            title.append(f"{counts[drain]} {drain}  ", style="yellow")
    title.append(f"{counts['failed']} failed  ", style="red" if counts["failed"] else "")
    title.append(f"| {info.running_jobs} running, {info.pending_jobs} pending jobs")

    per_machine = len({i.machine for i in ipus}) <= MACHINE_ROWS
    caption = "# allocated  ~ draining  . idle  - drained  X failed" + ("" if per_machine else
                                                                         " (a mark per machine)")
    machines = Table(title="IPU-Machines" if per_machine else "IPU-Link domains (Pod64 racks)", caption=caption,
                     show_edge=False, pad_edge=False)
    machines.add_column("machine" if per_machine else "ild")
    machines.add_column("agent" if per_machine else "machines")
    machines.add_column("IPUs")
    machines.add_column("util")
    machines.add_column("partitions")
    by_row: dict[int, list] = {}
    for ipu in ipus:
        by_row.setdefault(ipu.machine if per_machine else ipu.ild, []).append(ipu)
    for row, members in sorted(by_row.items()):
        cells = Text()
        # a mark per IPU, or on a large Pod per machine: the first of its IPUs in the order failed, draining,
        # drained, allocated, idle (so a machine with a failed IPU shows X)
        marked = members if per_machine else [min(same, key=lambda i: ORDER.index(i.state)) for same in
                                              _by_machine(members)]
        for ipu in marked:
            # draining: the drain's yellow, not the partition's colour, which the partitions column still names
            mark, style = {"failed": ("X", "bold red"), "allocated": ("#", colour.get(ipu.partition, "")),
                           "draining": ("~", "bold yellow"), "drained": ("-", "yellow")}.get(ipu.state, (".", "dim"))
            cells.append(mark, style=style)
        names = sorted({i.partition for i in members if i.partition})
        util = sum(i.utilization for i in members) / len(members)
        # one decimal: the small emulated jobs keep their IPUs under 1% busy, which whole percents showed as idle
        where = members[0].agent if per_machine else f"{members[0].machine}-{members[-1].machine}"
        machines.add_row(str(row), where, cells, f"{util:6.1%}", Text(" ".join(names)))

    running = Table(title="Running", show_edge=False, pad_edge=False)
    waiting = Table(title=f"Queue (first {queue_rows})", show_edge=False, pad_edge=False)
    for table in (running, waiting):
        for column in ("JOBID", "NAME", "USER", "IPUS"):
            table.add_column(column)
    running.add_column("PARTITION")
    waiting.add_column("REASON")
    now = time.time()
    for x in running_jobs:
        if x.state_code in ("R", "CG"):
            # a modelled job computes nothing: its IPUs' figures are the planner's prediction
            name = Text(x.name).append(" (modelled)", style="dim") if x.modelled else x.name
            running.add_row(job_id(x), name, x.user, str(x.ipus), Text(x.partition, style=colour.get(x.partition, "")))
    pending = [x for x in head if x.state_code == "PD"][:queue_rows]
    for x in pending:
        start = f" (start ~{max(0, seconds(x.expected_start) - now):.0f}s)" if x.HasField("expected_start") else ""
        waiting.add_row(job_id(x), x.name, x.user, str(x.ipus), x.reason + start)
    parts = [title, machines, running if running.row_count else Text("No job is running.", style="dim"),
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
        if once or not console.is_terminal:
            console.print(frame(conn))
            return
        try:
            with Live(frame(conn), console=console, refresh_per_second=4, screen=False) as live:
                while True:
                    time.sleep(interval)
                    live.update(frame(conn))
        except KeyboardInterrupt:
            pass
