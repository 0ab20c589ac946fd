"""`vipu submit` (sbatch): a batch script or --wrap (batch_script.py), spec files (spec_files.py) or the flags alone,
each to SubmitJob, or several spec files to one SubmitJobs call."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Callable

from vipu.cli.batch_script import WRAP, BatchError, absolute, is_batch_script, script_request, wrapped
from vipu.cli.failure import BAD_INPUT, fail, refuse_empty
from vipu.cli.sbatch_environment import from_environment
from vipu.cli.sbatch_options import BY_FIELD, BY_PARAM, FLAG, OPTIONS
from vipu.cli.spec_files import UnreadableSpec, piped, read_spec, submit_requests
from vipu.client.caller import new_request_id
from vipu.v1 import job_pb2 as j
from vipu.validation import MAX_REQUEST_BYTES, MAX_REQUEST_ID, MAX_SPECS_PER_CALL

if TYPE_CHECKING:
    from vipu.cli.sbatch_nodes import PodMachines

# Imported where used, not here: what batch scripts, --export, -t, -N, --json and --test-only need. `vipu submit
# SPEC`, the form scripts run in loops, needs none of it (bench/bench_cli.py).


def read_first(specs: list[str]) -> tuple[bytes, str] | None:
    """The first file's bytes and name, to tell a batch script from a spec (None: there is none, or it cannot be
    read, which is said with the other specs; stdin, which cannot be read again, is said here)."""
    try:
        return read_spec(specs[0]) if specs else None
    except UnreadableSpec as e:
        if specs[0] == "-":
            fail("vipu", str(e), BAD_INPUT)
        return None


def spec_flags(flags: dict) -> dict:
    """The flags as fields over a spec file's (or as the spec): relative paths made absolute where vipu submit runs;
    -D, --export, --open-mode, --signal and --propagate, which only a batch script's program takes, refused."""
    for key, flag in (("chdir", "-D/--chdir"), ("export", "--export"), ("open_mode", "--open-mode"),
                      ("signal", "--signal"), ("propagate", "--propagate")):
        if key in flags:
            fail("vipu", f"{flag} is for a batch script or --wrap (its program's directory, environment, output,"
                 " signal, limits); a spec file's or the flags' workload takes none: leave it out", BAD_INPUT)
    fields = {k: absolute(v) if k in ("output", "error") else v for k, v in flags.items()}
    return {**fields, "submit_dir": os.getcwd()}  # where a controller may write a built-in workload's output


def submit_line() -> str:
    """This command line as Slurm 23.02 keeps sbatch's (SubmitLine): its words joined by spaces, unquoted, as
    slurm_option_get_argv_str joins argv; the program by its name (vipu), not the path its launcher was given."""
    return " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]])


def batch_request(specs: list[str], wrap: str | None, first: tuple[bytes, str] | None, flags: dict,
                  request_id: str, named: dict[str, str], machines: Callable[[], PodMachines], asked: dict
                  ) -> tuple[j.SubmitJobRequest, Callable | None]:
    """The request for a batch script (the first file, the words after it its arguments) or a --wrap command, and
    how a refusal of a size its directives asked in nodes is said (None: as the controller says it). `named`
    (spec field -> the flag that set it) gets the file and line of each field a directive set."""
    from vipu.cli.batch_directives import DirectiveError

    if "workload" in flags:
        fail("vipu", "--duration makes a sleep workload, and a batch script is a workload of its own: leave out"
             " --duration", BAD_INPUT)
    if wrap is not None and specs:
        fail("vipu", f"--wrap makes the batch script from its command, so it takes no script or spec file (given:"
             f" {specs[0]}); give one or the other", BAD_INPUT)
    try:
        data, source = (wrapped(wrap).encode(), WRAP) if wrap is not None else first  # type: ignore[misc]
        origins: dict[str, str] = {}
        rewords: list[Callable] = []
        request = script_request(data, source, specs[1:], flags, request_id, machines, origins, rewords, asked)
    except (BatchError, DirectiveError) as e:
        fail("vipu", str(e), BAD_INPUT)
    # the controller refuses a value by its field ("ipus is 96 but ..."): name the script's line that set it
    named.update({key: f"{where}: {key}" for key, where in origins.items()})
    return request, next(iter(rewords), None)


def time_flag(time: str | None, time_limit: str | None, flag: str = "-t/--time") -> str | int | None:
    """The time limit from -t/--time (Slurm's: a bare number is minutes) or --time-limit (a unit is required)."""
    if time is None:
        return time_limit
    if time_limit is not None:
        fail("vipu", "-t/--time (a bare number is minutes, as sbatch) and --time-limit (10m, 90s) both give the"
             " time limit; give one", BAD_INPUT)
    from vipu.cli.slurm_time import slurm_limit

    try:
        return slurm_limit(time)
    except ValueError as e:
        fail("vipu", f"{flag}: {e}", BAD_INPUT)


def pod_machines(cli) -> Callable[[], PodMachines]:
    """The Pod's IPU-Machines as the controller has them, asked when called (only -N needs them)."""
    def ask() -> PodMachines:
        from vipu.cli.sbatch_nodes import PodMachines
        from vipu.v1 import partition_pb2 as p

        reply = cli.conn.call(cli.conn.partitions.ListMachines, p.ListMachinesRequest(page_size=1), retry=True)
        if not reply.ipus_per_machine:
            fail("vipu", f"the controller at {cli.conn.address} does not say its machines' IPUs (it is older than"
                 " this vipu), so -N cannot be read: give --ipus N", BAD_INPUT)
        return PodMachines(reply.ipus_per_machine, reply.total_size)
    return ask


WAITS = {"JobHeldUser": "it would be held until `vipu release`",
         "Dependency": "it would wait for its dependency",
         "DependencyNeverSatisfied": "its dependency can never be met",
         "ReqNodeNotAvail": "a machine it needs is drained, down or failed: it would wait until that one is back",
         "Resources": "it waits for IPUs, busy past the jobs the scheduler plans or drained, down or failed",
         "Priority": "it is behind jobs not yet planned"}


def expected_nodes(cli, x: j.ExpectedStart) -> str | None:
    """The IPU-Machines the tested job's block would span, as `show job` NodeList= names them (None: not known)."""
    if not x.HasField("first_ipu"):
        return None
    from vipu.cli.nodes import Machines
    from vipu.partition.node_names import hostlist

    return hostlist(Machines.fetch(cli.conn, [(x.first_ipu, x.ipus)]).spanned(x.first_ipu, x.ipus))


def tested(cli, reply: j.SubmitJobResponse, as_json: bool) -> None:
    """sbatch --test-only's line, in its order ("Job N to start at T using P processors on nodes L in partition
    P", Slurm's partition being the allocation): when the job would start if queued now, or why that is not known."""
    from vipu.cli.output import as_dict, print_json
    from vipu.cli.slurm_time import stamp
    from vipu.client.messages import optional_seconds

    job, x = reply.job_ids[0], reply.expected
    start = optional_seconds(x, "start_time")
    nodes = expected_nodes(cli, x)
    if as_json:  # as a job's --json: start_time typed (RFC 3339), beside it for this release the deprecated double
        print_json({"job_id": job, **as_dict(x), "nodes": nodes, "reason": x.reason or "None",  # as the queue's
                    "queued": False})
        return
    where = (f"using {x.ipus} IPU{'s' if x.ipus != 1 else ''}{f' on nodes {nodes}' if nodes else ''} in partition"
             f" {x.allocation} (V-IPU partition {x.partition})")
    if start is not None:
        print(f"Job {job} to start at {stamp(start)} {where}")
        return
    why = WAITS.get(x.reason.split(",")[0], "no start time can be worked out yet")  # (ReqNodeNotAvail, Unavail...)
    print(f"Job {job} to start at Unknown {where}: {why} (reason {x.reason or 'None'})")


def submit_jobs(cli, specs: list[str] | None = None, **given) -> None:
    """`vipu submit` once its flags are read (submit_command.py with typer, or fast_path.py): `given` holds the
    options of sbatch_options.py given, by their param; the rest take their defaults, typer's."""
    unknown = set(given) - set(BY_PARAM)
    if unknown:
        raise TypeError(f"submit_jobs() got unknown options {sorted(unknown)}")
    values, used = from_environment({p: given.get(p, o.default) for p, o in BY_PARAM.items()})
    time, time_limit, duration, export = values["time"], values["time_limit"], values["duration"], values["export"]
    if export is not None:
        from vipu.cli.export_env import check_export

        try:
            check_export(export)
        except ValueError as e:
            fail("vipu", f"{'SBATCH_EXPORT' if 'SBATCH_EXPORT' in used else '--export'}: {e}", BAD_INPUT)
    if values["propagate"] is not None:
        from vipu.jobs.programs.resource_limits import chosen

        try:
            chosen(values["propagate"])
        except ValueError as e:
            fail("vipu", f"--propagate={values['propagate']}: {e}", BAD_INPUT)
    values["time"] = time_flag(time, time_limit, "SBATCH_TIMELIMIT" if "SBATCH_TIMELIMIT" in used else "-t/--time")
    # the fields the flags give (each unmodelled one said by sbatch_unmodelled); an on/off flag that is off is not
    # given (--exclusive), a switch's off is (--no-hold over a spec's hold: true)
    flags = {o.field: value for o in OPTIONS if o.field is not None
             for value in (values[o.param],) if value is not None and not (o.kind == FLAG and value is False)}
    for key, flag, example in (("output", "-o/--output", "a file path (e.g. -o out-%j.txt)"),
                               ("error", "-e/--error", "a file path (e.g. -e out-%j.txt)"),
                               ("chdir", "-D/--chdir", "a directory (e.g. -D runs)")):
        if key in flags and not str(flags[key]).strip():
            refuse_empty(flag, f"{example}, or leave it out for the default")
    # what this command does once the jobs are queued: -W, else SBATCH_WAIT (on or off), else None: a script's
    # #SBATCH -W decides (batch_script.script_request)
    flags.pop("wait", None)
    asked = {"wait": values["wait"] if values["wait"] or "SBATCH_WAIT" in used else None}
    # a refusal of one names the flag too, or the variable that gave it (SBATCH_OUTPUT)
    named = {k: BY_FIELD[k].variable if BY_FIELD[k].variable in used else BY_FIELD[k].shown for k in flags}
    if "time_limit" in flags:
        named["time_limit"] = "-t/--time" if time is not None else "--time-limit"
    flags["submit_line"] = submit_line()
    if duration is not None:
        named["workload.duration"] = "--duration"
        flags["workload"] = {"kind": "sleep", "duration": duration}
    machines = pod_machines(cli)
    reword = None  # a refusal of a size asked in nodes, said in nodes
    if "nodes" in flags:  # -N: the command line's size, over a script's
        from vipu.cli.sbatch_nodes import in_nodes, sized

        named.pop("nodes")
        named.setdefault("ipus", "-N/--nodes: ipus")  # a refusal of the IPUs it made
        try:
            flags = sized(flags, machines)
        except ValueError as e:
            fail("vipu", str(e), BAD_INPUT)
        reword = in_nodes(flags["ipus"])
    wrap, request_id = values["wrap"], values["request_id"]
    specs = specs or []
    # sbatch reads the script from stdin when it names none: here too when one is piped, unless --duration makes
    # the workload (a script and --duration are refused together)
    implied = not specs and wrap is None and "workload" not in flags and piped()
    first = read_first(["-"] if implied else specs)
    if implied:
        if first and first[0]:
            specs = ["-"]
        else:  # nothing was piped: the flags alone, or the refusal below
            first = None
    batch = wrap is not None or (first is not None and is_batch_script(first[0]))
    count = 1 if batch else len(specs)  # the jobs this command queues
    if not batch:
        for variable, key in (("SBATCH_EXPORT", "export"), ("SBATCH_OPEN_MODE", "open_mode"),
                              ("SBATCH_SIGNAL", "signal")):
            if variable in used:  # a batch script's: a spec's workload takes none
                del flags[key]
        from vipu.cli.sbatch_unmodelled import unmodelled

        flags = spec_flags(unmodelled(flags))
        if "-" in specs and len(specs) > 1:
            fail("vipu", "'-' (a spec on stdin) must be the only spec; give the others as files", BAD_INPUT)
        if len(specs) > MAX_SPECS_PER_CALL:
            fail("vipu", f"{len(specs):,} specs given; one command queues at most {MAX_SPECS_PER_CALL:,}: split"
                 " them over several commands", BAD_INPUT)
        if not specs and "ipus" not in flags and "nodelist" in flags:  # -w alone: its nodes are the job's size
            from vipu.cli.sbatch_nodes import LIST_FLAG, in_nodes, sized_by_list

            try:
                flags = sized_by_list(flags, machines)
            except ValueError as e:
                fail("vipu", str(e), BAD_INPUT)
            named["ipus"] = f"{LIST_FLAG}: ipus"
            reword = in_nodes(flags["ipus"], flags["nodelist"])
        if not specs and "ipus" not in flags:
            # sbatch would wait for a script typed on the terminal; a bare submit never waits, it says how
            how = "pipe one in (vipu submit < job.sh), or give '-' to type it (Ctrl-D ends it)" \
                if sys.stdin is not None and sys.stdin.isatty() else "stdin had none (vipu submit < job.sh reads one)"
            fail("vipu", "give a batch script, a job spec file, or at least --ipus N (e.g. vipu submit --ipus 4"
                 f" --duration 30s); {how}", BAD_INPUT)
    if request_id is not None:  # each spec of several gets ID/k: room for the longest of those
        longest = MAX_REQUEST_ID - (len(f"/{count}") if count > 1 else 0)
        if not request_id or len(request_id) > longest or not request_id.isprintable():
            added = f" (each of the {count} specs gets /k added)" if longest < MAX_REQUEST_ID else ""
            fail("vipu", f"--request-id must be 1 to {longest} printable characters{added}; e.g. a UUID",
                 BAD_INPUT)
    # a fresh id per command: retries inside this call are then safe
    ours = request_id is None
    request_id = request_id or new_request_id()
    if batch:
        request, said = batch_request(specs, wrap, first, flags, request_id, named, machines, asked)
        requests, reword = [request], reword or said
    else:
        requests = submit_requests(specs, flags, request_id, first)
    if values["test_only"]:
        if len(requests) != 1:
            fail("vipu", f"--test-only tests one job, and {len(requests)} spec files were given; test them one by"
                 " one", BAD_INPUT)
        requests[0].validate_only = True
        reply = cli.conn.call(cli.conn.jobs.SubmitJob, requests[0], flags=named, reword=reword)
        tested(cli, reply, cli.wants_json(values["json_out"]))
        if batch:
            from vipu.cli.earlier_output import held_note

            note = held_note(requests[0], reply.job_ids[0])
            if note:
                print(note, file=sys.stderr)
        return
    if len(requests) == 1:
        from vipu.cli.earlier_output import held_for_check, release_clear

        folder = held_for_check(requests[0]) if batch else None  # slurm-*.out files there already: held first
        replies = [cli.conn.call(cli.conn.jobs.SubmitJob, requests[0], retry=True, flags=named, reword=reword)]
        if folder is not None and (ours or not replies[0].duplicate):  # a retry of this call's own submit too
            release_clear(cli, requests[0], replies[0], folder)
    else:
        batch_call = j.SubmitJobsRequest(jobs=requests)
        if batch_call.ByteSize() > MAX_REQUEST_BYTES:
            fail("vipu", f"these {len(specs)} specs are {batch_call.ByteSize():,} bytes together; one command"
                 f" sends at most {MAX_REQUEST_BYTES:,}: split them over several commands", BAD_INPUT)
        replies = list(cli.conn.call(cli.conn.jobs.SubmitJobs, batch_call, retry=True, flags=named).jobs)
    if cli.wants_json(values["json_out"]):  # the same keys for one spec or many: a wrapper of `vipu submit "$@"` holds
        from vipu.cli.output import as_dict, print_json

        print_json({"job_ids": [i for reply in replies for i in reply.job_ids],
                    "duplicate": all(reply.duplicate for reply in replies),
                    "jobs": as_dict(j.SubmitJobsResponse(jobs=replies))["jobs"]})
    else:
        said_queued(requests, replies, values["parsable"])
    if asked["wait"]:  # sbatch -W: once its line is out, as sbatch prints it before it waits
        from vipu.cli.job_output import wait_for_end

        sys.stdout.flush()
        raise SystemExit(wait_for_end(cli, [i for reply in replies for i in reply.job_ids]))


def said_queued(requests: list[j.SubmitJobRequest], replies: list[j.SubmitJobResponse], parsable: bool) -> None:
    """sbatch's line for each submit on stdout, whose 4th word scripts read (--parsable: the id alone, for $(...));
    the rest on stderr."""
    for request, reply in zip(requests, replies):
        first_id, last = reply.job_ids[0], reply.job_ids[-1]
        print(first_id if parsable else f"Submitted batch job {first_id}")
        if len(reply.job_ids) > 1 and not parsable:
            print(f"vipu: array job {first_id}: {len(reply.job_ids)} tasks, jobs {first_id}-{last}", file=sys.stderr)
        if reply.duplicate:  # a retry of an earlier submit: said, so nobody waits for a second copy
            print(f"vipu: request id {request.request_id} was used before: that submit's jobs, not queued again",
                  file=sys.stderr)
