"""Commands that need no controller: `vipu simulate` (trace replay in virtual time) and `vipu plan` (will a layout
fit, and how fast would it run)."""

from __future__ import annotations

import typer

from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_commands import split
from vipu.cli.output import print_json


def register(app: typer.Typer) -> None:
    @app.command()
    def simulate(
        ctx: typer.Context,
        trace: str = typer.Option(..., "--trace", help="an openb CSV or a native CSV/JSONL trace (formats:"
                                  " docs/traces.md); a relative path is from where you run vipu"),
        pod: str = typer.Option("bow-pod256", "--pod", help="a preset or a pod config file"),
        policy: list[str] = typer.Option(None, "--policy", show_default=False,
                                         help="repeat (or fifo,sjf) to compare policies. fifo: submit order;"
                                         " priority: multifactor priority order; both strict (nothing starts"
                                         " ahead of a blocked job). backfill: priority order, and jobs behind"
                                         " start early only if they delay no reservation. sjf: shortest time"
                                         " limit first, with backfill's reservations (docs/traces.md). Default:"
                                         " the --scheduler-config file's policy if it names one, else fifo,backfill"),
        scheduler_config: str = typer.Option(None, "--scheduler-config", metavar="FILE",
                                             help="the YAML SchedulerConfig vipu-server runs with (QOS, priority"
                                             " weights, limits: docs/job-spec.md), checked as vipu-server checks it;"
                                             " default: the built-in QOS low, normal, high"),
        compress: float = typer.Option(1.0, "--compress", metavar="X",
                                       help="bring arrivals X times closer (4: 4x the load); run times unchanged"),
        json_out: bool = JsonOption,
    ):
        """Replay a trace in virtual time with the live scheduler's code, and print per-policy metrics. No
        controller needed. Trace formats, and how openb's GPUs become IPUs: docs/traces.md."""
        from vipu.errors import VipuError
        from vipu.scheduler.config import load_scheduler_config
        from vipu.replay.summary import result_json
        from vipu.replay.run import main_replay, simulate_trace

        try:
            config = load_scheduler_config(scheduler_config, None) if scheduler_config else None
            policies = policies_to_replay(policy, config)
            if ctx.obj.wants_json(json_out):
                sim = simulate_trace(trace, pod, policies, config=config, compression=compress)
                print_json([result_json(r, sim) for r in sim.results])
            else:
                print(main_replay(trace, pod, policies, config=config, compression=compress))
        except VipuError as e:
            fail("vipu", e.message, BAD_INPUT)

    @app.command()
    def plan(
        ctx: typer.Context,
        spec: str = typer.Argument(..., help="a job spec with a `train` workload (YAML or JSON)"),
        pod: str = typer.Option(None, "--pod", help="plan for this Pod (a preset or file) instead of the spec's"),
        json_out: bool = JsonOption,
    ):
        """Memory per IPU and tile, whether it fits SRAM, and the predicted step time on the Pod, split into
        compute, pipeline bubble, collectives and streaming; suggests a layout that fits when it does not."""
        # (that docstring is docs/cli.md's text.) A layout that does not fit is planned all the same, its fitting
        # layouts listed under DOES NOT FIT, then the command exits 2 with `vipu submit`'s refusal of the spec.
        from vipu.errors import VipuError
        from vipu.jobs.command import plan_file
        from vipu.scheduler.job_spec import parse_spec

        try:
            answer = plan_file(spec, pod, check_job=parse_spec)  # a spec that plans is one `vipu submit` takes
        except VipuError as e:
            fail("vipu", e.message, BAD_INPUT)
        print_json(answer.as_data()) if ctx.obj.wants_json(json_out) else print(answer.text())
        if not answer.fits:
            fail("vipu", answer.refusal(), BAD_INPUT)


def policies_to_replay(asked: list[str] | None, config) -> list[str]:
    """The policies named by --policy; without the flag, the scheduler config's own policy when its file names one
    (a replay of a site's config runs the policy its controller runs), else fifo and backfill, to compare."""
    if asked:
        return split(asked)
    if config is not None and "policy" in config.model_fields_set:
        return [config.policy]
    return ["fifo", "backfill"]
