"""Commands that need no controller: `vipu simulate` (trace replay in virtual time) and `vipu plan` (will a layout
fit, and how fast would it run)."""

from __future__ import annotations

import sys

import typer

from vipu.cli.context import JsonOption
from vipu.cli.failure import BAD_INPUT, fail
from vipu.cli.job_commands import split
from vipu.cli.output import print_json


def register(app: typer.Typer) -> None:
    @app.command()
    def simulate(
        ctx: typer.Context,
        trace: str = typer.Option(None, "--trace", help="an SWF log, an openb or Helios CSV, or a native CSV/JSONL"
                                  " trace (formats: docs/traces.md); a relative path is from where you run vipu"),
        synthetic: int = typer.Option(None, "--synthetic", metavar="N",
                                      help="instead of --trace: N jobs generated from --seed, sized and timed like a"
                                      " GPU cluster's, arriving at --load (docs/traces.md)"),
        pod: str = typer.Option("bow-pod256", "--pod", help="a preset or a pod config file"),
        policy: list[str] = typer.Option(None, "--policy", show_default=False,
                                         help="repeat (or fifo,sjf) to compare policies. fifo: submit order;"
                                         " priority: multifactor priority order; both strict (nothing starts"
                                         " ahead of a blocked job). backfill: priority order, and jobs behind"
                                         " start early only if they delay no reservation. sjf: shortest time"
                                         " limit first, with backfill's reservations (docs/traces.md). Default:"
                                         " the --scheduler-config file's policy if it names one, else fifo,backfill"),
        policy_file: list[str] = typer.Option(None, "--policy-file", metavar="FILE", show_default=False,
                                              help="your own policy, a Python file defining schedule(request) and"
                                              " ORDER (docs/traces.md); repeat to compare several; replayed after"
                                              " the --policy ones"),
        scheduler_config: str = typer.Option(None, "--scheduler-config", metavar="FILE",
                                             help="the YAML SchedulerConfig vipu-server runs with (QOS, priority"
                                             " weights, limits: docs/job-spec.md), checked as vipu-server checks it;"
                                             " default: the built-in QOS low, normal, high"),
        compress: float = typer.Option(1.0, "--compress", metavar="X",
                                       help="bring arrivals X times closer (4: 4x the load); run times unchanged"),
        swf_ipus: str = typer.Option("next-pow2", "--swf-ipus", metavar="RULE",
                                     help="an SWF log's processors to IPUs: next-pow2, factor:N (processors x N,"
                                     " then the next power of two) or scale (the log's MaxProcs onto the Pod)"),
        ipus_per_gpu: int = typer.Option(None, "--ipus-per-gpu", metavar="N", show_default=False,
                                         help="a GPU trace's (openb, Helios, --synthetic) IPUs per GPU, a power of"
                                         " two; default 4, a GPU as one IPU-Machine"),
        limit_factor: float = typer.Option(None, "--limit-factor", metavar="F", show_default=False,
                                           help="every job's time limit F x its run time (F >= 1; 1: exact"
                                           " estimates), in place of the trace's own or derived one"),
        arrivals: str = typer.Option(None, "--arrivals", metavar="poisson",
                                     help="draw arrivals: a Poisson process at --load (for a trace without times,"
                                     " or to replace its own)"),
        load: float = typer.Option(None, "--load", metavar="X",
                                   help="offered load of --arrivals or --synthetic: 0.8 (the default) asks for 80% of"
                                   " the Pod's IPU-seconds"),
        runtimes: str = typer.Option(None, "--runtimes", metavar="SPEC",
                                     help="draw run times: lognormal:MU,SIGMA (ln seconds), exponential:MEAN, a file"
                                     " of observed run times, or COLUMN of an openb pod list"),
        seed: int = typer.Option(None, "--seed", show_default=False,
                                 help="the first seed of what is drawn at random (--synthetic, --arrivals, --runtimes"
                                 " from a distribution or a file); default 1"),
        seeds: int = typer.Option(1, "--seeds", metavar="N",
                                  help="replay N seeds (seed .. seed + N - 1) and print each figure's mean and 95%"
                                  " confidence half-width"),
        bsld_threshold: float = typer.Option(10.0, "--bsld-threshold", metavar="SECONDS",
                                             help="bounded slowdown's threshold: runs shorter count as this long"),
        jobs_out: str = typer.Option(None, "--jobs-out", metavar="FILE",
                                     help="write one row per job and policy (.csv or .jsonl), with `vipu history"
                                     " --json`'s column names"),
        series_out: str = typer.Option(None, "--series-out", metavar="FILE",
                                       help="write IPUs in use and jobs queued after every step (.csv or .jsonl)"),
        plot: str = typer.Option(None, "--plot", metavar="FILE",
                                 help="draw CDFs of waits and bounded slowdowns and utilisation over time (.png or"
                                 " .svg; needs matplotlib)"),
        json_out: bool = JsonOption,
    ):
        """Replay a trace in virtual time with the live scheduler's code, and print per-policy metrics. No
        controller needed. Trace formats, how their requests become IPUs, the metrics and your own policies:
        docs/traces.md."""
        from vipu.errors import VipuError

        try:
            sim = _simulate(trace=trace, synthetic=synthetic, pod=pod, policy=policy, policy_file=policy_file,
                            scheduler_config=scheduler_config, compress=compress, swf_ipus=swf_ipus,
                            ipus_per_gpu=ipus_per_gpu, limit_factor=limit_factor, arrivals=arrivals, load=load,
                            runtimes=runtimes, seed=seed, seeds=seeds, bsld_threshold=bsld_threshold,
                            jobs_out=jobs_out, series_out=series_out, plot=plot)
        except VipuError as e:
            fail("vipu", e.message, BAD_INPUT)
        if ctx.obj.wants_json(json_out):
            from vipu.replay.summary import result_json, seeds_json

            if len(sim.seeds) > 1:
                first = [r.result for r in sim.runs[0]]
                print_json([seeds_json([r.result for r in runs], sim.seeds, sim, first if i else None)
                            for i, runs in enumerate(sim.runs)])
            else:
                print_json([result_json(r, sim) for r in sim.results])
        else:
            from vipu.replay.simulation import report

            print(report(sim))

    @app.command()
    def plan(
        ctx: typer.Context,
        spec: str = typer.Argument(..., help="a job spec with a `train` workload (YAML or JSON)"),
        pod: str = typer.Option(None, "--pod", help="plan for this Pod (a preset or file) instead of the spec's"),
        json_out: bool = JsonOption,
        memory_report: bool = typer.Option(False, "--memory-report", help=(
            "also print each compute tile's memory at the peak: a histogram of how full the tiles are, the fullest"
            " tiles and what fills them")),
    ):
        """Memory per IPU and tile, whether it fits SRAM, and the predicted step time on the Pod, split into
        compute, pipeline bubble, collectives and streaming; suggests a layout that fits when it does not. The text
        counts pipeline stages from 1 ("pipeline stage 1 of 4" is the first); --json's memory.sram_stage and
        memory.streaming_stage are indices from 0."""
        # (that docstring is docs/cli.md's text.) A layout that does not fit is planned all the same, its fitting
        # layouts listed under DOES NOT FIT, then the command exits 2 with `vipu submit`'s refusal of the spec.
        from vipu.errors import VipuError
        from vipu.jobs.command import plan_file
        from vipu.scheduler.job_spec import parse_spec

        try:
            # a spec that plans is one `vipu submit` takes
            answer = plan_file(spec, pod, check_job=parse_spec, memory_report=memory_report)
        except VipuError as e:
            fail("vipu", e.message, BAD_INPUT)
        print_json(answer.as_data()) if ctx.obj.wants_json(json_out) else print(answer.text())
        if not answer.fits:
            fail("vipu", answer.refusal(), BAD_INPUT)


def _simulate(*, trace, synthetic, pod, policy, policy_file, scheduler_config, compress, swf_ipus, ipus_per_gpu,
              limit_factor, arrivals, load, runtimes, seed, seeds, bsld_threshold, jobs_out, series_out, plot):
    """The replays `vipu simulate` asks for, and the files it writes (each path checked before replaying)."""
    from vipu.replay.arrivals import Draws
    from vipu.replay.plots import check_plot_path, plot as draw
    from vipu.replay.result_files import check_path, write_jobs, write_series
    from vipu.replay.simulation import counted, simulate_trace
    from vipu.scheduler.config import load_scheduler_config

    config = load_scheduler_config(scheduler_config, None) if scheduler_config else None
    policies, files = policies_to_replay(policy, policy_file, config)
    outputs = [(check_path(jobs_out, "--jobs-out"), write_jobs, "job") if jobs_out else None,
               (check_path(series_out, "--series-out"), write_series, "step") if series_out else None,
               (check_plot_path(plot), draw, None) if plot else None]
    sim = simulate_trace(trace, pod, policies, config=config, compression=compress, policy_files=files,
                         synthetic=synthetic, draws=Draws(arrivals, load, runtimes), seed=seed, seeds=seeds,
                         bsld_threshold=bsld_threshold, swf_ipus=swf_ipus, config_file=scheduler_config or "",
                         ipus_per_gpu=ipus_per_gpu, limit_factor=limit_factor,
                         progress=lambda text: print(f"vipu: replaying {text}", file=sys.stderr, flush=True))
    for path, write, what in filter(None, outputs):
        n = write(sim, path)
        print(f"vipu: wrote {path}" + (f" ({counted(n, what)})" if what else ""), file=sys.stderr)
    return sim


def policies_to_replay(asked: list[str] | None, files: list[str] | None, config) -> tuple[list[str], list[str]]:
    """The policies named by --policy and the files named by --policy-file; without either flag, the scheduler
    config's own policy file or policy when its file names one (a replay of a site's config runs what its
    controller runs), else fifo and backfill, to compare."""
    if asked or files:
        return split(asked or []), list(files or [])
    if config is not None and config.policy_file:
        return [], [config.policy_file]
    if config is not None and "policy" in config.model_fields_set:
        return [config.policy], []
    return ["fifo", "backfill"], []
