"""`vipu plan SPEC`: what the CLI prints, from the path of a job spec with a train workload.

A plan of a layout that does not fit is still printed (that is what the command is for), with the best fitting
layouts of the same partition right under its DOES NOT FIT line (and under "suggestions" in the JSON); the CLI then
exits 2 with the refusal `vipu submit` gives for the same spec (suggest.refusal). Only a spec that is not valid
raises (InvalidArgument).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod
from vipu.jobs.assumptions import DEFAULT, Assumptions
from vipu.jobs.memory_estimate import tile_report
from vipu.jobs.planner import Plan, plan
from vipu.jobs.train_spec import JobCheck, load_plan_spec
from vipu.jobs.suggest import refusal, suggest, suggestion_json


@dataclass(frozen=True)
class PlanAnswer:
    """The plan of a spec and, when it does not fit, the fitting layouts of the same partition (best first)."""

    plan: Plan
    suggestions: list[Plan]
    memory_report: list[str] | None = None  # --memory-report: tile_memory.report's lines

    @property
    def fits(self) -> bool:
        return self.plan.fits

    def text(self) -> str:
        table = self.plan.table(None if self.fits else self.suggestions)
        return table + ("\n\n" + "\n".join(self.memory_report) if self.memory_report else "")

    def as_data(self) -> dict:
        """What `vipu plan --json` prints."""
        data = self.plan.model_dump(mode="json")
        data["problems"] = self.plan.problems()
        data["suggestions"] = [suggestion_json(c) for c in self.suggestions]
        if self.memory_report:
            data["memory_report"] = self.memory_report
        return data

    def as_json(self) -> str:
        return json.dumps(self.as_data(), indent=2, sort_keys=True)

    def refusal(self) -> str | None:
        """Why the spec can never run as written, as `vipu submit` says it (None when it fits)."""
        return None if self.fits else refusal(self.plan, self.suggestions)


def plan_file(path: str | Path, pod: PodConfig | str | None = None, assumptions: Assumptions = DEFAULT,
              check_job: JobCheck | None = None, memory_report: bool = False) -> PlanAnswer:
    """Plan the spec at `path`; `pod` (a PodConfig, a preset name or a Pod file) overrides the spec's own `pod`
    (e.g. the Pod of the server the CLI talks to); check_job: see plan_spec; memory_report: with the per-tile
    report of the IPU needing most."""
    spec, pod = load_plan_spec(path, check_job, load_pod(pod) if isinstance(pod, str) else pod)
    result = plan(spec.workload, pod, assumptions)
    tiles = tile_report(spec.workload, pod, assumptions) if memory_report else None
    return PlanAnswer(result, [] if result.fits else suggest(spec.workload, pod, assumptions), tiles)


def main_plan(path: str | Path, pod: PodConfig | str | None = None, assumptions: Assumptions = DEFAULT) -> str:
    """The report for the spec at `path` (see plan_file)."""
    return plan_file(path, pod, assumptions).text()


def plan_json(path: str | Path, pod: PodConfig | str | None = None, assumptions: Assumptions = DEFAULT) -> str:
    """`vipu plan SPEC --json`: the plan's fields (memory, fit, step time split), its problems and suggestions."""
    return plan_file(path, pod, assumptions).as_json()
