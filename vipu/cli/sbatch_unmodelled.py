"""sbatch flags that mean nothing here, or something vipu-sim does not do: taken from the command line or a #SBATCH
line only to say so in one line naming the flag, a warning where the job runs as the user expects anyway, a refusal
(exit 2) where it would not. Never a silent no-op."""

from __future__ import annotations

from vipu.cli.failure import BAD_INPUT, fail, warn

# key -> (flag, what becomes of it): the job runs, and is what the user asked for in every way that matters here
WARNED = {
    "comment": ("--comment", "is not kept: a job here has no comment (tell jobs apart by -J/--job-name)"),
    "mail_type": ("--mail-type", "sends no mail: the controller has none; watch the job with vipu queue -j ID"),
    "mail_user": ("--mail-user", "sends no mail: the controller has none; watch the job with vipu queue -j ID"),
    "time_min": ("--time-min", "is not used: the job gets its whole -t/--time limit (backfill here never shortens"
                 " one)"),
    "exclusive": ("--exclusive", "changes nothing: a job's IPUs are its own; its IPU-Machine's other IPUs may run"
                  " other jobs (--ipus 4 or more takes whole machines)"),
    "cpus_per_task": ("-c/--cpus-per-task", "is not used: the controller allots no host CPUs (a job's script may use"
                      " the host's); a job is sized by its IPUs, --ipus N"),
    "mem": ("--mem", "is not used: the controller allots no host memory (a job's script may use the host's); an"
            " IPU's memory is its tile SRAM and Streaming Memory, which vipu plan SPEC shows a job needs"),
    "mem_per_cpu": ("--mem-per-cpu", "is not used: the controller allots no host CPUs or memory; a job is sized by"
                    " its IPUs, --ipus N"),
}
# key -> (flag, why not, what to do instead)
REFUSED = {
    "nodes": ("-N/--nodes", "a job's size here is its IPUs: give --ipus N (an IPU-Machine has 4 IPUs: -N 2 is"
              " --ipus 8)"),
    "gres": ("--gres", "a job asks for IPUs with --ipus N, Graphcore's Slurm plugin's option (--gres=ipu:4 is --ipus"
             " 4)"),
    "priority": ("--priority", "a job's priority is set after the submit, by an admin (as in Slurm, operators"
                 " only): vipu update job ID Priority=N"),
    "signal": ("--signal", "the controller sends no signal before the time limit: at the limit the job gets SIGTERM,"
               " then SIGKILL after KillWait; trap TERM in the script, or send one yourself with vipu cancel -s SIG"
               " ID"),
}
OPEN_MODES = ("truncate", "append")
# key -> flag: a job runs its batch script once, as one task, so 1 is what it gets; more would be processes that
# poprun starts here
TASKS = {"ntasks": "-n/--ntasks", "ntasks_per_node": "--ntasks-per-node"}


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
    for key, (flag, what) in WARNED.items():
        if rest.pop(key, None) is not None:
            warn("vipu", said(key, f"{flag} {what}"))
    return rest
