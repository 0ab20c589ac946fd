"""`vipu submit` (sbatch): spec files or flags to SubmitJob, or several files to one SubmitJobs call."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import typer

from vipu.cli.context import JSON_HELP
from vipu.cli.failure import BAD_INPUT, error, fail
from vipu.cli.output import as_dict, print_json
from vipu.v1 import job_pb2 as j
from vipu.validation import MAX_REQUEST_BYTES, MAX_REQUEST_ID, MAX_SPEC_BYTES, MAX_SPECS_PER_CALL


def absolute(path: str) -> str:
    """An output path as sbatch takes it: relative to where the command runs (the controller has no such place)."""
    return path if path.startswith("/") else str(Path.cwd() / path)


def relative_output(text: bytes) -> str | None:
    """The spec's own output path if it is relative; None otherwise, also for a spec the controller will refuse
    (it says why, naming the field)."""
    if b"output" not in text:
        return None
    from vipu.documents import parse_document

    try:
        value = parse_document(text.decode()).get("output")  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001
        return None
    return value if isinstance(value, str) and value and not value.startswith("/") else None


class UnreadableSpec(Exception):
    """A spec file that cannot be sent: missing, not a file, or too big."""


def read_spec(path: str) -> tuple[bytes, str]:
    if path == "-":
        data = sys.stdin.buffer.read(MAX_SPEC_BYTES + 1)  # no more than one byte past the limit is read
        if len(data) > MAX_SPEC_BYTES:
            raise UnreadableSpec(f"the job spec on stdin is more than 1 MB; a spec may be at most {MAX_SPEC_BYTES:,}"
                                 " bytes: keep data in files it names")
        return data, "<stdin>"
    file = Path(path)
    if not file.is_file():
        raise UnreadableSpec(f"job spec {path} does not exist or is not a file; give the path of a YAML or JSON spec")
    size = file.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise UnreadableSpec(f"job spec {path} is {size:,} bytes; a spec may be at most 1 MB ({MAX_SPEC_BYTES:,}"
                             " bytes): keep data in files it names")
    return file.read_bytes(), path


def submit_request(path: str | None, flags: dict, request_id: str) -> j.SubmitJobRequest:
    """The request for one spec file (None: the flags are the spec), the flags overriding the file's fields."""
    if path is None:
        return j.SubmitJobRequest(spec=json.dumps(flags).encode(), source="flags", request_id=request_id)
    (text, source), overrides = read_spec(path), dict(flags)
    relative = relative_output(text) if "output" not in overrides else None
    if relative:
        overrides["output"] = absolute(relative)
    return j.SubmitJobRequest(spec=text, source=source, overrides_json=json.dumps(overrides) if overrides else "",
                              request_id=request_id)


def submit_requests(specs: list[str], flags: dict, request_id: str) -> list[j.SubmitJobRequest]:
    """A request per spec file (none: one of the flags), ID/k the request id of the k-th of several; every file that
    cannot be sent is named (spec k of n, as the controller names a refused one) before nothing is sent."""
    many = len(specs) > 1
    requests, unreadable = [], []
    for k, path in enumerate(specs or [None]):
        try:
            requests.append(submit_request(path, flags, f"{request_id}/{k + 1}" if many else request_id))
        except UnreadableSpec as e:
            unreadable.append(f"spec {k + 1} of {len(specs)}: {e}; nothing was queued" if many else str(e))
    for line in unreadable:
        error("vipu", line)
    if unreadable:
        raise SystemExit(BAD_INPUT)
    return requests


def register(app: typer.Typer) -> None:
    @app.command()
    def submit(
        ctx: typer.Context,
        specs: list[str] = typer.Argument(
            None, metavar="[SPEC]...", show_default=False,
            help="YAML or JSON job specs ('-' reads one from stdin), each its own job, all queued or none; omit to"
                 " use the flags"),
        name: str = typer.Option(None, "--name", help="job name"),
        ipus: int = typer.Option(None, "--ipus", help="IPUs: a power of two"),
        time_limit: str = typer.Option(None, "--time-limit", help="e.g. 10m, 1h30m, 1-00:00:00; a bare number is"
                                       " seconds (sbatch --time reads minutes)"),
        duration: str = typer.Option(None, "--duration", help="a sleep workload of this length (e.g. 30s)"),
        qos: str = typer.Option(None, "--qos"),
        user: str = typer.Option(None, "--user"),
        account: str = typer.Option(None, "--account"),
        nice: int = typer.Option(None, "--nice"),
        dependency: str = typer.Option(None, "--dependency", "-d", help="afterok:ID,afterany:ID,afternotok:ID,singleton"),
        array: str = typer.Option(None, "--array", "-a", help="e.g. 0-99%10"),
        hold: bool = typer.Option(None, "--hold/--no-hold", help="submit held (release with vipu release)"),
        begin: str = typer.Option(
            None, "--begin", "-b",
            help="not before this time (BeginTime): now+10m, now+1hour, now+90 (seconds), or ISO-8601 like"
                 " 2026-11-22T14:00:00 (local time unless it ends in Z or +01:00)",
        ),
        requeue: bool = typer.Option(None, "--requeue/--no-requeue", help="requeue after a node failure"),
        allocation: str = typer.Option(None, "--allocation"),
        output: str = typer.Option(None, "--output", "-o",
                                   help="file written when the job's run ends; %j job id, %x name (see the spec)"),
        request_id: str = typer.Option(None, "--request-id", help="a retry with the same id never queues twice (with"
                                       " several specs, each gets ID/1, ID/2, ...)"),
        parsable: bool = typer.Option(False, "--parsable",
                                      help="print only the job id (an array's: its first task's), as sbatch"
                                           " --parsable, e.g. jid=$(vipu submit --parsable ...)"),
        json_out: bool = typer.Option(
            False, "--json", "--showjson",
            help=f"{JSON_HELP}: job_ids (every job), duplicate (all were queued before, by these request ids), jobs"
                 " (job_ids and duplicate per spec)"),
    ):
        """Queue a job (sbatch): from a spec file, or from flags like `sbatch --wrap`. Prints the job id.

        Several spec files: a job each, in one call, all queued or none (a refusal names its file); flags apply to all."""
        cli = ctx.obj
        flags = {
            "name": name, "ipus": ipus, "time_limit": time_limit, "qos": qos, "user": user, "account": account,
            "nice": nice, "dependency": dependency, "array": array, "hold": hold, "begin": begin, "requeue": requeue,
            "allocation": allocation, "output": output,
        }
        flags = {k: v for k, v in flags.items() if v is not None}
        if output is not None:
            flags["output"] = absolute(output)
        if duration is not None:
            flags["workload"] = {"kind": "sleep", "duration": duration}
        specs = specs or []
        if "-" in specs and len(specs) > 1:
            fail("vipu", "'-' (a spec on stdin) must be the only spec; give the others as files", BAD_INPUT)
        if len(specs) > MAX_SPECS_PER_CALL:
            fail("vipu", f"{len(specs):,} specs given; one command queues at most {MAX_SPECS_PER_CALL:,}: split them"
                 " over several commands", BAD_INPUT)
        if not specs and "ipus" not in flags:
            fail("vipu", "give a job spec file, or at least --ipus N (e.g. vipu submit --ipus 4 --duration 30s)", BAD_INPUT)
        if request_id is not None:  # each spec of several gets ID/k: room for the longest of those
            longest = MAX_REQUEST_ID - (len(f"/{len(specs)}") if len(specs) > 1 else 0)
            if not request_id or len(request_id) > longest or not request_id.isprintable():
                added = f" (each of the {len(specs)} specs gets /k added)" if longest < MAX_REQUEST_ID else ""
                fail("vipu", f"--request-id must be 1 to {longest} printable characters{added}; e.g. a UUID",
                     BAD_INPUT)
        # a fresh id per command: retries inside this call are then safe
        request_id = request_id or uuid.uuid4().hex
        requests = submit_requests(specs, flags, request_id)
        if len(requests) == 1:
            replies = [cli.conn.call(cli.conn.jobs.SubmitJob, requests[0], retry=True)]
        else:
            batch = j.SubmitJobsRequest(jobs=requests)
            if batch.ByteSize() > MAX_REQUEST_BYTES:
                fail("vipu", f"these {len(specs)} specs are {batch.ByteSize():,} bytes together; one command sends at"
                     f" most {MAX_REQUEST_BYTES:,}: split them over several commands", BAD_INPUT)
            replies = list(cli.conn.call(cli.conn.jobs.SubmitJobs, batch, retry=True).jobs)
        if cli.wants_json(json_out):  # the same keys for one spec or many, so a wrapper of `vipu submit "$@"` holds
            print_json({"job_ids": [i for reply in replies for i in reply.job_ids],
                        "duplicate": all(reply.duplicate for reply in replies),
                        "jobs": as_dict(j.SubmitJobsResponse(jobs=replies))["jobs"]})
            return
        for request, reply in zip(requests, replies):
            again = f"request id {request.request_id} was used before: that submit's jobs, not queued again"
            if parsable:
                print(reply.job_ids[0])
                if reply.duplicate:  # stdout is the id alone, for $(...)
                    print(f"vipu: {again}", file=sys.stderr)
                continue
            first, last = reply.job_ids[0], reply.job_ids[-1]
            print(f"Submitted job {first}" if len(reply.job_ids) == 1 else
                  f"Submitted array job {first} ({len(reply.job_ids)} tasks: jobs {first}-{last})")
            if reply.duplicate:  # a retry of an earlier submit: said, so nobody waits for a second copy
                print(f"({again})")
