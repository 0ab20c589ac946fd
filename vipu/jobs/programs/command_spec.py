"""The `command` workload: a user's batch script, run as a real process (sbatch script.sh, sbatch --wrap).

Why the script's text is in the spec: as slurmctld keeps a batch script with its job, the controller stores it
(durable with the job, shown by `vipu show job ID --script`), so a requeued job runs the script it was submitted
with, not whatever the file holds by then. What the program sees of its submitter (working directory, environment
under --export) is captured by `vipu submit` when it runs, as sbatch captures it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from vipu.scheduler.workload import Workload, register

MAX_ARGS = 1024


class CommandWorkload(Workload):
    """A batch script run as a real process on the job's partition, with Slurm's and the partition's environment."""

    kind: Literal["command"] = "command"
    script: str = Field(description="the batch script's text; its first line is #! and an interpreter, as sbatch"
                                    " requires (`vipu submit job.sh` reads it, `--wrap CMD` makes one)")
    args: list[str] = Field([], max_length=MAX_ARGS, description="arguments after the script (sbatch script args)")
    submit_dir: str = Field(description="absolute: where `vipu submit` ran (SLURM_SUBMIT_DIR); the working"
                                        " directory unless chdir is given. `vipu submit` of a spec file fills it in"
                                        " with where it runs when the spec leaves it out")
    chdir: str | None = Field(None, description="absolute: the working directory (sbatch -D/--chdir)")
    environment: dict[str, str] = Field({}, description="the environment passed on (sbatch --export: ALL, the"
                                                         " submitting shell's, by default); SLURM_* and IPUOF_* are"
                                                         " added at the start of each run")

    open_mode: Literal["truncate", "append"] = Field(
        "truncate", description="sbatch --open-mode: truncate, each run starts its output and error files afresh;"
        " append, each run adds to them, and a file that exists already is written to if it is a plain file of the"
        " user the controller opens it as (a file of one's own from before, which truncate would refuse)")

    @field_validator("script")
    @classmethod
    def _shebang(cls, value: str) -> str:
        if not value.startswith("#!") or not value[2:].split("\n", 1)[0].strip():
            raise PydanticCustomError(
                "script", "does not start with #! and an interpreter (e.g. #!/bin/bash); this does not look like a"
                " batch script: add one, or give a command with --wrap")
        if "\x00" in value:
            raise PydanticCustomError("script", "contains a NUL byte; give a text file")
        if "\r\n" in value:  # as sbatch refuses them: the interpreter would be "/bin/bash\r"
            raise PydanticCustomError("script", "has DOS line breaks (\\r\\n) instead of UNIX ones (\\n); convert it,"
                                      " e.g. with dos2unix")
        return value

    @field_validator("submit_dir", "chdir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "\x00" in value):
            raise PydanticCustomError("directory", "is {value}; give an absolute path (vipu submit makes one)",
                                      {"value": repr(value)})
        return value

    @field_validator("environment")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or "=" in name or "\x00" in name or "\x00" in text:
                raise PydanticCustomError("environment", "has the variable {name!r}; a name holds no = or NUL, and"
                                          " a value no NUL", {"name": name})
        return value

    @property
    def workdir(self) -> str:
        return self.chdir or self.submit_dir


register(CommandWorkload)  # job specs take `workload: {kind: command, ...}` wherever this module is loaded
