"""`vipu top`: a live terminal view of the Pod (the gc-monitor of this cluster): each machine's IPUs and who holds
them, running jobs and the head of the queue. It has nothing to crash on when nothing runs: empty is a state."""

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

COLOURS = ["green", "cyan", "magenta", "yellow", "blue", "bright_green", "bright_cyan", "bright_magenta"]


def frame(conn, queue_rows: int = 10) -> Group:
    from rich.console import Group  # rich costs ~30 ms to import: only `vipu top` pays it
    from rich.table import Table
    from rich.text import Text

    ipus = conn.every_page(conn.partitions.ListIpus, p.ListIpusRequest()).ipus
    info = conn.call(conn.jobs.ClusterInfo, j.ClusterInfoRequest())
    jobs = conn.every_page(conn.jobs.ListJobs, j.ListJobsRequest(brief=True)).jobs
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

    caption = "# allocated  ~ draining  . idle  - drained  X failed"
    machines = Table(title="IPU-Machines", caption=caption, show_edge=False, pad_edge=False)
    machines.add_column("machine")
    machines.add_column("agent")
    machines.add_column("IPUs")
    machines.add_column("util")
    machines.add_column("partitions")
    by_machine: dict[int, list] = {}
    for ipu in ipus:
        by_machine.setdefault(ipu.machine, []).append(ipu)
    for machine, members in sorted(by_machine.items()):
        cells = Text()
        for ipu in members:
            # draining: the drain's yellow, not the partition's colour, which the partitions column still names
            mark, style = {"failed": ("X", "bold red"), "allocated": ("#", colour.get(ipu.partition, "")),
                           "draining": ("~", "bold yellow"), "drained": ("-", "yellow")}.get(ipu.state, (".", "dim"))
            cells.append(mark, style=style)
        names = sorted({i.partition for i in members if i.partition})
        util = sum(i.utilization for i in members) / len(members)
        # one decimal: the small emulated jobs keep their IPUs under 1% busy, which whole percents showed as idle
        machines.add_row(str(machine), members[0].agent, cells, f"{util:6.1%}", Text(" ".join(names)))

    running = Table(title="Running", show_edge=False, pad_edge=False)
    waiting = Table(title=f"Queue (first {queue_rows})", show_edge=False, pad_edge=False)
    for table in (running, waiting):
        for column in ("JOBID", "NAME", "USER", "IPUS"):
            table.add_column(column)
    running.add_column("PARTITION")
    waiting.add_column("REASON")
    now = time.time()
    for x in jobs:
        if x.state_code in ("R", "CG"):
            # a modelled job computes nothing: its IPUs' figures are the planner's prediction
            name = Text(x.name).append(" (modelled)", style="dim") if x.modelled else x.name
            running.add_row(job_id(x), name, x.user, str(x.ipus), Text(x.partition, style=colour.get(x.partition, "")))
    pending = [x for x in jobs if x.state_code == "PD"][:queue_rows]
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
