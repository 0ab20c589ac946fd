"""sbatch's rule for a job's output and error files: their directory must exist. Slurm fails the job rather than
make the directory (a typo in --output would otherwise scatter directories), and so does every workload kind here:
a program's supervisor when it opens the file, the controller at the start of a built-in workload's run."""

from __future__ import annotations

import os


def missing_folder(what: str, path: str) -> str | None:
    """Why the `what` ("output", "error") file `path` cannot be made, if its directory is missing; else None."""
    folder = os.path.dirname(path) or "."
    if os.path.isdir(folder):
        return None
    return (f"{what} file {path}: its directory {folder} does not exist; create it, or give --{what} a path in an"
            " existing directory (as sbatch, the job fails rather than create it)")
