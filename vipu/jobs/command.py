"""`vipu plan SPEC`: the text the CLI prints, from the path of a job spec with a train workload.

A plan of a layout that does not fit is still printed (that is what the command is for), followed by the best
fitting layouts of the same partition; only a spec that is not valid raises (InvalidArgument).
"""

from __future__ import annotations

import json
from pathlib import Path

from vipu.jobs.assumptions import DEFAULT, Assumptions
from vipu.jobs.layout import check_partition
from vipu.jobs.planner import plan
from vipu.jobs.spec import load_plan_spec
from vipu.jobs.suggest import suggest, suggestion_text
from vipu.partition.pod import PodConfig, load_pod


def main_plan(path: str | Path, pod: PodConfig | str | None = None, assumptions: Assumptions = DEFAULT) -> str:
    """The report for the spec at `path`; `pod` (a PodConfig, a preset name or a Pod file) overrides the spec's own
    `pod` (e.g. the Pod of the server the CLI talks to)."""
    spec, spec_pod = load_plan_spec(path)
    if pod is None:
        pod = spec_pod
    else:
        pod = load_pod(pod) if isinstance(pod, str) else pod
        check_partition(spec.workload.layout, spec.ipus, pod)
    result = plan(spec.workload, pod, assumptions)
    text = result.table()
    if not result.fits:
        found = suggest(spec.workload, pod, assumptions)
        if found:
            text += "\n\nlayouts of the same partition that fit, best first:\n" + "\n".join(
                f"  {suggestion_text(c)}" for c in found)
        else:
            text += (f"\n\nno layout of {result.ipus} IPUs with global batch {result.global_batch} fits;"
                     " ask for more IPUs or use a smaller model")
    return text


def plan_json(path: str | Path, pod: PodConfig | str | None = None, assumptions: Assumptions = DEFAULT) -> str:
    """`vipu plan SPEC --json`: the plan's fields (memory, fit, step time split) as JSON."""
    spec, spec_pod = load_plan_spec(path)
    pod = spec_pod if pod is None else (load_pod(pod) if isinstance(pod, str) else pod)
    check_partition(spec.workload.layout, spec.ipus, pod)
    return json.dumps(plan(spec.workload, pod, assumptions).model_dump(mode="json"), indent=2, sort_keys=True)
