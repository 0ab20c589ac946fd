"""Where the CLI's settings come from and what it says when they are wrong: the config file (vipu-cli.hcl), TLS
against a TLS controller, and an --api-user-id that a --secure controller ignores. Each mistake is one line on
stderr naming the file, flag or key and the fix; gRPC's own log lines never reach the user."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import grpc
import pytest

from tests.cli_forks import run_script
from tests.conftest import LISTENING, console_script
from vipu.cli.connection import Connection, Settings
from vipu.client import ApiError, Client


def vipu(*args: str, env: dict[str, str], prog: str = "vipu") -> subprocess.CompletedProcess:
    return run_script(console_script(prog), list(args), env=env)


def error_line(out: subprocess.CompletedProcess) -> str:
    """The one line on stderr (the tests ask for exactly one)."""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def clean_env(tmp_path) -> dict[str, str]:
    """No VIPU_CLI_* from the caller, a HOME of our own (no ~/.config/vipu), and a port where nothing listens, so a
    CLI that ignored its config file would fail somewhere else than on the line under test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIPU_CLI_", "GRPC_"))}
    return {**env, "HOME": str(tmp_path), "VIPU_CLI_API_PORT": str(closed_port())}


# --- the config file ---------------------------------------------------------------------------------------------

KEYS = "the keys are api-host, api-port, api-user-id, api-access-key, tls-ca"


@pytest.mark.parametrize(
    "text, want",
    [
        ('api-host = "localhost"\napi-prot = 40643\n',
         "line 2: unknown key 'api-prot'; did you mean api-port? " + KEYS),
        ("colour = 1\n", "line 1: unknown key 'colour'; " + KEYS),
        ('# a comment\napi-host = "localhost\n',
         "line 2: cannot parse 'api-host = \"localhost'; write key = \"value\" (or key = 8090)"),
        ("api-host localhost\n", "line 1: cannot parse 'api-host localhost'; write key = \"value\" (or key = 8090)"),
        ("api-port = 1\napi-port = 2\n", "line 2: api-port is set again (first on line 1); keep one"),
    ],
)
def test_a_broken_config_file_is_an_error_naming_file_and_line(tmp_path, clean_env, text, want):
    config = tmp_path / "vipu-cli.hcl"
    config.write_text(text)
    out = vipu("list", "partitions", env={**clean_env, "VIPU_CLI_CONFIG": str(config)})
    assert out.returncode == 2
    assert error_line(out) == f"vipu: error: config file {config} {want}"


def test_a_config_file_named_but_missing_is_an_error(tmp_path, clean_env):
    missing = tmp_path / "x" / "nonexist.hcl"
    out = vipu("list", "partitions", env={**clean_env, "VIPU_CLI_CONFIG": str(missing)})
    assert out.returncode == 2
    assert error_line(out) == (f"vipu: error: VIPU_CLI_CONFIG names {missing}, which does not exist; fix the path or"
                               " unset VIPU_CLI_CONFIG")


def test_the_default_config_file_is_checked_too(tmp_path, clean_env):
    config = tmp_path / ".config" / "vipu" / "vipu-cli.hcl"  # clean_env's HOME is tmp_path
    config.parent.mkdir(parents=True)
    config.write_text("api_port = 1\n")
    out = vipu("list", "partitions", env=clean_env, prog="vipu-admin")
    assert out.returncode == 2
    assert error_line(out) == (f"vipu-admin: error: config file {config} line 1: unknown key 'api_port'; did you mean"
                               f" api-port? {KEYS}")


def test_a_port_that_is_not_a_number_names_where_it_came_from(tmp_path, clean_env):
    config = tmp_path / "vipu-cli.hcl"
    config.write_text('api-port = "abc"\n')
    env = {**clean_env, "VIPU_CLI_CONFIG": str(config)}
    del env["VIPU_CLI_API_PORT"]
    out = vipu("list", "partitions", env=env)
    assert out.returncode == 2
    assert error_line(out) == (f"vipu: error: the API port is 'abc' (api-port in {config}), not a number; set it to the"
                               " controller's port")


@pytest.mark.parametrize("prog", ["vipu", "vipu-admin"])
def test_an_empty_api_host_or_tls_ca_is_refused_not_read_as_its_default(clean_env, prog, monkeypatch):
    """Regression (walk45): `--api-host "$HOST"` with HOST unset dialled localhost, whose controller may be another
    than the one meant (a `vipu cancel -u alice` there); `--tls-ca "$CA"` with CA unset dialled without TLS."""
    out = vipu("--api-host", "", "list", "partitions", env=clean_env, prog=prog)
    assert out.returncode == 2
    assert error_line(out) == (f"{prog}: error: --api-host is empty; give the controller's host name or address, or"
                               " leave it out for VIPU_CLI_API_HOST, the config file's api-host or localhost")
    out = vipu("--tls-ca", "", "list", "partitions", env=clean_env, prog=prog)  # not a plaintext call
    assert out.returncode == 2
    assert error_line(out) == (f"{prog}: error: --tls-ca is empty; give the CA certificate that signed the"
                               " controller's, or leave it out to dial without TLS")
    monkeypatch.setenv("VIPU_CLI_CONFIG", "/dev/null")
    with pytest.raises(ApiError, match="^host is empty; give the controller's host name"):
        Client.connect(host=" ")  # a script's client names its argument
    with pytest.raises(ApiError, match="^tls_ca is empty; give the CA certificate"):
        Client.connect(tls_ca="")


def test_a_good_config_file_with_comments_reaches_the_controller(unchanged_server, tmp_path, clean_env):
    server = unchanged_server
    config = tmp_path / "vipu-cli.hcl"
    config.write_text(f'# V-IPU form\n\napi-host = "127.0.0.1"  // the pod\napi-port = {server.port} # user API\n')
    env = {**clean_env, "VIPU_CLI_CONFIG": str(config)}
    del env["VIPU_CLI_API_PORT"]
    out = vipu("--server-version", env=env)
    assert out.returncode == 0 and out.stderr == ""
    assert f"host: 127.0.0.1:{server.port}" in out.stdout


@pytest.mark.parametrize("owner, mode, key, refused", [
    ("other", 0o600, True, "holds an access key but belongs to uid {uid}, not to you (uid {me}), so its owner chooses"
                           " your key and controller; use a file of your own: chown {me} {path} && chmod 600 {path}"
                           " (or a copy)"),
    ("me", 0o640, True, "holds an access key and others may read it (mode 0640); make it yours alone: chmod 600"
                        " {path}"),
    ("me", 0o600, True, None),
    ("other", 0o644, False, None),  # no key: nothing to steal, and its settings are anyone's to read
])
def test_a_config_file_holding_a_key_must_be_the_callers_own_and_private(tmp_path, monkeypatch, owner, mode, key,
                                                                          refused):
    """Regression: a config file of another user's (mode 0600) holding a key was used without a word; ssh refuses
    such a key file."""
    from vipu.client import settings
    from vipu.client.api_error import ApiError

    config = tmp_path / "vipu-cli.hcl"
    config.write_text('api-host = "127.0.0.1"\n' + ('api-access-key = "k"\n' if key else ""))
    config.chmod(mode)
    uid = config.stat().st_uid
    me = uid if owner == "me" else uid + 1  # another uid for the caller than the file's: no root needed
    monkeypatch.setattr(settings.os, "geteuid", lambda: me)
    monkeypatch.setenv("VIPU_CLI_CONFIG", str(config))
    monkeypatch.setenv("VIPU_CLI_API_USER_ID", "u")
    if refused is None:
        assert settings.resolve().host == "127.0.0.1"
        return
    with pytest.raises(ApiError) as e:
        settings.resolve()
    assert e.value.message == f"the config file {config} " + refused.format(uid=uid, me=me, path=config)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file to another user")
def test_the_cli_refuses_a_key_in_another_users_config_file_in_one_line(tmp_path, clean_env):
    config = tmp_path / "vipu-cli.hcl"
    config.write_text('api-access-key = "k"\n')
    config.chmod(0o600)
    os.chown(config, 65534, 65534)  # nobody's
    out = vipu("list", "partitions", env={**clean_env, "VIPU_CLI_CONFIG": str(config)})
    assert out.returncode == 2
    assert error_line(out).startswith(f"vipu: error: the config file {config} holds an access key but belongs to uid"
                                      " 65534, not to you (uid 0)")


# --- TLS ---------------------------------------------------------------------------------------------------------

def make_ca(folder, name: str):
    key, cert = folder / f"{name}.key", folder / f"{name}.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return key, cert


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A TLS controller (certificate `server.crt`, self-signed) and a second CA (`other.crt`) that did not sign it."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = make_ca(folder, "server")
    _, other = make_ca(folder, "other")
    proc = subprocess.Popen([console_script("vipu-server"), "--port", "0", "--metrics-port", "-1", "--ray", "off",
                             "--state-dir", str(folder / "state"), "--tls-cert", str(cert), "--tls-key", str(key)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(LISTENING.search(proc.stdout.readline()).group(2))
        yield {"port": port, "cert": cert, "key": key, "other": other}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def at(port: int, host: str = "localhost") -> list[str]:
    return ["--api-host", host, "--api-port", str(port), "--timeout", "5"]


def test_a_plaintext_cli_against_a_tls_controller_is_told_to_pass_tls_ca(tls, clean_env):
    out = vipu(*at(tls["port"]), "list", "partitions", env=clean_env)
    assert out.returncode == 5
    assert error_line(out) == (f"vipu: error: the controller at localhost:{tls['port']} speaks TLS and the CLI connected"
                               " without it; pass --tls-ca with the CA certificate that signed the controller's (or"
                               " set VIPU_CLI_TLS_CA)")


def test_a_retried_submit_does_not_wait_out_its_timeout_on_a_tls_mismatch(tls, clean_env):
    started = time.monotonic()
    out = vipu("--api-host", "localhost", "--api-port", str(tls["port"]), "--timeout", "30", "submit", "--ipus", "1",
               "--time-limit", "1m", env=clean_env)
    assert out.returncode == 5 and "speaks TLS" in error_line(out)
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("prog", ["vipu", "vipu-admin"])
def test_a_ca_that_did_not_sign_the_certificate_is_named_without_grpc_log_lines(tls, clean_env, prog):
    out = vipu(*at(tls["port"]), "--tls-ca", str(tls["other"]), "list", "agents" if prog == "vipu-admin" else "ipus",
               env=clean_env, prog=prog)
    assert out.returncode == 5
    assert error_line(out) == (f"{prog}: error: the TLS certificate of the controller at localhost:{tls['port']} did"
                               f" not verify against the CA in {tls['other']} (self-signed certificate); give the CA"
                               " that signed the controller's certificate")


def test_a_certificate_that_does_not_name_the_host_says_so(tls, clean_env):
    out = vipu(*at(tls["port"], "127.0.0.1"), "--tls-ca", str(tls["cert"]), "list", "partitions", env=clean_env)
    assert out.returncode == 5
    assert error_line(out) == (f"vipu: error: the TLS certificate of the controller at 127.0.0.1:{tls['port']} did not"
                               f" verify against the CA in {tls['cert']} (IP address mismatch, certificate is not valid"
                               " for '127.0.0.1'.); connect by a name the certificate lists (--api-host)")


def test_a_tls_ca_that_is_not_a_certificate_is_named(tls, clean_env):
    out = vipu(*at(tls["port"]), "--tls-ca", str(tls["key"]), "list", "partitions", env=clean_env)
    assert out.returncode == 2
    assert error_line(out) == (f"vipu: error: the TLS CA file {tls['key']} is not a PEM certificate"
                               " (NO_CERTIFICATE_OR_CRL_FOUND); give the CA certificate that signed the controller's"
                               " (-----BEGIN CERTIFICATE-----)")


def test_the_right_ca_works(tls, clean_env):
    env = {**clean_env, "VIPU_CLI_TLS_CA": str(tls["cert"])}
    out = vipu(*at(tls["port"]), "--server-version", env=env)
    assert out.returncode == 0 and out.stderr == "" and f"host: localhost:{tls['port']}" in out.stdout


def test_a_relative_tls_ca_in_the_config_file_is_beside_the_file(tls, clean_env, tmp_path):
    """Wherever the command runs from: a config file's relative path was read from the current folder."""
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_bytes(tls["cert"].read_bytes())
    config = tmp_path / "vipu-cli.hcl"
    config.write_text(f'api-host = "localhost"\napi-port = {tls["port"]}\ntls-ca = "certs/ca.pem"\n')
    env = {k: v for k, v in clean_env.items() if k != "VIPU_CLI_API_PORT"}  # the file's port, not a closed one
    out = subprocess.run([console_script("vipu"), "--server-version"], capture_output=True, text=True, timeout=60,
                         env={**env, "VIPU_CLI_CONFIG": str(config)}, cwd="/")
    assert out.returncode == 0 and out.stderr == "" and f"host: localhost:{tls['port']}" in out.stdout


def test_a_tls_cli_against_a_plaintext_controller_is_told_to_drop_tls_ca(unchanged_server, tls, clean_env):
    server = unchanged_server
    out = vipu(*at(server.port), "--tls-ca", str(tls["cert"]), "list", "partitions", env=clean_env)
    assert out.returncode == 5
    assert error_line(out) == (f"vipu: error: the controller at localhost:{server.port} did not complete a TLS handshake"
                               " (WRONG_VERSION_NUMBER); if it runs without --tls-cert, drop --tls-ca (and"
                               " VIPU_CLI_TLS_CA, tls-ca in the config file)")


@pytest.mark.parametrize("tls_ca", [[], ["--tls-ca", "cert"]])
def test_nothing_listening_is_still_cannot_reach(tls, clean_env, tls_ca):
    port = closed_port()
    out = vipu(*at(port), *[str(tls[x]) if x == "cert" else x for x in tls_ca], "list", "partitions", env=clean_env)
    assert out.returncode == 5
    assert error_line(out) == (f"vipu: error: cannot reach the V-IPU controller at localhost:{port}; is vipu-server"
                               " running? (set --api-host/--api-port or VIPU_CLI_API_HOST/VIPU_CLI_API_PORT)")


class Marked(grpc.RpcError):
    """An UNAVAILABLE the controller chose, with its origin mark (vipu/server/status.py)."""

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "the state store cannot be written (disk full); retry"

    def trailing_metadata(self):
        return (("x-vipu-origin", "controller"),)


def test_a_status_the_controller_chose_is_printed_as_it_is(tls, capsys):
    # pointed at the TLS controller without a CA: a transport UNAVAILABLE here would be explained as TLS
    conn = Connection("vipu", Settings("localhost", tls["port"], "u", None, None), timeout=1)

    def refused(request, timeout, metadata):
        raise Marked()

    with pytest.raises(SystemExit) as exit_:
        conn.call(refused, None)
    assert exit_.value.code == 5
    assert capsys.readouterr().err == "vipu: error: the state store cannot be written (disk full); retry\n"


# --- who you are -------------------------------------------------------------------------------------------------

def test_api_user_id_beside_an_access_key_gets_one_warning(server_factory, clean_env):
    server = server_factory(extra=["--secure"])
    env = {**clean_env, "VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": str(server.port)}
    admin = {**env, "VIPU_CLI_API_ACCESS_KEY": (server.state_dir / "admin.key").read_text().strip()}
    bob = json.loads(vipu("create", "user", "bob", "--json", env=admin, prog="vipu-admin").stdout)["access_key"]

    out = vipu("--api-user-id", "alice", "--api-access-key", bob, "submit", "--ipus", "1", "--time-limit", "1m",
               "--json", env=env)
    assert out.returncode == 0
    assert out.stderr.splitlines() == [
        "vipu: warning: --api-user-id alice is ignored by a controller that runs --secure: the access key says who"
        " you are",
        "vipu: warning: --api-access-key shows in `ps` to every user of this machine while the command runs; set"
        " VIPU_CLI_API_ACCESS_KEY, or api-access-key in a config file only you can read (chmod 600)"]
    [job] = json.loads(out.stdout)["job_ids"]
    shown = vipu("show", "job", str(job), "--json", env={**env, "VIPU_CLI_API_ACCESS_KEY": bob})
    assert json.loads(shown.stdout)["user"] == "bob"

    # a user id from the environment next to a key (e.g. both in a profile) is not flagged on every command
    quiet = vipu("queue", env={**env, "VIPU_CLI_API_USER_ID": "alice", "VIPU_CLI_API_ACCESS_KEY": bob})
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize(
    "prog, args, line",
    [
        ("vipu", ["show", "job"], "vipu: error: Missing argument 'id'; see `vipu show job --help`"),
        ("vipu", ["submit", "--bogus"],
         "vipu: error: No such option: --bogus (Possible options: --ipus, --qos, --user); see `vipu submit --help`"),
        ("vipu", ["submit", "--ipus", "x"], "vipu: error: Invalid value for '--ipus': 'x' is not a valid int;"
                                            " see `vipu submit --help`"),
        ("vipu-admin", ["bogus"], "vipu-admin: error: No such command 'bogus'; see `vipu-admin --help`"),
        # click raises these without a context: the line named `vipu --help` (walk of issue 22)
        ("vipu", ["submit", "--wrap", "true", "-b"],
         "vipu: error: Option '-b' requires an argument; see `vipu submit --help`"),
        ("vipu", ["history", "-S"], "vipu: error: Option '-S' requires an argument; see `vipu history --help`"),
        ("vipu-admin", ["create", "user", "--unix-user"],
         "vipu-admin: error: Option '--unix-user' requires an argument; see `vipu-admin create user --help`"),
        ("vipu", ["--api-host"], "vipu: error: Option '--api-host' requires an argument; see `vipu --help`"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_commands_help(clean_env, prog, args, line):
    """click drew a five-line box for these; the README promises one line on stderr for every failure."""
    out = vipu(*args, env=clean_env, prog=prog)
    assert out.returncode == 2 and error_line(out) == line and out.stdout == ""


@pytest.mark.parametrize(
    "args, line",
    [
        (["history", "-S", "now+1hour"],  # no -E: now, as sacct's; sacct too exits non-zero, listing nothing
         "vipu: error: -S/--starttime 'now+1hour' is after now (no -E/--endtime given); give the earlier time to -S"),
    ],
)
def test_a_bad_value_is_refused_before_the_controller_is_asked(clean_env, args, line):
    """Nothing listens at clean_env's port: a command that asked the controller would exit 5, not 2."""
    out = vipu(*args, env=clean_env)
    assert (out.returncode, error_line(out), out.stdout) == (2, line, "")


def test_a_group_without_its_command_still_shows_its_help(clean_env):
    out = vipu("show", env=clean_env)
    assert out.returncode == 2 and "Usage: vipu show" in out.stdout and "job" in out.stdout
