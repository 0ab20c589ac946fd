"""Where the controller is and how to call it. Each setting comes from its flag, else the environment
(VIPU_CLI_API_HOST, VIPU_CLI_API_PORT, VIPU_CLI_API_USER_ID, VIPU_CLI_API_ACCESS_KEY, VIPU_CLI_TLS_CA), else the
config file (VIPU_CLI_CONFIG, else ~/.config/vipu/vipu-cli.hcl, else /etc/vipu/vipu-cli.hcl, in V-IPU's
`api-host = "..."` form), else the default (localhost:8090, no key, plaintext). A config file that cannot be used
(missing when named, bad syntax, an unknown key) is an error, never skipped."""

from __future__ import annotations

import difflib
import getpass
import json
import os
import re
import socket
import ssl
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# gRPC's C core logs a failed TLS handshake itself (I/E lines on stderr) on top of the status we turn into one line.
# It reads GRPC_VERBOSITY once, when grpc is imported, so set it just for the import (a user's own setting wins,
# and programs started later do not inherit ours).
_verbosity_set = "GRPC_VERBOSITY" in os.environ
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
import grpc  # noqa: E402

if not _verbosity_set:
    del os.environ["GRPC_VERBOSITY"]

from vipu.cli.failure import BAD_INPUT, TIMEOUT_HOW, UNREACHABLE, fail, fail_rpc, from_controller, warn  # noqa: E402
from vipu.v1 import admin_pb2_grpc, job_pb2_grpc, partition_pb2_grpc  # noqa: E402

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 8090
DEFAULT_TIMEOUT_S = 10.0
# a queue of 10,000+ jobs is more than gRPC's default 4 MB reply limit
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 512 * 1024 * 1024)]
HOSTNAME_MISMATCH = (62, 64)  # OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
DEFAULT_CONFIGS = (Path.home() / ".config/vipu/vipu-cli.hcl", Path("/etc/vipu/vipu-cli.hcl"))
CONFIG_KEYS = ("api-host", "api-port", "api-user-id", "api-access-key", "tls-ca")
# V-IPU's vipu-cli.hcl as HCL reads it, one attribute a line: key = "string" (JSON escapes) or key = 8090 / true;
# comments start with # or //.
COMMENT = r"(?:(?:#|//).*)?"
BLANK = re.compile(rf"\s*{COMMENT}")
STRING = r'"((?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)"'
ATTRIBUTE = re.compile(rf"\s*([A-Za-z_][\w-]*)\s*=\s*(?:{STRING}|(-?\d+|true|false))\s*{COMMENT}")


def config_path(prog: str) -> Path | None:
    named = os.environ.get("VIPU_CLI_CONFIG")
    if named:  # named on purpose: a wrong path is a mistake to report, not a reason to use another file
        if not Path(named).exists():
            fail(prog, f"VIPU_CLI_CONFIG names {named}, which does not exist; fix the path or unset VIPU_CLI_CONFIG",
                 BAD_INPUT)
        return Path(named)
    return next((path for path in DEFAULT_CONFIGS if path.is_file()), None)


def read_config(prog: str, path: Path) -> dict[str, str]:
    """The settings in `path`; anything HCL would refuse, or a key we do not know, is an error naming the line,
    since a setting silently dropped sends the CLI to the wrong controller as the wrong user."""
    try:
        text = path.read_text()
    except OSError as e:
        fail(prog, f"cannot read the config file {path}: {e.strerror}", BAD_INPUT)
    except UnicodeDecodeError:
        fail(prog, f"the config file {path} is not UTF-8 text; write it as key = \"value\" lines", BAD_INPUT)
    settings: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        where = f"config file {path} line {number}"
        if BLANK.fullmatch(line):
            continue
        match = ATTRIBUTE.fullmatch(line)
        if not match:
            fail(prog, f'{where}: cannot parse {line.strip()!r}; write key = "value" (or key = 8090)', BAD_INPUT)
        key = match[1]
        if key not in CONFIG_KEYS:
            close = difflib.get_close_matches(key, CONFIG_KEYS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            fail(prog, f"{where}: unknown key {key!r}; {hint}the keys are {', '.join(CONFIG_KEYS)}", BAD_INPUT)
        if key in settings:
            fail(prog, f"{where}: {key} is set again (first on line {first_seen[key]}); keep one", BAD_INPUT)
        settings[key] = json.loads(f'"{match[2]}"') if match[2] is not None else match[3]
        first_seen[key] = number
    return settings


@dataclass
class Settings:
    host: str
    port: int
    user: str
    access_key: str | None
    tls_ca: str | None


def resolve(prog: str, host=None, port=None, user=None, access_key=None, tls_ca=None) -> Settings:
    path = config_path(prog)
    config = read_config(prog, path) if path else {}

    def pick(flag, env: str, key: str):
        return flag if flag is not None else os.environ.get(env) or config.get(key) or None

    raw_port = pick(port, "VIPU_CLI_API_PORT", "api-port")
    try:
        port = DEFAULT_PORT if raw_port is None else int(raw_port)
    except ValueError:
        source = "--api-port" if port is not None else "VIPU_CLI_API_PORT" if os.environ.get("VIPU_CLI_API_PORT") \
            else f"api-port in {path}"
        fail(prog, f"the API port is {raw_port!r} ({source}), not a number; set it to the controller's port",
             BAD_INPUT)
    if not 0 < port < 65536:
        fail(prog, f"the API port is {port}; give a TCP port from 1 to 65535", BAD_INPUT)
    settings = Settings(
        host=pick(host, "VIPU_CLI_API_HOST", "api-host") or DEFAULT_HOST,
        port=port,
        user=pick(user, "VIPU_CLI_API_USER_ID", "api-user-id") or getpass.getuser(),
        access_key=pick(access_key, "VIPU_CLI_API_ACCESS_KEY", "api-access-key"),
        tls_ca=pick(tls_ca, "VIPU_CLI_TLS_CA", "tls-ca"),
    )
    if settings.tls_ca and tls_ca is None and not os.environ.get("VIPU_CLI_TLS_CA") and path:
        # a path in the config file means the same file wherever the command is run from: beside the config
        settings.tls_ca = str(Path(path).parent / Path(settings.tls_ca).expanduser())
    if user is not None and settings.access_key:
        # The CLI cannot tell whether the controller runs --secure (or whose the key is) without a call of its own,
        # so it states the rule rather than a guess: only an explicit flag warns, not a user id from the
        # environment or the config file, which may sit next to a key for good reason.
        warn(prog, f"--api-user-id {user} is ignored by a controller that runs --secure: the access key says who"
             " you are")
    return settings


@dataclass
class Connection:
    prog: str
    settings: Settings
    timeout: float = DEFAULT_TIMEOUT_S
    _channel: grpc.Channel | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return self.settings.host

    @property
    def port(self) -> int:
        return self.settings.port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            if self.settings.tls_ca:
                ca = self.settings.tls_ca
                try:
                    root = Path(ca).read_bytes()
                    ssl.create_default_context(cafile=ca)  # else gRPC logs 8 lines and only says it cannot connect
                except ssl.SSLError as e:
                    fail(self.prog, f"the TLS CA file {ca} is not a PEM certificate ({e.reason}); give the CA"
                         " certificate that signed the controller's (-----BEGIN CERTIFICATE-----)", BAD_INPUT)
                except OSError as e:
                    fail(self.prog, f"cannot read the TLS CA file {ca}: {e.strerror}", BAD_INPUT)
                self._channel = grpc.secure_channel(self.address, grpc.ssl_channel_credentials(root), CHANNEL_OPTIONS)
            else:
                self._channel = grpc.insecure_channel(self.address, CHANNEL_OPTIONS)
        return self._channel

    @property
    def partitions(self) -> partition_pb2_grpc.PartitionServiceStub:
        return partition_pb2_grpc.PartitionServiceStub(self.channel)

    @property
    def admin(self) -> admin_pb2_grpc.AdminServiceStub:
        return admin_pb2_grpc.AdminServiceStub(self.channel)

    @property
    def jobs(self) -> job_pb2_grpc.JobServiceStub:
        return job_pb2_grpc.JobServiceStub(self.channel)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        pairs = [("x-vipu-user", self.settings.user)]
        if self.settings.access_key:
            pairs.append(("authorization", f"Bearer {self.settings.access_key}"))
        return tuple(pairs)

    def call(self, method, request, retry: bool = False):
        """Call an RPC with a deadline; on failure print one line and exit with the failure's code.

        `retry`: for idempotent calls (a submit carries its request id), keep retrying while the controller is
        unreachable (e.g. restarting after a crash) until --timeout has passed."""
        deadline = time.monotonic() + self.timeout
        probe = True
        while True:
            left = deadline - time.monotonic()
            try:
                return method(request, timeout=max(left, 0.05), metadata=self.metadata())
            except grpc.RpcError as e:
                unavailable = e.code() == grpc.StatusCode.UNAVAILABLE
                # a TLS mismatch does not mend by waiting: probe for it once, when the first try fails
                if unavailable and probe and not from_controller(e) and (problem := self.tls_problem()):
                    fail(self.prog, problem, UNREACHABLE)
                if not (retry and unavailable and left > 0.25):
                    fail_rpc(self.prog, e, self.address)
                if probe:  # say why nothing happens for up to --timeout, once, and how to change it
                    print(f"{self.prog}: the controller at {self.address} is not answering; retrying for up to"
                          f" {self.timeout:g} s ({TIMEOUT_HOW.format(prog=self.prog)})", file=sys.stderr, flush=True)
                probe = False
                time.sleep(0.2)

    def every_page(self, method, request):
        """Every page of a list call, merged into one response (paging.py); failures as call(). A later page the
        controller refuses names a listing it no longer keeps: the listing starts again (paging.py)."""
        from vipu.cli.paging import ListingGone, every_page

        def page(asked):
            reply = self.attempt(method, asked) if asked.page_token else self.call(method, asked)
            if reply is None:
                raise ListingGone()
            return reply

        try:
            return every_page(page, request, gone=lambda e: isinstance(e, ListingGone))
        except ListingGone:  # gone every time: the last try says why, as any failure
            return every_page(lambda asked: self.call(method, asked), request)

    def attempt(self, method, request):
        """The reply, or None when the controller refused the request (the caller then finds out why by other calls);
        a failure that is not the controller's refusal ends the command as call() does."""
        try:
            return method(request, timeout=self.timeout, metadata=self.metadata())
        except grpc.RpcError as e:
            if not from_controller(e):
                return self.call(method, request)
            return None

    def tls_problem(self) -> str | None:
        """Why the controller could not be reached, when the reason is TLS. gRPC reports a plaintext CLI talking to a
        TLS controller, and a certificate that does not verify, as the same UNAVAILABLE as a stopped server, with
        the reason only in free text; one handshake of our own tells them apart. Run once, when a call's first try
        failed, so a working setup pays nothing and a stopped server costs one refused connect."""
        ca = self.settings.tls_ca
        context = ssl.create_default_context(cafile=ca)
        if not ca:  # only asking whether the controller speaks TLS at all
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            with socket.create_connection((self.host, self.port), timeout=min(self.timeout, 2.0)) as raw:
                context.wrap_socket(raw, server_hostname=self.host).close()
        except ssl.SSLCertVerificationError as e:
            fix = ("connect by a name the certificate lists (--api-host)" if e.verify_code in HOSTNAME_MISMATCH
                   else "give the CA that signed the controller's certificate")
            return (f"the TLS certificate of the controller at {self.address} did not verify against the CA in {ca}"
                    f" ({e.verify_message}); {fix}")
        except ssl.SSLError as e:
            if not ca:
                return None  # not TLS either: something else is wrong
            return (f"the controller at {self.address} did not complete a TLS handshake ({e.reason or e}); if it"
                    " runs without --tls-cert, drop --tls-ca (and VIPU_CLI_TLS_CA, tls-ca in the config file)")
        except OSError:
            return None  # nothing listens there: the usual 'cannot reach'
        if ca:
            return None  # TLS works: something else is wrong
        return (f"the controller at {self.address} speaks TLS and the CLI connected without it; pass --tls-ca with the"
                " CA certificate that signed the controller's (or set VIPU_CLI_TLS_CA)")
