"""Spec files as `vipu submit` sends them: read (a file or stdin, at most 1 MB), told apart from batch scripts and
from what is neither (sbatch's message), relative output paths made absolute where the command runs, and a request
per file (several in one SubmitJobs call, all queued or none)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from vipu.cli.batch_script import NOT_A_SCRIPT, absolute, is_batch_script
from vipu.cli.failure import BAD_INPUT, error
from vipu.v1 import job_pb2 as j
from vipu.validation import MAX_SPEC_BYTES

SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def relative_paths(text: bytes) -> dict[str, str]:
    """The spec's own output and error paths that are relative; none for a spec the controller will refuse (it
    says why, naming the field)."""
    if b"output" not in text and b"error" not in text:
        return {}
    from vipu.documents import parse_document

    try:
        data = parse_document(text.decode())
        values = {key: data.get(key) for key in ("output", "error")}  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001
        return {}
    return {k: v for k, v in values.items() if isinstance(v, str) and v and not v.startswith("/")}


def with_submit_dir(text: bytes) -> bytes:
    """A spec of a command workload without submit_dir, given the directory the command runs in (SLURM_SUBMIT_DIR,
    and the program's working directory unless chdir says otherwise), as sbatch takes its own; others unchanged."""
    if b"command" not in text or b"submit_dir" in text:
        return text
    from vipu.documents import parse_document

    try:
        data = parse_document(text.decode())
    except Exception:  # noqa: BLE001 - the controller says what is wrong, naming the line
        return text
    work = data.get("workload") if isinstance(data, dict) else None
    if not isinstance(work, dict) or work.get("kind") != "command":
        return text
    return json.dumps({**data, "workload": {**work, "submit_dir": str(Path.cwd())}}, default=str).encode()


class UnreadableSpec(Exception):
    """A spec file that cannot be sent: missing, not a file, too big, or not a spec."""


def piped() -> bool:
    """stdin is a pipe or a file (`cat job.sh | vipu submit`, `vipu submit < job.sh`), where sbatch reads the
    script it was not given. Not a terminal, where sbatch would wait for one typed, nor /dev/null or a socket (cron,
    nohup, a service), where a job from the flags alone is what was meant."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode if sys.stdin is not None else 0
    except (OSError, ValueError):  # closed, or replaced by an object with no descriptor
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


_STDIN: list = [None, b""]  # the stdin read, and what it held: read once, by starts_script or read_spec


def stdin_bytes() -> bytes:
    """stdin's bytes, no more than one past the limit (stdin cannot be read twice: the command line's reading looks
    at it before the spec is read)."""
    if _STDIN[0] is not sys.stdin:
        _STDIN[:] = [sys.stdin, sys.stdin.buffer.read(MAX_SPEC_BYTES + 1)]
    return _STDIN[1]


def starts_script(word: str) -> bool:
    """Whether `word` names a batch script (its first line #!; '-': stdin), where sbatch stops reading its own
    options: the words after it are the script's."""
    try:
        if word == "-":
            return is_batch_script(stdin_bytes()[:2])
        with open(word, "rb") as file:
            return is_batch_script(file.read(2))
    except (OSError, ValueError):  # not a file (the spec's reading says so), stdin closed
        return False


def script_words(script: str, rest: list[str]) -> list[str]:
    """A batch script and its arguments, every word after it: its own, whatever they are, as sbatch's getopt stops at
    the script; a `--` right after it is vipu's (`job.sh -- ARGS`), dropped."""
    return [script, *(rest[1:] if rest[:1] == ["--"] else rest)]


def read_spec(path: str) -> tuple[bytes, str]:
    if path == "-":
        data = stdin_bytes()
        if len(data) > MAX_SPEC_BYTES:
            raise UnreadableSpec(f"the job spec on stdin is more than 1 MB; a spec may be at most {MAX_SPEC_BYTES:,}"
                                 " bytes: keep data in files it names")
        return data, "<stdin>"
    file = Path(path)
    if not file.is_file():
        raise UnreadableSpec(f"job spec {path} does not exist or is not a file; give the path of a batch script or a"
                             " YAML or JSON spec")
    size = file.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise UnreadableSpec(f"job spec {path} is {size:,} bytes; a spec may be at most 1 MB ({MAX_SPEC_BYTES:,}"
                             " bytes): keep data in files it names")
    return file.read_bytes(), path


def check_spec(text: bytes, source: str) -> None:
    """sbatch's refusal for a file that is neither a batch script nor a job spec: an empty one, one of whitespace
    only (sbatch's words), a binary or other one (not a batch script, as sbatch says). One named .yaml, .yml or
    .json is left to the controller, whose message names the line of a syntax error or the bad byte."""
    if is_batch_script(text):
        raise UnreadableSpec(f"{source} is a batch script: give it first, as a job of its own (vipu submit"
                             f" {source} ARGS...); the words after a script are its arguments")
    if source.endswith(SPEC_SUFFIXES):
        return
    if not text.strip():
        said = "Batch script is empty!" if not text else "Batch script contains only whitespace!"
        raise UnreadableSpec(f"{source}: {said} (sbatch's words); give a batch script (its first line #!, e.g."
                             " #!/bin/bash) or a YAML or JSON job spec")
    from vipu.documents import parse_document

    try:
        data = None if b"\x00" in text else parse_document(text.decode())
    except Exception:  # noqa: BLE001 - binary (not UTF-8), or not YAML or JSON either
        data = None
    if not isinstance(data, dict):
        raise UnreadableSpec(f"{source}: {NOT_A_SCRIPT} (e.g. #!/bin/bash), and it is not a YAML or JSON job spec"
                             " either")


def submit_request(path: str | None, flags: dict, request_id: str,
                   read: tuple[bytes, str] | None = None) -> j.SubmitJobRequest:
    """The request for one spec file (None: the flags are the spec), the flags overriding the file's fields;
    `read`: the file's bytes and name, if read already."""
    if path is None:
        return j.SubmitJobRequest(spec=json.dumps(flags).encode(), source="flags", request_id=request_id)
    (text, source), overrides = read or read_spec(path), dict(flags)
    check_spec(text, source)
    text = with_submit_dir(text)
    overrides.update({k: absolute(v) for k, v in relative_paths(text).items() if k not in overrides})
    return j.SubmitJobRequest(spec=text, source=source, overrides_json=json.dumps(overrides) if overrides else "",
                              request_id=request_id)


def submit_requests(specs: list[str], flags: dict, request_id: str,
                    first: tuple[bytes, str] | None = None) -> list[j.SubmitJobRequest]:
    """A request per spec file (none: one of the flags), ID/k the request id of the k-th of several; every file that
    cannot be sent is named (spec k of n, as the controller names a refused one) before nothing is sent. `first`:
    the first file's bytes and name, if read already (stdin can be read once)."""
    many = len(specs) > 1
    requests, unreadable = [], []
    for k, path in enumerate(specs or [None]):
        try:
            requests.append(submit_request(path, flags, f"{request_id}/{k + 1}" if many else request_id,
                                           first if k == 0 else None))
        except UnreadableSpec as e:
            unreadable.append(f"spec {k + 1} of {len(specs)}: {e}; nothing was queued" if many else str(e))
    for line in unreadable:
        error("vipu", line)
    if unreadable:
        raise SystemExit(BAD_INPUT)
    return requests
