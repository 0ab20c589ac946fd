"""sbatch flags that mean nothing here, or something vipu-sim does not do: taken from the command line or a #SBATCH
line only to say so in one line naming the flag, a warning where the job runs as the user expects anyway, a refusal
(exit 2) where it would not. Never a silent no-op."""

from __future__ import annotations

from vipu.cli.failure import BAD_INPUT, fail, warn
from vipu.cli.sbatch_options import BY_FIELD, OPTIONS

# key -> (flag, what becomes of it): the job runs, and is what the user asked for in every way that matters here
WARNED = {o.field: (o.shown, o.warning) for o in OPTIONS if o.warning is not None}
# key -> (flag, why not, what to do instead)
REFUSED = {o.field: (o.shown, o.refusal) for o in OPTIONS if o.refusal is not None}
OPEN_MODES = ("truncate", "append")
# key -> flag: a job runs its batch script once, as one task, so 1 is what it gets; more would be processes that
# poprun starts here
TASKS = {key: BY_FIELD[key].shown for key in ("ntasks", "ntasks_per_node")}


def _memory(value: str) -> str:
    """What is wrong with a --mem value, as sbatch reads one: a whole number of megabytes, or with K, M, G or T."""
    digits = value[:-1] if value[-1:].upper() in ("K", "M", "G", "T") else value
    return "" if digits.isascii() and digits.isdigit() else "not a size: give megabytes or a unit, e.g. 4096 or 4G"


def _cpus(value: str) -> str:
    return "" if value.isascii() and value.isdigit() and int(value) > 0 else "not a count: give 1 or more"


# key -> what is wrong with a warned flag's value ("" for nothing), checked as sbatch checks it
WELL_FORMED = {"mem": _memory, "mem_per_cpu": _memory, "cpus_per_task": _cpus}


def unmodelled(options: dict, origins: dict[str, str] | None = None) -> dict:
    """The options without these flags, each warned of or refused; `origins` (key -> a script's file, line and
    directive, batch_directives.parse_directives) puts the line that gave one in front of what is said of it."""
    rest = dict(options)

    def said(key: str, text: str) -> str:
        where = (origins or {}).get(key)
        return f"{where}: {text}" if where else text

    for key, (flag, why) in REFUSED.items():
        if rest.pop(key, None) is not None:
            fail("vipu", said(key, f"{flag} is not taken: {why}"), BAD_INPUT)
    for key, flag in TASKS.items():
        tasks = rest.pop(key, None)
        if tasks is not None and str(tasks) != "1":
            fail("vipu", said(key, f"{flag}={tasks} is not taken: a job runs its batch script once, as one task (1 is"
                              " taken), on the IPUs --ipus N gives it; start its processes in the script with poprun"
                              f" --num-instances {tasks} (each instance a share of the replicas, --num-replicas R)"),
                 BAD_INPUT)
    mode = rest.get("open_mode")  # kept: a batch script's workload takes it (command_spec.py)
    if mode is not None and mode not in OPEN_MODES:
        fail("vipu", said("open_mode", f"--open-mode={mode}: give truncate or append"), BAD_INPUT)
    invalid = rest.pop("kill_on_invalid_dep", None)
    if invalid is not None and invalid not in ("yes", "no"):
        fail("vipu", said("kill_on_invalid_dep", f"--kill-on-invalid-dep={invalid}: give yes or no"), BAD_INPUT)
    if invalid == "yes":
        fail("vipu", said("kill_on_invalid_dep", "--kill-on-invalid-dep=yes is not taken: a job whose dependency can"
                          " never be met waits with reason DependencyNeverSatisfied (Slurm's default); cancel it"
                          " with vipu cancel ID"), BAD_INPUT)
    for key in [k for k in options if k in WARNED]:  # in the script's line order (the directives' order of keys)
        flag, what = WARNED[key]
        value = rest.pop(key, None)
        if value is None:
            continue
        wrong = WELL_FORMED.get(key, lambda given: "")(str(value).strip())
        if wrong:  # sbatch refuses these before it queues anything; so does a warned flag here
            fail("vipu", said(key, f"{flag}={value} is {wrong}"), BAD_INPUT)
        warn("vipu", said(key, f"{flag} {what}"))
    return rest
