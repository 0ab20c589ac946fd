"""The submitting shell's soft resource limits, passed on to the program as Slurm passes them
(PropagateResourceLimits=ALL, its default): sbatch puts each in the job's environment as SLURM_RLIMIT_<NAME> (the
soft limit, a number, 18446744073709551615 for unlimited; U before it when --propagate named it), and slurmstepd
sets the program's soft limit from it just before exec, removing the variable (src/slurmd/slurmstepd/ulimits.c).

Why this matters here: the supervisor runs with the controller's limits (root's nofile 20000 where a login has 1024),
and a user's own `ulimit -u` guard against a runaway fork would not hold in a job. Neither is a fence: a soft limit
is the user's to raise up to the hard one, which is never raised here.

Slurm's rules, kept: a value above the node's hard limit is cut to it, unless the user asked for that limit by name
(U): then it is not set, and the program's error file gets slurmstepd's line saying so. --propagate=NONE sends none,
but a SLURM_RLIMIT_* variable the submitter's environment already holds still passes on and is applied. A value that
is not a number is refused at submit (check_environment): slurmstepd only logs it and leaves the limit.
Plain Python: `vipu submit` imports it.
"""

from __future__ import annotations

import resource

# slurm_rlimits_info.c's names and order
NAMES = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS")
PREFIX = "SLURM_RLIMIT_"
UNLIMITED = 2 ** 64 - 1  # RLIM_INFINITY as sbatch writes it (%lu)
HOW = "give ALL, NONE, or a list of CPU, FSIZE, DATA, STACK, CORE, RSS, NPROC, NOFILE, MEMLOCK, AS (e.g. NOFILE,NPROC)"


def chosen(value: str) -> tuple[str, ...]:
    """The limits a --propagate value names (parse_rlimits): ALL, NONE, or names, RLIMIT_ before one allowed,
    separated by commas or blanks, in capitals as sbatch takes them; ValueError naming the one it does not know."""
    if value in ("ALL", "NONE"):
        return NAMES if value == "ALL" else ()
    words = value.replace(",", " ").split()
    if not words:
        raise ValueError(f"it names no limit; {HOW}")
    for word in words:
        if word.removeprefix("RLIMIT_") not in NAMES:
            raise ValueError(f"{word!r} is not a resource limit (sbatch: Bad rlimit name); {HOW}")
    return tuple(n for n in NAMES if n in {w.removeprefix("RLIMIT_") for w in words})


def submitted(propagate: str | None) -> dict[str, str]:
    """The SLURM_RLIMIT_* variables `vipu submit` sends: this process's soft limits, all of them when --propagate
    is not given, else those it names, each marked U (asked for by name, so not cut to the node's hard limit)."""
    names = NAMES if propagate is None else chosen(propagate)
    mark = "" if propagate is None else "U"
    out = {}
    for name in names:
        soft = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[0]
        out[PREFIX + name] = f"{mark}{UNLIMITED if soft == resource.RLIM_INFINITY else soft}"
    return out


def read_value(variable: str, text: str) -> tuple[int, bool]:
    """A SLURM_RLIMIT_* value as slurmstepd reads it (strtoul: leading blanks allowed, a number too large is
    unlimited): the limit and whether the user asked for it by name (U); ValueError naming the variable."""
    asked = text.startswith("U")
    digits = text[1:] if asked else text
    digits = digits.lstrip(" \t\n")
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{variable} is {text!r}; the submitting shell's soft limit is a whole number (U before it"
                         " when --propagate named it), 18446744073709551615 for unlimited: fix or unset it")
    value = int(digits)
    # the kernel takes no soft limit past RLIM_INFINITY's own, which is -1 in Python
    return (resource.RLIM_INFINITY if value >= 2 ** 63 - 1 else value), asked


def check_environment(environment: dict[str, str]) -> None:
    """ValueError for the first SLURM_RLIMIT_<NAME> of a known limit that is not a number."""
    for name in NAMES:
        if PREFIX + name in environment:
            read_value(PREFIX + name, environment[PREFIX + name])


def applied(env: dict[str, str], node: str) -> tuple[dict[str, str], list[str]]:
    """Set this process's soft limits from `env`'s SLURM_RLIMIT_* (run as the job's user, just before exec: why
    after dropping privileges, RLIMIT_NPROC counts that user's processes), never its hard ones; `env` without the
    variables applied, and slurmstepd's lines for the program's error file."""
    out, said = dict(env), []
    for name in NAMES:
        variable = PREFIX + name
        if variable not in env:
            continue
        try:
            value, asked = read_value(variable, env[variable])
        except ValueError:  # a job stored before check_environment: as slurmstepd, said and kept
            said.append(f"slurmstepd-{node}: error: Invalid {variable} env var, value = `{env[variable]}'")
            continue
        del out[variable]
        limit = getattr(resource, f"RLIMIT_{name}")
        soft, hard = resource.getrlimit(limit)
        if value == soft:
            continue
        if not asked and hard != resource.RLIM_INFINITY and (value == resource.RLIM_INFINITY or value > hard):
            value = hard
        try:
            resource.setrlimit(limit, (value, hard))
        except (ValueError, OSError) as e:
            if asked:  # the value above the hard limit: as slurmstepd, said, and the limit left as it was
                shown = "'unlimited'" if value == resource.RLIM_INFINITY else str(value)
                why = getattr(e, "strerror", None) or "Invalid argument"
                said.append(f"slurmstepd-{node}: error: Can't propagate RLIMIT_{name} of {shown} from submit host:"
                            f" {why}")
    return out, said
