"""`vipu simulate --plot FILE.png|.svg`: per policy, the CDF of waits, the CDF of bounded slowdowns and the Pod's
utilisation over time (averaged over 200 equal spans), side by side, 1500 x 450 pixels (15 x 4.5 inches at 100 dpi).

matplotlib is an optional extra (`pip install 'vipu-sim[plot]'`; make demo and make test install it): nothing else
needs it, so it is imported only here, and only when a plot is asked for. Over several seeds the CDFs pool every
seed's jobs and the utilisation is the first seed's.
"""

from __future__ import annotations

from pathlib import Path

from vipu.errors import InvalidArgument

KINDS = (".png", ".svg")
WIDTH_IN, HEIGHT_IN, DPI = 15.0, 4.5, 100
BINS = 200


def check_plot_path(path: str) -> Path:
    out = Path(path)
    if out.suffix.lower() not in KINDS:
        raise InvalidArgument(f"--plot {path}: name a .png or .svg file (the extension says the format)")
    if not out.parent.is_dir():
        raise InvalidArgument(f"--plot {path}: folder {out.parent} does not exist; create it or name another")
    _pyplot()  # refused before the replay, not after it
    return out


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise InvalidArgument("--plot needs matplotlib, an optional extra: pip install 'vipu-sim[plot]' (make demo"
                              " and make test install it)") from None
    return plt


def _cdf(values: list[float]) -> tuple[list[float], list[float]]:
    ordered = sorted(values)
    n = len(ordered)
    return ordered, [(i + 1) / n for i in range(n)]


def binned(times: list[float], values: list[int], bins: int) -> tuple[list[float], list[float]]:
    """The step function (`times`, `values`: each value holds until the next time) averaged over `bins` equal
    spans from the first time to the last: (the spans' middles, their means). A replay steps thousands of times;
    drawn raw, utilisation is a solid band. Over no time (jobs of 0 s at one moment) there is no mean: nothing."""
    if len(times) < 2 or times[-1] <= times[0]:
        return [], []
    start, end = times[0], times[-1]
    width = (end - start) / bins
    sums = [0.0] * bins
    for i in range(len(times) - 1):
        a, b, v = times[i], times[i + 1], values[i]
        first, last = int((a - start) / width), min(bins - 1, int((b - start) / width))
        for k in range(max(0, first), last + 1):
            overlap = min(b, start + (k + 1) * width) - max(a, start + k * width)
            if overlap > 0:
                sums[k] += v * overlap
    return [start + (k + 0.5) * width for k in range(bins)], [total / width for total in sums]


def plot(sim, path: Path) -> None:
    plt = _pyplot()
    fig, (waits, slowdowns, util) = plt.subplots(1, 3, figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    origin = min((j.submit_time for j in sim.trace.jobs), default=0.0)
    for per_policy in sim.runs:
        name = per_policy[0].result.policy
        jobs = [j for run in per_policy for j in run.jobs]
        waited = [j.wait_s for j in jobs if j.wait_s is not None]
        bounded = [j.bounded_slowdown for j in jobs if j.bounded_slowdown is not None]
        if waited:
            waits.step(*_cdf(waited), where="post", label=name)
        if bounded:
            slowdowns.step(*_cdf(bounded), where="post", label=name)
        series = per_policy[0].series
        hours, used = binned(series.times, series.used, BINS)
        util.plot([(h - origin) / 3600 for h in hours], [u / sim.pod.ipus for u in used], label=name, linewidth=1)
    threshold = sim.results[0].bsld_threshold if sim.results else 10.0
    waits.set(xscale="symlog", xlabel="wait (s)", ylabel="share of jobs", title="CDF of waits", ylim=(0, 1.01))
    slowdowns.set(xscale="log", xlabel=f"bounded slowdown (threshold {threshold:g} s)", ylabel="share of jobs",
                  title="CDF of bounded slowdown", ylim=(0, 1.01))
    util.set(xlabel=f"hours (each point: the mean over 1/{BINS} of the replay)",
             ylabel="IPUs in use / Pod", ylim=(0, 1.02), title=f"Utilisation of {sim.pod.name}")
    for ax in (waits, slowdowns, util):
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    fig.suptitle(sim.trace_path or "a generated trace", fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=DPI)
    except OSError as e:
        raise InvalidArgument(f"--plot {path}: cannot write it ({e.strerror}); name a file you may write") from None
    finally:
        plt.close(fig)
