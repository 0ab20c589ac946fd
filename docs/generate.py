"""Regenerate the reference pages from the code: `python docs/generate.py` rewrites docs/job-spec.md (from the
pydantic models) and docs/cli.md (from the CLI's own help). A test checks the committed pages are current."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import typer.main
from pydantic import BaseModel

DOCS = Path(__file__).resolve().parent
SCHEDULER_EXAMPLE = """
policy: backfill
default_qos: normal
qos:
  scavenger: {priority: 0, preempt_mode: cancel}
  normal: {priority: 50, max_jobs_per_user: 20}
  urgent: {priority: 100, preempt: [scavenger], max_time_limit: 2h}
"""


def _type_name(annotation) -> str:
    import re
    import typing

    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    text = re.sub(r", FieldInfo\([^\[]*\[[^\]]*\]\)\]", "", text)  # Annotated[int, Field(strict=True)]'s field
    text = re.sub(r"typing\.|Annotated\[|, [A-Z][A-Za-z]*\(.*?\)\]|[a-z_]+\.(?=[A-Z])", "", text)
    text = text.replace("vipu.scheduler.", "").replace("vipu.jobs.", "")
    if text.startswith("Optional[") and text.endswith("]"):  # a whole-number type or null: int | None
        text = f"{text.removeprefix('Optional[').removesuffix(']')} | None"
    return text.replace("Optional[", "").replace("NoneType", "None").replace("]", "") if "Optional" in text else text


def _default(value) -> str:
    """A default as a user would write it in YAML/JSON (a model's repr would show every field)."""
    import json

    if isinstance(value, BaseModel):
        return json.dumps(value.model_dump(mode="json"))
    if isinstance(value, dict) and any(isinstance(v, BaseModel) for v in value.values()):
        return json.dumps({k: v.model_dump(mode="json", exclude_defaults=True) for k, v in value.items()})
    return repr(value)


def model_table(model: type[BaseModel], only: set[str] | None = None) -> list[str]:
    lines = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if only is not None and name not in only:
            continue
        default = "required" if field.is_required() else _default(field.default if field.default_factory is None
                                                                 else field.default_factory())
        description = (field.description or "").replace("|", "\\|")
        lines.append(f"| `{name}` | `{_type_name(field.annotation)}` | `{default}` | {description} |")
    return lines


def job_spec_page() -> str:
    from vipu.jobs.convnet import ConvNetModel
    from vipu.jobs.layout import Layout
    from vipu.jobs.models import MlpModel, TransformerModel
    from vipu.jobs.programs.command_spec import CommandWorkload
    from vipu.jobs.train.problem import EXECUTED
    from vipu.jobs.train_spec import PlanSpec, TrainWorkload
    from vipu.scheduler.config import PriorityWeights, QosSpec, SchedulerConfig
    from vipu.scheduler.job_spec import JobSpec
    from vipu.scheduler.workload import HoldWorkload, SleepWorkload

    parts = ["# Job spec reference", "",
             "Generated from the pydantic models by `docs/generate.py`; do not edit by hand.", "",
             "A job spec is a YAML or JSON file given to `vipu submit SPEC` (or built from `vipu submit` flags, or from"
             " a batch script: `vipu submit job.sh` reads its #SBATCH lines into these fields and its text into a"
             " `command` workload).",
             "Durations take seconds or `90s`, `10m`, `1h30m`, `HH:MM:SS`, `D-HH:MM:SS`. Unknown fields are refused.", ""]
    for title, model in [("JobSpec (top level)", JobSpec), ("workload: sleep", SleepWorkload),
                         ("workload: hold", HoldWorkload), ("workload: train", TrainWorkload),
                         ("workload: command", CommandWorkload),
                         ("train model: mlp", MlpModel), ("train model: transformer", TransformerModel),
                         ("train model: resnet50 (planned, not executed)", ConvNetModel),
                         ("train layout", Layout),
                         ("SchedulerConfig (vipu-server and vipu simulate --scheduler-config FILE)", SchedulerConfig),
                         ("QosSpec (each entry of SchedulerConfig.qos)", QosSpec),
                         ("PriorityWeights (SchedulerConfig.weights)", PriorityWeights)]:
        doc = (model.__doc__ or "").strip().splitlines()
        parts += [f"## {title}", "", *(doc[:1] + [""] if doc else []), *model_table(model), ""]
        if model is TrainWorkload:  # which specs run, not only plan: check_runnable's rules, from its own module
            parts += ["### Executed or planned only", "", *EXECUTED, "",
                      "### plan file (`vipu plan SPEC`)", "", " ".join(PlanSpec.__doc__.split()), "",
                      *model_table(PlanSpec, only={"pod"}), ""]
    parts += ["A scheduler config in which `urgent` jobs evict `scavenger` jobs, which are then cancelled, not "
              "requeued (the\nother QOS keep their defaults only if listed again):", "", "```yaml", SCHEDULER_EXAMPLE.strip(),
              "```", ""]
    return "\n".join(parts)


def cli_page() -> str:
    from typer.testing import CliRunner

    from vipu.cli.admin_commands import app as admin_app
    from vipu.cli.main import app as vipu_app

    parts = ["# CLI reference", "", "Generated from the CLI by `docs/generate.py`; do not edit by hand.", ""]
    runner = CliRunner()
    for prog, app in (("vipu", vipu_app), ("vipu-admin", admin_app)):
        root = typer.main.get_command(app)
        for path, _ in walk(root, [prog]):
            result = runner.invoke(app, [*path[1:], "--help"], prog_name=prog, terminal_width=100,
                                   env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
            text = "\n".join(line.rstrip() for line in click.unstyle(result.output).strip("\n").splitlines())
            parts += [f"## {' '.join(path)}", "", "```", text, "```", ""]
    return "\n".join(parts)


def walk(command: click.Command, path: list[str]):
    yield path, command
    if hasattr(command, "list_commands"):  # a group (typer's own, not necessarily click's class)
        ctx = command.make_context(path[-1], [], resilient_parsing=True)
        for name in command.list_commands(ctx):
            yield from walk(command.get_command(ctx, name), [*path, name])


PAGES = {"job-spec.md": job_spec_page, "cli.md": cli_page}


def main() -> int:
    for name, make in PAGES.items():
        (DOCS / name).write_text(make() + "\n")
        print(f"wrote docs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
