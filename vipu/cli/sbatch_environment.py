"""sbatch's input variables (man sbatch, INPUT ENVIRONMENT VARIABLES; src/sbatch/opt.c) for the flags vipu submit
has: each stands in for its flag when the flag is not given, so the precedence is sbatch's: the command line, then
the variable, then the script's #SBATCH line."""

from __future__ import annotations

import os
import re

from vipu.cli.sbatch_options import FLAG, OPTIONS

# submit_jobs' parameter -> the variable sbatch reads for that flag: one that takes a value, and one that takes none
TEXTS = {o.param: o.variable for o in OPTIONS if o.variable is not None and o.kind != FLAG}
FLAGS = {o.param: o.variable for o in OPTIONS if o.variable is not None and o.kind == FLAG}
# --no-requeue's and --requeue's, in the order sbatch reads them (src/sbatch/opt.c env_vars): the later one wins
SWITCHES = (("SBATCH_NO_REQUEUE", False), ("SBATCH_REQUEUE", True))


def switched_on(value: str) -> bool:
    """sbatch's rule for a flag's variable: on when empty, yes (in any case), or a number other than 0 as strtol
    reads it whole (blanks before it, none after); any other value, blanks alone too, is off (Slurm 22.05
    src/common/slurm_opt.c slurm_process_option)."""
    number = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", value)
    return value == "" or value.lower() == "yes" or (number is not None and int(number.group(1)) != 0)


def from_environment(given: dict) -> tuple[dict, set[str]]:
    """The values of the flags (submit_jobs' parameters) not given filled in from their variables, and the
    variables used. -t's variable stands back when --time-limit (vipu's own spelling of -t) is given. A flag that
    takes no value (-W, --requeue) is on or off by switched_on(); off is sbatch's reset, which an #SBATCH line does
    not undo (sbatch reads the variables after the script's lines)."""
    out, used = dict(given), set()
    for param, variable in TEXTS.items():
        value = os.environ.get(variable)
        if out.get(param) is None and value and not (param == "time" and given.get("time_limit") is not None):
            out[param] = value
            used.add(variable)
    for param, variable in FLAGS.items():
        if not out.get(param) and variable in os.environ:
            out[param] = switched_on(os.environ[variable])
            used.add(variable)
    if out.get("requeue") is None:
        for variable, on in SWITCHES:
            if variable in os.environ:  # off: sbatch's reset, to the default (requeue), over an #SBATCH line too
                out["requeue"] = on if switched_on(os.environ[variable]) else True
                used.add(variable)
    return out, used
