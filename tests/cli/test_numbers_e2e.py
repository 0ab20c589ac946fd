"""Whole numbers on the command line: a value the wire cannot carry is one line naming the option and its range
(exit 2), not a traceback (exit 1); a negative number is a number, refused by the controller as any other; IPUs
are counted once and in the singular for one."""

from __future__ import annotations

import pytest
import typer.main

from vipu.cli import admin_commands as admin, main
from vipu.cli.params import (WireInt, WireIntRange, command_of, nice_bound, pod_ipus, priority_bound,
                             throttle_bound)

from tests.cli.test_cli_e2e import run
from tests.cli.test_job_ids_and_simulate import one_error

HUGE = "99999999999999999999"
INT32 = "give at most 2147483647"

TOO_BIG = [
    # command line, what the one line names
    (["vipu-admin", "fail", "ipus", HUGE], f"'ipus': {HUGE} is out of range; {INT32}"),
    (["vipu-admin", "fail", "ipus", "2147483648"], f"'ipus': 2147483648 is out of range; {INT32}"),
    (["vipu-admin", "repair", "ipus", HUGE], f"'ipus': {HUGE} is out of range; {INT32}"),
    (["vipu-admin", "kill", "machine", HUGE], f"'machine': {HUGE} is out of range; {INT32}"),
    (["vipu-admin", "fail", "link", "0", HUGE], f"'ipu_b': {HUGE} is out of range; {INT32}"),
    (["vipu-admin", "create", "agent", "q", "--machine", HUGE], f"'--machine': {HUGE} is out of range; {INT32}"),
    (["vipu-admin", "create", "agent", "q", "--port", HUGE], f"'--port': {HUGE} is not in the range 1<=x<=65535"),
    (["vipu-admin", "create", "cluster", "c3", "--agents", "ag00", "--num-ipulinkdomains", "99999999999"],
     "'--num-ipulinkdomains': 99999999999 is out of range; give 1 to 2147483647"),
    # walk29: a bound of the Pod's or the controller's, where the wire's says nothing of what would be taken
    (["vipu", "create", "partition", "x", "--size", HUGE], f"'--size': {HUGE} is more than bow-pod64 can hold (64"
                                                           " IPUs); give a power of two up to 64"),
    (["vipu", "submit", "--ipus", HUGE], f"'--ipus': {HUGE} is more than bow-pod64 can hold (64 IPUs); give a"
                                         " power of two up to 64"),
    (["vipu", "submit", "--ipus", f"-{HUGE}"], f"'--ipus': -{HUGE} is no number of IPUs; give a power of two from 1"
                                               " to 64"),
    (["vipu", "submit", "--nice", HUGE], f"'--nice': {HUGE} is out of range; give -10000 to 10000 (negative: admins"
                                         " only)"),
    (["vipu", "update", "job", "1", "--priority", HUGE], f"'--priority': {HUGE} is out of range; give 1 to"
                                                         " 4294967294, or 0 to hold the job"),
    (["vipu", "create", "partition", "x", "--size", "4", "--num-gcds", HUGE], f"'--num-gcds': {HUGE}"),
    (["vipu", "get", "partition", "x", "--gcd", HUGE], f"'--gcd': {HUGE} is out of range; {INT32}"),
    (["vipu", "history", "--limit", HUGE], f"'--limit': {HUGE} is out of range; {INT32}"),
    # seconds: at most a day, and a number (gRPC's deadline overflowed and read as the controller not answering)
    (["vipu", "--timeout", "1e12", "queue"], "'--timeout': 1000000000000.0 is not in the range 0.1<=x<=86400"),
    (["vipu", "--timeout", "inf", "queue"], "'--timeout': inf is not in the range 0.1<=x<=86400"),
    (["vipu-admin", "--timeout", "nan", "list", "agents"], "'--timeout': nan is not a number of seconds"),
    # job ids are text, checked by job_ids.py against int64
    (["vipu", "cancel", HUGE], f"job id '{HUGE}' is not a job id"),
    (["vipu", "show", "job", HUGE], f"job id '{HUGE}' is not a job id"),
]


def test_a_number_too_big_for_the_wire_is_one_line_naming_the_option_and_its_range(server):
    for args, words in TOO_BIG:
        out = run(server, *args)
        assert out.returncode == 2, (args, out.stderr)
        assert words in one_error(out, args[0]), args
    assert run(server, "vipu", "list", "partitions", "--json").stdout.strip() == "[]"


@pytest.mark.parametrize("app", [main.app, admin.app], ids=["vipu", "vipu-admin"])
def test_every_integer_parameter_is_checked_against_the_wire(app):
    """The guard for commands still to come: wire_ints reaches every integer of every command."""
    root = command_of(app)  # as run_app builds it

    def params(command):
        yield from ((command, p) for p in command.params)
        for sub in getattr(command, "commands", {}).values():
            yield from params(sub)

    ints = [(c.name, p.name, p.type) for c, p in params(root) if "int" in type(p.type).__name__.lower()]
    assert ints and all(isinstance(kind, (WireInt, WireIntRange)) for _, _, kind in ints), ints
    numbered = {c for c, p in params(root) if p.param_type_name == "argument" and isinstance(p.type, WireInt)}
    assert {c.name for c in numbered} == ({"ipus", "machine", "link"} if app is admin.app else set())
    assert all(c.context_settings["ignore_unknown_options"] for c in numbered)  # so -1 reaches the argument


def test_the_controllers_bounds_are_the_options_own_types():
    """Declared where each option is (sbatch_options.py, update, create partition), not patched onto the command
    tree once it is built: typer's own tree already has them."""
    root = typer.main.get_command(main.app)
    said = {(path, p.name): (p.type.wire[1], p.type.past) for path, c in (
        ("submit", root.commands["submit"]), ("update", root.commands["update"]),
        ("create partition", root.commands["create"].commands["partition"]))
        for p in c.params if getattr(p.type, "past", None) is not None}
    assert said == {("submit", "ipus"): (2**31 - 1, pod_ipus), ("submit", "nice"): (2**31 - 1, nice_bound),
                    ("update", "nice"): (2**31 - 1, nice_bound), ("update", "priority"): (2**63 - 1, priority_bound),
                    ("update", "throttle"): (2**31 - 1, throttle_bound),
                    ("create partition", "size"): (2**63 - 1, pod_ipus)}


def test_a_negative_number_is_a_number_refused_by_the_controller(server):
    for args, line in [
        (["fail", "ipus", "-1"], "ipu -1 does not exist; bow-pod64 has IPUs 0 to 63"),
        (["repair", "ipus", "3", "-1"], "ipu -1 does not exist; bow-pod64 has IPUs 0 to 63"),
        (["fail", "link", "0", "-4"], "ipu -4 does not exist; bow-pod64 has IPUs 0 to 63"),
        (["kill", "machine", "-3"], "machine is -3; bow-pod64 has machines 0 to 15"),
        (["create", "agent", "q", "--machine", "-1"], "machine is -1; bow-pod64 has machines 0 to 15"),
    ]:
        out = run(server, "vipu-admin", *args)
        assert out.returncode == 2 and one_error(out, "vipu-admin") == f"vipu-admin: error: {line}", (args, out.stderr)
    # an unknown option is still one, with what it may have meant
    out = run(server, "vipu-admin", "fail", "ipus", "3", "--jsn")
    assert out.returncode == 2 and one_error(out, "vipu-admin") == (
        "vipu-admin: error: No such option: --jsn (Possible options: --json, --reason, --showjson); see `vipu-admin"
        " fail ipus --help`")
    out = run(server, "vipu-admin", "repair", "ipus", "3")  # as `resume agent` of an agent not drained
    assert out.returncode == 4 and one_error(out, "vipu-admin") == (
        "vipu-admin: error: IPU 3 (idle) is not failed: repair undoes a failure (`vipu-admin fail ipus`, or a machine"
        " or IPU-Link lost), so there is nothing to repair")


def test_fail_and_repair_name_each_ipu_once_in_the_right_number(server):
    for args, line in [
        (["fail", "ipus", "8", "8"], "IPU 8 failed; partitions now FAILED: none"),
        (["fail", "ipus", "0"], "IPU 0 failed; partitions now FAILED: none"),
        (["fail", "ipus", "2", "1", "2"], "IPUs 2 1 failed; partitions now FAILED: none"),
        (["repair", "ipus", "8", "8"], "IPU 8 repaired"),
        (["repair", "ipus", "2", "1", "2"], "IPUs 1 2 repaired"),
    ]:
        out = run(server, "vipu-admin", *args)
        assert out.returncode == 0 and out.stdout == line + "\n", (args, out.stdout, out.stderr)
    run(server, "vipu-admin", "fail", "ipus", "2")
    out = run(server, "vipu-admin", "repair", "ipus", "5", "2", "6", "5")  # refused whole: IPU 2 stays failed
    assert out.returncode == 4 and one_error(out, "vipu-admin") == (
        "vipu-admin: error: IPUs 5 (idle), 6 (idle) are not failed: repair undoes a failure (`vipu-admin fail ipus`, or"
        " a machine or IPU-Link lost), so there is nothing to repair; none was repaired: repair the failed ones alone,"
        " `vipu-admin repair ipus 2`")
    assert run(server, "vipu-admin", "repair", "ipus", "2").stdout == "IPU 2 repaired\n"
