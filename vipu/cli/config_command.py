"""`vipu show config`: the configuration the controller runs with, as scontrol show config prints it (Key = Value,
sorted by key); every user may read it, as in Slurm."""

from __future__ import annotations

import typer

from vipu.cli.context import JsonOption
from vipu.cli.output import print_json
from vipu.v1 import partition_pb2 as p


def register(show: typer.Typer) -> None:
    @show.command("config")
    def show_config(ctx: typer.Context, json_out: bool = JsonOption):
        """The controller's configuration (scontrol show config).

        Its scheduling policy and policy file, its scheduler config file and what that sets (QOS, weights, limits,
        FirstJobId, MinJobAge), KillWait, RPC threads, where it keeps its state and listens: Key = Value lines,
        sorted by key; --json: an object by key. Every user may read it; it holds no secret."""
        cli = ctx.obj
        reply = cli.conn.call(cli.conn.partitions.GetConfig, p.GetConfigRequest())
        if cli.wants_json(json_out):
            print_json({e.key: e.value for e in reply.entries})
            return
        width = max((len(e.key) for e in reply.entries), default=0)
        for e in reply.entries:
            print(f"{e.key:<{width}} = {e.value}")
