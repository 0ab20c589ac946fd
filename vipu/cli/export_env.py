"""sbatch's --export: which of the submitting shell's variables a batch script's program gets.

ALL (the default): the whole environment. NONE: none of it but SLURM_* (as sbatch). Otherwise a comma list,
`[ALL|NONE,]VAR[=value],...`: without ALL (NONE,FOO=1 is FOO=1, as sbatch takes it), only SLURM_* and the variables
named, each with its value from the environment unless one is given; with ALL, the whole environment and the values given. Tokens are read in order, so a value
given overrides the environment's (as sbatch's merge). A value holding a comma is quoted: VAR="a,b".

Why ALL leaves out the CLI's access key (VIPU_CLI_API_ACCESS_KEY): the environment is stored with the job and shown
by `vipu show job`, so a key in it would be kept and shown where the user never meant to put it; naming it
(`--export=ALL,VIPU_CLI_API_ACCESS_KEY`) passes it on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(r"""(?:[^,"']|"[^"]*"|'[^']*')+""")  # a comma inside quotes is part of the value

SECRET = {"VIPU_CLI_API_ACCESS_KEY"}  # passed on only when named
HOW = "give ALL, NONE, or a comma list such as ALL,FOO=1, NONE,FOO=1 or FOO,BAR=2"


def _tokens(value: str) -> list[str]:
    if not value or value.startswith(",") or value.endswith(",") or ",," in value:
        raise ValueError(f"{value!r} has an empty entry; {HOW}")
    tokens = _TOKEN.findall(value)
    if ",".join(tokens) != value:
        raise ValueError(f"{value!r} has an unclosed quote; {HOW}")
    return tokens


def check_export(value: str) -> str:
    """`value` if it is well formed; ValueError saying what is wrong otherwise (before the environment is read)."""
    tokens = _tokens(value)
    upper = [t.upper() for t in tokens]
    if "NONE" in upper and "ALL" in upper:
        raise ValueError(f"{value!r}: NONE passes none of the environment on and ALL all of it; give one of them")
    for token in tokens:
        name = token.split("=", 1)[0]
        if token.upper() not in ("ALL", "NONE") and not NAME.fullmatch(name):
            raise ValueError(f"{value!r}: {name!r} is not a variable name (letters, digits and _, not starting with"
                             f" a digit); {HOW}")
    return value


def exported(value: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a --export value passes on from `environ`."""
    tokens = _tokens(check_export(value))
    upper = [t.upper() for t in tokens]
    if "ALL" in upper:
        env = {k: v for k, v in environ.items() if k not in SECRET}
    else:
        env = {k: v for k, v in environ.items() if k.startswith("SLURM_")}
    for token, word in zip(tokens, upper):
        if word in ("ALL", "NONE"):
            continue
        name, eq, given = token.partition("=")
        if eq:
            env[name] = _unquoted(given)
        elif name in environ:
            env[name] = environ[name]
    return env


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
