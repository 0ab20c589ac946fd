"""Where the controller is and who is calling, as the vipu CLI finds it. Each setting comes from its argument (the
CLI's flag), else the environment (VIPU_CLI_API_HOST, VIPU_CLI_API_PORT, VIPU_CLI_API_USER_ID,
VIPU_CLI_API_ACCESS_KEY, VIPU_CLI_TLS_CA), else the config file (VIPU_CLI_CONFIG, else ~/.config/vipu/vipu-cli.hcl,
else /etc/vipu/vipu-cli.hcl, in V-IPU's `api-host = "..."` form), else the default (localhost:8090, no key,
plaintext). A config file that cannot be used (missing when named, bad syntax, an unknown key) is an error, never
skipped: a setting silently dropped sends the call to the wrong controller as the wrong user."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import grpc

from vipu.client.api_error import ARGUMENTS, BAD_SETTING, ApiError

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 8090
MAX_USER = 64  # the controller's rule for names (vipu/partition/rules.py MAX_NAME)
MAX_KEY = 1024  # far above a real key (32 characters), far below gRPC's metadata limit
CONFIG_KEYS = ("api-host", "api-port", "api-user-id", "api-access-key", "tls-ca")
# V-IPU's vipu-cli.hcl as HCL reads it, one attribute a line: key = "string" (JSON escapes) or key = 8090 / true;
# comments start with # or //.
COMMENT = r"(?:(?:#|//).*)?"
BLANK = rf"\s*{COMMENT}"  # patterns compiled at their first use (re keeps them): most calls read no config file
STRING = r'"((?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)"'
ATTRIBUTE = rf"\s*([A-Za-z_][\w-]*)\s*=\s*(?:{STRING}|(-?\d+|true|false))\s*{COMMENT}"


class Settings(NamedTuple):  # not a dataclass: a NamedTuple is made in a fraction of the time, at every CLI call
    host: str
    port: int
    user: str
    access_key: str | None
    tls_ca: str | None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def bad(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT, BAD_SETTING, message)


def config_path() -> Path | None:
    named = os.environ.get("VIPU_CLI_CONFIG")
    if named:  # named on purpose: a wrong path is a mistake to report, not a reason to use another file
        if not Path(named).exists():
            raise bad(f"VIPU_CLI_CONFIG names {named}, which does not exist; fix the path or unset VIPU_CLI_CONFIG")
        return Path(named)
    defaults = (Path.home() / ".config/vipu/vipu-cli.hcl", Path("/etc/vipu/vipu-cli.hcl"))  # HOME as the call finds it
    return next((path for path in defaults if path.is_file()), None)


def read_config(path: Path) -> dict[str, str]:
    """The settings in `path`; anything HCL would refuse, or a key we do not know, is an error naming the line."""
    try:
        text = path.read_text()
    except OSError as e:
        raise bad(f"cannot read the config file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise bad(f"the config file {path} is not UTF-8 text; write it as key = \"value\" lines") from None
    import json  # here: a call without a config file needs none of it

    settings: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        where = f"config file {path} line {number}"
        if re.fullmatch(BLANK, line):
            continue
        match = re.fullmatch(ATTRIBUTE, line)
        if not match:
            raise bad(f'{where}: cannot parse {line.strip()!r}; write key = "value" (or key = 8090)')
        key = match[1]
        if key not in CONFIG_KEYS:
            import difflib  # here: only a mistyped key needs it

            close = difflib.get_close_matches(key, CONFIG_KEYS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise bad(f"{where}: unknown key {key!r}; {hint}the keys are {', '.join(CONFIG_KEYS)}")
        if key in settings:
            raise bad(f"{where}: {key} is set again (first on line {first_seen[key]}); keep one")
        settings[key] = json.loads(f'"{match[2]}"') if match[2] is not None else match[3]
        first_seen[key] = number
    return settings


def check_private(path: Path) -> None:
    """A config file holding an access key must be the caller's own and readable by its owner alone, as ssh requires
    of a private key: anyone who reads the key acts as its user, and the owner of another's file chooses which key
    and controller the caller's commands go to."""
    info = path.stat()
    mode = info.st_mode & 0o777
    if info.st_uid != os.geteuid():
        raise bad(f"the config file {path} holds an access key but belongs to uid {info.st_uid}, not to you (uid"
                  f" {os.geteuid()}), so its owner chooses your key and controller; use a file of your own: chown"
                  f" {os.geteuid()} {path} && chmod 600 {path} (or a copy)")
    if mode & 0o077:
        raise bad(f"the config file {path} holds an access key and others may read it (mode {mode:04o}); make it"
                  f" yours alone: chmod 600 {path}")


def login_name() -> str:
    import getpass  # here: it imports termios, which a user given by flag, environment or config file never needs

    return getpass.getuser()


def resolve(host=None, port=None, user=None, access_key=None, tls_ca=None, port_name: str = "port",
            names: dict[str, str] = ARGUMENTS) -> Settings:
    """The settings, each from its argument, else the environment, else the config file, else the default; raises
    ApiError (reason BAD_SETTING) naming what cannot be used (the port argument as `port_name`, the others as
    `names` has them: the CLI's flags)."""
    # an argument given empty (`--api-host "$HOST"` with HOST unset) is a mistake, not a wish for the default: it
    # would reach localhost's controller, or without TLS a controller meant to be dialled with it
    if host is not None and not host.strip():
        raise bad(f"{names['host']} is empty; give the controller's host name or address, or leave it out for"
                  f" VIPU_CLI_API_HOST, the config file's api-host or {DEFAULT_HOST}")
    if tls_ca is not None and not tls_ca.strip():
        raise bad(f"{names['tls_ca']} is empty; give the CA certificate that signed the controller's, or leave it"
                  " out to dial without TLS")
    path = config_path()
    config = read_config(path) if path else {}
    if "api-access-key" in config:
        check_private(path)

    def pick(given, env: str, key: str):
        return given if given is not None else os.environ.get(env) or config.get(key) or None

    raw_port = pick(port, "VIPU_CLI_API_PORT", "api-port")
    try:
        port_number = DEFAULT_PORT if raw_port is None else int(raw_port)
    except ValueError:
        source = port_name if port is not None else "VIPU_CLI_API_PORT" if os.environ.get("VIPU_CLI_API_PORT") \
            else f"api-port in {path}"
        raise bad(f"the API port is {raw_port!r} ({source}), not a number; set it to the controller's port") from None
    if not 0 < port_number < 65536:
        raise bad(f"the API port is {port_number}; give a TCP port from 1 to 65535")
    ca = pick(tls_ca, "VIPU_CLI_TLS_CA", "tls-ca")
    if ca and tls_ca is None and not os.environ.get("VIPU_CLI_TLS_CA") and path:
        # a path in the config file means the same file wherever the command is run from: beside the config
        ca = str(Path(path).parent / Path(ca).expanduser())
    settings = Settings(
        host=pick(host, "VIPU_CLI_API_HOST", "api-host") or DEFAULT_HOST,
        port=port_number,
        user=pick(user, "VIPU_CLI_API_USER_ID", "api-user-id") or login_name(),
        access_key=pick(access_key, "VIPU_CLI_API_ACCESS_KEY", "api-access-key"),
        tls_ca=ca,
    )
    # both travel as gRPC metadata, whose 8 KB limit a longer value breaks with gRPC's own words, not ours
    if len(settings.user) > MAX_USER:
        raise bad(f"the user id is {len(settings.user):,} characters long; a user name has at most {MAX_USER}")
    if settings.access_key and len(settings.access_key) > MAX_KEY:
        raise bad(f"the access key is {len(settings.access_key):,} characters long; a key vipu-admin gives has 32:"
                  " check what the key setting holds")
    return settings
