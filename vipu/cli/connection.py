"""Where the controller is and how the CLI calls it: through vipu.client, the API's Python client (its settings,
channel, deadlines, retries and pages; docs/client.md), with each failure turned into one line on stderr and the
exit code of its kind (failure.py). Settings come as vipu.client.settings finds them: flag, environment, config
file, default."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, NamedTuple, NoReturn

from vipu.cli.failure import BAD_INPUT, TIMEOUT_HOW, fail, fail_api, warn
from vipu.client import ApiError, Client, Settings
from vipu.client import settings as client_settings
from vipu.client.api_error import FLAGS
from vipu.client.caller import DEFAULT_TIMEOUT_S
from vipu.client.client import new_request_id

if TYPE_CHECKING:
    from vipu.v1 import admin_pb2_grpc, job_pb2_grpc, partition_pb2_grpc

__all__ = ["DEFAULT_TIMEOUT_S", "Cli", "Connection", "Settings", "resolve"]


def resolve(prog: str, host=None, port=None, user=None, access_key=None, tls_ca=None) -> Settings:
    try:
        settings = client_settings.resolve(host, port, user, access_key, tls_ca, port_name="--api-port", names=FLAGS)
    except ApiError as e:
        fail(prog, e.message, BAD_INPUT)
    if user is not None and settings.access_key:
        # The CLI cannot tell whether the controller runs --secure (or whose the key is) without a call of its own,
        # so it states the rule rather than a guess: only an explicit flag warns, not a user id from the
        # environment or the config file, which may sit next to a key for good reason.
        warn(prog, f"--api-user-id {user} is ignored by a controller that runs --secure: the access key says who"
             " you are")
    if access_key is not None:
        warn(prog, "--api-access-key shows in `ps` to every user of this machine while the command runs; set"
             " VIPU_CLI_API_ACCESS_KEY, or api-access-key in a config file only you can read (chmod 600)")
    return settings


def flagged(error: ApiError, flags: dict[str, str]) -> ApiError:
    """The refusal naming the flag where the controller named the field ("qos is empty; ..." -> "--qos is empty;
    ...", "invalid flags: array: 'x': ..." -> "-a/--array: 'x': ..."): the controller speaks the API's field
    names, and the spec's label (flags, --wrap) would blame a flag that is not at fault; the CLI's user typed flags.
    Another field the refusal holds at fault (a violation of its own) is named by its flag where the message names
    it later ("exclude and nodelist both name ..." -> "-x/--exclude and -w/--nodelist both name ...").
    A refusal about an object a flag named ("allocation 'x' does not exist") gets the flag in front."""
    import re  # here: only a refused call needs it

    names = [field.rpartition("spec.")[2] for field, _ in error.field_violations]
    for name in names:
        # a workload's field set by a flag of the submit's own (workload.chdir: -D/--chdir)
        key = name if name in flags else name.removeprefix("workload.")
        # the field where a message names it: first ("qos is empty"), after its kind ("job name 'a b'"), or after
        # the spec's label ("invalid flags: array: ...")
        found = re.match(rf"(?:invalid [^:;]*: )?(?:job )?{re.escape(name)}\b(?! \()", error.message)
        if key in flags and found:
            message = f"{flags[key]}{error.message[found.end():]}"
            for other in names:
                if other != name and other in flags:  # a word of its own: not in a quoted value, nor in a flag
                    shown = flags[other].removesuffix(f": {other}")
                    message = re.sub(rf"'[^']*'|(?<![\w/-]){re.escape(other)}(?![\w/-])",
                                     lambda m, shown=shown: m.group() if m.group()[0] == "'" else shown, message)
            return ApiError(error.code, error.reason, message, error.field_violations, error.resource,
                            error.from_controller, error.metadata)
    kind = error.resource[0] if error.resource else None
    if kind in flags and error.message.startswith(f"{kind} "):  # "allocation 'x' does not exist; ..."
        # a script's line is named with the field after it ("job.sh line 2: #SBATCH -p x: allocation"): the
        # message names the field already
        where = flags[kind].removesuffix(f": {kind}")
        return ApiError(error.code, error.reason, f"{where}: {error.message}", error.field_violations,
                        error.resource, error.from_controller, error.metadata)
    return error


SENT_BY_THE_CLI = ("submit_dir", "submit_line")  # fields the CLI adds to every submit on its own, which no user wrote


def older_controller(error: ApiError, address: str) -> ApiError:
    """A refusal of a field the CLI itself sends as unknown, said as what it is: a controller of an earlier release
    than the CLI's. Why: "submit_dir: unknown field; remove it" blamed the user for every submit, and no flag
    removes it."""
    field = next((f for f in SENT_BY_THE_CLI if f"{f}: unknown field" in error.message), None)
    if field is None:
        return error
    return ApiError(error.code, error.reason, f"the controller at {address} runs an earlier vipu-sim than this CLI: it"
                    f" does not know {field}, which this vipu sends with every submit; upgrade the controller, or use"
                    f" the vipu CLI of its release (it said: {error.message})", error.field_violations,
                    error.resource, error.from_controller)


class Connection:
    """The CLI's client: its calls end the command with one line and an exit code when they fail."""

    def __init__(self, prog: str, settings: Settings, timeout: float = DEFAULT_TIMEOUT_S):
        self.prog = prog
        self.client = Client(settings, timeout, names=FLAGS)  # its own messages name the CLI's flags

    @property
    def settings(self) -> Settings:
        return self.client.settings

    @property
    def timeout(self) -> float:
        return self.client.timeout

    @property
    def host(self) -> str:
        return self.settings.host

    @property
    def port(self) -> int:
        return self.settings.port

    @property
    def address(self) -> str:
        return self.client.address

    def fail(self, error: ApiError, request=None, check: str | None = None) -> NoReturn:
        """`request`: the failed call's, which tells a change to jobs from a read; `check`: the command that shows
        whether another change (an admin's, a partition's) was made, given by the command that asked for it."""
        from vipu.v1 import job_pb2 as j  # here: a call that does not fail does not need it

        changes = (j.SubmitJobRequest, j.SubmitJobsRequest, j.CancelJobsRequest, j.UpdateJobRequest, j.JobIdsRequest)
        change = isinstance(request, changes) and not getattr(request, "validate_only", False)  # --test-only
        fail_api(self.prog, error, self.address, change=change, check=check)

    def _stub(self, make):
        try:
            return make()
        except ApiError as e:  # a TLS CA that cannot be read
            self.fail(e)

    @property
    def partitions(self) -> partition_pb2_grpc.PartitionServiceStub:
        return self._stub(lambda: self.client.partition_service)

    @property
    def admin(self) -> admin_pb2_grpc.AdminServiceStub:
        return self._stub(lambda: self.client.admin_service)

    @property
    def jobs(self) -> job_pb2_grpc.JobServiceStub:
        return self._stub(lambda: self.client.job_service)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return self.client.metadata()

    def call(self, method, request, retry: bool = False, flags: dict[str, str] | None = None,
             check: str | None = None, reword: Callable[[ApiError], ApiError] | None = None):
        """Call an RPC with a deadline; on failure print one line and exit with the failure's code.

        `retry`: for idempotent calls (a create carries its request id), keep retrying while the controller is
        unreachable (e.g. restarting after a crash) until --timeout has passed, saying so once. `flags`: spec
        fields the command's flags set (qos: --qos); a refusal naming one names its flag too. `check`: the call
        asks for a change other than to jobs, and this command shows whether it was made (said if the deadline
        passes). `reword`: the command's own wording of a refusal, before `flags` are named (vipu submit -N's in
        nodes)."""
        try:
            return self.client.call(method, request, retry, waiting=self._waiting)
        except ApiError as e:
            e = reword(e) if reword else e
            self.fail(older_controller(flagged(e, flags) if flags else e, self.address), request, check)

    def create(self, method, request, check: str):
        """A create call with a request id (a fresh one unless the request has one), retried as call(retry=True)
        does: a retry returns what the first try made, never a second one or 'already exists'. `check`: as
        call()'s."""
        if not request.request_id:
            request.request_id = new_request_id()
        return self.call(method, request, retry=True, check=check)

    def _waiting(self) -> None:
        """Why nothing happens for up to --timeout, said once, and how to change it."""
        print(f"{self.prog}: the controller at {self.address} is not answering; retrying for up to"
              f" {self.timeout:g} s ({TIMEOUT_HOW.format(prog=self.prog)})", file=sys.stderr, flush=True)

    def every_page(self, method, request, retry: bool = False):
        """Every page of a list call, merged into one response (vipu/client/paging.py); failures, and `retry`, as
        call()'s."""
        try:
            return self.client.every_page(method, request, retry)
        except ApiError as e:
            self.fail(e)

    def attempt(self, method, request):
        """The reply, or None when the controller refused the request (the caller then finds out why by other calls);
        a failure that is not the controller's refusal ends the command as call() does."""
        try:
            return self.client.call(method, request)
        except ApiError as e:
            if not e.from_controller:
                self.fail(e, request)
            return None

    def lookup(self, method, request):
        """The reply, or None when the controller has no such object (NOT_FOUND); any other refusal (another user's
        job under --secure) ends the command with the controller's message, as call() does."""
        import grpc

        try:
            return self.client.call(method, request)
        except ApiError as e:
            if e.from_controller and e.code == grpc.StatusCode.NOT_FOUND:
                return None
            self.fail(e, request)


class Cli(NamedTuple):
    """What every command gets from the root's options (context.root_options): the connection and the output form."""

    conn: Connection
    json: bool
    header: bool

    def wants_json(self, local: bool) -> bool:
        return self.json or local

    def with_header(self, no_header: bool) -> bool:
        return self.header and not no_header
