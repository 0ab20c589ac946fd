"""The `command` workload: a user's batch script, run as a real process (sbatch script.sh, sbatch --wrap).

Why the script's text is in the spec: as slurmctld keeps a batch script with its job, the controller stores it
(durable with the job, shown by `vipu show job ID --script`), so a requeued job runs the script it was submitted
with, not whatever the file holds by then. What the program sees of its submitter (working directory, environment
under --export) is captured by `vipu submit` when it runs, as sbatch captures it.
"""

from __future__ import annotations

import re
import signal
from typing import Literal, NamedTuple

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from vipu.jobs.programs.resource_limits import check_environment
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
                                                         " added at the start of each run. SLURM_RLIMIT_<NAME>"
                                                         " (CPU, NOFILE, NPROC, ...: sbatch --propagate) sets the"
                                                         " program's soft limit, a whole number or U and one")

    open_mode: Literal["truncate", "append"] = Field(
        "truncate", description="sbatch --open-mode: truncate, each run starts its output and error files afresh;"
        " append, each run adds to them, and a file that exists already is written to if it is a plain file of the"
        " user the controller opens it as (a file of one's own from before, which truncate would refuse)")

    signal: str | None = Field(
        None, description="sbatch --signal=[B:]SIG[@TIME]: SIG (a name or number) TIME seconds (60 if not given,"
        " 0 to 65535) before the time limit ends the job, to every process the batch script started (B: to the script"
        " alone), so a program can checkpoint first; what the time limit then does is unchanged")

    @field_validator("signal")
    @classmethod
    def _signal(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_signal(value)
            except ValueError as e:
                raise PydanticCustomError("signal", "{why}", {"why": str(e)}) from None
        return value

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
                raise PydanticCustomError("environment", "has the variable {name}; a name holds no = or NUL, and"
                                          " a value no NUL", {"name": repr(name)})
        try:
            check_environment(value)
        except ValueError as e:
            raise PydanticCustomError("environment", "{why}", {"why": str(e)}) from None
        return value

    @field_validator("args")
    @classmethod
    def _no_nul(cls, value: list[str]) -> list[str]:
        for i, arg in enumerate(value):
            if "\x00" in arg:  # (exec takes none: the run would fail to start, and say less)
                raise PydanticCustomError("args", "item {i} is {arg}; an argument holds no NUL byte",
                                          {"i": i, "arg": repr(arg)})
        return value

    @property
    def workdir(self) -> str:
        return self.chdir or self.submit_dir


class WarnSignal(NamedTuple):
    """A parsed --signal: Slurm's warn_signal, warn_time and its B: flag."""

    number: int
    before_s: int  # seconds before the time limit
    batch: bool  # B: the batch script alone; else every process it started but the script (scancel's default)

    def moment(self, started: float, end_by: float, check_s: float) -> float:
        """When a run that started at `started` and must end by `end_by` gets it: `before_s` before its end, but not
        before the first check after its start, `check_s` later (halfway through a limit under 2 x check_s, so still
        before its end). Why: slurmctld neither refuses nor drops a TIME past the limit; it sends it at its first
        time-limit check after the start (every 30 s), and a program sets its handler in that time, where one sent
        as it starts would end it."""
        return max(end_by - self.before_s, started + min(check_s, (end_by - started) / 2))


_SIGNAL = re.compile(r"(?:([A-Za-z]+):)?([^@]*)(?:@(.*))?")
MAX_SIGNAL = 64  # Linux's: SIGRTMAX
MAX_WARN_S = 65535  # sbatch's bound on TIME
SIGNAL_FORM = "give [B:]SIG[@TIME], e.g. USR1@120 or B:10"


def parse_signal(text: str) -> WarnSignal:
    """sbatch's --signal=[{R|B}:]SIG[@TIME] (src/common/proc_args.c's get_signal_opts); ValueError saying what is
    wrong and the form to give. R: (a job that may overlap a reservation with MaxStartDelay) is refused: there are
    no reservations here."""
    parts = _SIGNAL.fullmatch(text.strip())
    flag, name, time = parts.groups() if parts else ("", "", None)
    if flag is not None and flag.upper() not in ("B", "R", "RB", "BR"):
        raise ValueError(f"{text!r}: {flag}: is not a flag (B: signals the batch script alone); {SIGNAL_FORM}")
    if flag is not None and "R" in flag.upper():
        raise ValueError(f"{text!r}: R: lets a job overlap a reservation, and the controller has no reservations;"
                         " leave it out")
    word = name.strip().upper()
    named = word if word.startswith("SIG") else f"SIG{word}"
    if word.isdigit() and 1 <= int(word) <= MAX_SIGNAL:
        number = int(word)
    elif named in signal.Signals.__members__:
        number = signal.Signals[named].value
    else:
        raise ValueError(f"{text!r}: {name!r} is not a signal (a name such as USR1, or 1 to {MAX_SIGNAL});"
                         f" {SIGNAL_FORM}")
    if time is not None and not (time.isascii() and time.isdigit() and int(time) <= MAX_WARN_S):
        raise ValueError(f"{text!r}: @{time}: TIME is whole seconds from 0 to {MAX_WARN_S}; {SIGNAL_FORM}")
    return WarnSignal(number, 60 if time is None else int(time), bool(flag))


register(CommandWorkload)  # job specs take `workload: {kind: command, ...}` wherever this module is loaded
