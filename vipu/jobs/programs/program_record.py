"""What the store keeps of a job's latest program run (kind "program_run", name = job id), and how `vipu logs` and
`vipu show job` read it.

Why the steps are here: a program that reports its steps through vipu.sdk (Device.report_step) is shown as built-in
training is: its loss per step, emulated step time and its parts, per-IPU utilisation and SRAM (the same
StepReport, vipu/jobs/train/results.py), kept with the job after its run has ended.
"""

from __future__ import annotations

from pydantic import BaseModel

from vipu.jobs.train.results import IpuUsage, StepReport, step_line, usage_lines
from vipu.scheduler.output_pattern import output_file

# what the usage table's columns mean for a program: its own tensors, not the engine's count of what the Pod holds
USAGE_LEGEND = ("UTIL: the IPU's tile compute (the FLOPs of its compute sets at the calibrated rate) / emulated step"
                " time; SRAM PEAK: the most the program held in the IPU's SRAM in any step, of which ACTIVATIONS the"
                " bytes it reserved (Device.reserve)")


class ProgramRecord(BaseModel):
    name: str
    run: int
    output: str
    error: str | None = None  # None: stderr goes to output
    node: str = ""  # the id of the Ray node its supervisor runs on ("" on the controller's machine, --ray off)
    node_address: str = ""  # that node's address, to name it once it may be gone (run_nodes.py)
    spool: str = ""  # the folder its supervisor keeps its lock and exit record in, on that node ("" before schema 7)
    failure: str | None = None  # why it could not start
    ended: str | None = None  # why a restart could not tell how its program ended (its node gone: run_nodes.py)
    steps: list[StepReport] = []  # the steps it reported through vipu.sdk (the last session.STEPS_KEPT)
    steps_reported: int = 0  # all of them
    ipu_usage: list[IpuUsage] = []  # per IPU of its partition over those steps

    def summary(self) -> dict:
        """`vipu show job`: everything but the steps themselves; their losses and mean emulated step time."""
        data = self.model_dump(mode="json", exclude={"name", "steps", "node_address", "spool"})
        if self.steps:
            data["losses"] = [r.loss for r in self.steps]
            data["emulated_step_s"] = sum(r.emulated_step_s for r in self.steps) / len(self.steps)
            data["usage_legend"] = USAGE_LEGEND
        return data

    def run_data(self) -> dict:
        """`vipu logs --json`: the summary and every step kept."""
        return {**self.summary(), "steps": [r.model_dump(mode="json") for r in self.steps]}

    def step_lines(self) -> list[str]:
        """The steps as `vipu logs` prints built-in training's, and the per-IPU usage over them."""
        if not self.steps:
            return []
        lines = [f"steps reported through vipu.sdk: {self.steps_reported}"
                 + (f" (the last {len(self.steps)} kept)" if self.steps_reported > len(self.steps) else "")]
        return lines + [step_line(r) for r in self.steps] + self.usage_lines()

    def usage_lines(self) -> list[str]:
        """The per-IPU usage over the steps kept, under a line saying what its columns mean (none without)."""
        if not self.steps or not self.ipu_usage:
            return []
        return [f"per IPU over the {len(self.steps)} steps ({USAGE_LEGEND}):", *usage_lines(self.ipu_usage)]


def run_record(job, run: int, node: str | None = None, spool: str = "") -> ProgramRecord:
    """The record of the job's run number `run` on its first node `node` (%N; None before it has one), naming its
    output and error files, and the spool its supervisor is to use."""
    workdir = job.spec.workload.workdir
    return ProgramRecord(name=str(job.id), run=run, output=output_file(job.spec.output, job, workdir, node),
                         error=output_file(job.spec.error, job, workdir, node) if job.spec.error else None,
                         spool=spool)
