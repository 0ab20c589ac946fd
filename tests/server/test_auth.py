"""--secure: every request needs an access key; users see and change only their own jobs and partitions, admins
everything; each denial is its own exit code and message. TLS with a certificate pair."""

from __future__ import annotations

import json
import pwd
import subprocess
import time

import pytest

from tests.cli.test_cli_e2e import run
from tests.cli.test_jobs_e2e import wait_for
from tests.conftest import LISTENING, console_script


@pytest.fixture
def secure(server_factory):
    server = server_factory(extra=["--secure"])
    admin_key = (server.state_dir / "admin.key").read_text().strip()
    assert oct((server.state_dir / "admin.key").stat().st_mode & 0o777) == "0o600"

    def as_(key: str | None):
        env = server.env()
        env.pop("VIPU_CLI_API_ACCESS_KEY", None)
        if key:
            env["VIPU_CLI_API_ACCESS_KEY"] = key
        return env

    def new_user(name: str) -> str:
        out = run(server, "vipu-admin", "create", "user", name, "--json", env=as_(admin_key))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["access_key"]

    return server, as_, admin_key, new_user


def test_requests_without_a_valid_key_are_refused(secure):
    server, as_, _, _ = secure
    for env in (as_(None), as_("not-a-key")):
        out = run(server, "vipu", "list", "partitions", env=env)
        assert out.returncode == 6 and "access key" in out.stderr
    out = run(server, "vipu", "--api-access-key", "wrong", "queue", env=as_(None))
    assert out.returncode == 6


def test_users_see_and_change_only_their_own(secure, tmp_path):
    server, as_, admin_key, new_user = secure
    alice, bob = new_user("alice"), new_user("bob")
    submitted = run(server, "vipu", "submit", "--ipus", "4", "--time-limit", "5m", "--json", env=as_(alice))
    assert submitted.returncode == 0, submitted.stderr
    [job] = json.loads(submitted.stdout)["job_ids"]
    granted = run(server, "vipu-admin", "create", "allocation", "alices", "--agents", "ag15", "--users", "alice",
                  env=as_(admin_key))
    assert granted.returncode == 0, granted.stderr
    made = run(server, "vipu", "create", "partition", "mine", "--size", "2", "--allocation", "alices", env=as_(alice))
    assert made.returncode == 0, made.stderr

    listed = run(server, "vipu", "queue", "--json", env=as_(bob))
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["jobs"] == []
    assert json.loads(run(server, "vipu", "list", "partitions", "--json", env=as_(bob)).stdout) == []
    for args in (["cancel", str(job)], ["show", "job", str(job)], ["hold", str(job)], ["priority", str(job)]):
        out = run(server, "vipu", *args, env=as_(bob))
        assert out.returncode == 6 and "belongs to alice" in out.stderr, (args, out.stderr)
    out = run(server, "vipu", "remove", "partition", "mine", env=as_(bob))
    assert out.returncode == 3 and "partition 'mine' does not exist" in out.stderr  # bob may not see it
    out = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "1m", "--user", "alice", env=as_(bob))
    assert out.returncode == 6 and "cannot submit jobs as alice" in out.stderr
    out = run(server, "vipu-admin", "list", "users", env=as_(bob))
    assert out.returncode == 6 and "not an admin" in out.stderr

    [mine] = json.loads(run(server, "vipu", "queue", "--json", env=as_(alice)).stdout)["jobs"]
    assert mine["user_name"] == "alice"
    everyone = json.loads(run(server, "vipu", "queue", "--json", env=as_(admin_key)).stdout)["jobs"]
    assert [j["user_name"] for j in everyone] == ["alice"]
    config = tmp_path / "vipu-cli.hcl"  # V-IPU's config-file form
    config.write_text(f'api-host = "127.0.0.1"\napi-port = {server.port}\napi-access-key = "{alice}"\n')
    env = as_(None)
    env.pop("VIPU_CLI_API_PORT")
    env["VIPU_CLI_CONFIG"] = str(config)
    refused = run(server, "vipu", "cancel", str(job), env=env)  # a key others may read, as ssh refuses one
    assert refused.returncode == 2 and f"others may read it (mode 0644); make it yours alone: chmod 600 {config}" \
        in refused.stderr
    config.chmod(0o600)
    assert run(server, "vipu", "cancel", str(job), env=env).returncode == 0


def test_tls_with_a_certificate_pair(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    proc = subprocess.Popen([console_script("vipu-server"), "--port", "0", "--metrics-port", "-1", "--ray", "off",
                             "--state-dir",
                             str(tmp_path / "s"), "--tls-cert", str(cert), "--tls-key", str(key)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "; TLS" in line
        port = LISTENING.search(line).group(2)
        base = [console_script("vipu"), "--api-host", "localhost", "--api-port", port, "--timeout", "3"]
        ok = subprocess.run([*base, "--tls-ca", str(cert), "--server-version"], capture_output=True, text=True, timeout=30)
        assert ok.returncode == 0 and "version:" in ok.stdout, ok.stderr
        plain = subprocess.run([*base, "--server-version"], capture_output=True, text=True, timeout=30)
        assert plain.returncode == 5
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stdout.close()
        proc.stderr.close()


def test_an_allocation_that_names_users_is_theirs_and_a_removed_user_is_locked_out(secure, tmp_path):
    server, as_, admin_key, new_user = secure
    alice, bob = new_user("alice"), new_user("bob")
    granted = run(server, "vipu-admin", "create", "allocation", "teamA", "--agents", "ag12,ag13", "--users", "alice",
                  env=as_(admin_key))
    assert granted.returncode == 0, granted.stderr
    carol = new_user("carol")
    granted = run(server, "vipu-admin", "create", "allocation", "teamC", "--agents", "ag14", "--users", "alice,carol",
                  env=as_(admin_key))
    assert granted.returncode == 0, granted.stderr
    refusal = "allocation teamA is granted to alice, not bob; use your own allocation"
    for args in (["create", "partition", "bt", "--size", "4", "--allocation", "teamA"],
                 ["submit", "--ipus", "4", "--time-limit", "1m", "--allocation", "teamA"]):
        out = run(server, "vipu", *args, env=as_(bob))
        assert out.returncode == 6 and refusal in out.stderr, (args, out.stderr)
    assert json.loads(run(server, "vipu", "queue", "--json", env=as_(admin_key)).stdout)["jobs"] == []
    assert run(server, "vipu", "create", "partition", "at", "--size", "4", "--allocation", "teamA",
               env=as_(alice)).returncode == 0
    assert run(server, "vipu", "create", "partition", "ct", "--size", "4", "--allocation", "teamC",
               env=as_(alice)).returncode == 0
    seen = {x["name"] for x in json.loads(run(server, "vipu", "list", "partitions", "--json", env=as_(carol)).stdout)}
    assert seen == {"ct"}  # a user sees the partitions of the allocations granted to them (V-IPU), not others'
    assert run(server, "vipu", "get", "partition", "ct", env=as_(carol)).returncode == 0
    named = {i["partition"] for i in json.loads(run(server, "vipu", "list", "ipus", "--json", env=as_(carol)).stdout)
             if i.get("partition")}
    assert named == {"ct"}  # IPUs of partitions carol may not see are allocated, without a name
    spec = tmp_path / "out.yaml"
    spec.write_text("ipus: 1\ntime_limit: 1m\noutput: /tmp/anything-%j.out\n")
    out = run(server, "vipu", "submit", str(spec), env=as_(alice))
    assert out.returncode == 6 and "a --secure controller writes no files for its users" in out.stderr

    assert run(server, "vipu-admin", "remove", "user", "bob", env=as_(admin_key)).returncode == 0
    out = run(server, "vipu", "list", "partitions", env=as_(bob))
    assert out.returncode == 6 and "access key is not known" in out.stderr
    out = run(server, "vipu-admin", "remove", "user", "admin", env=as_(admin_key))
    assert out.returncode == 4 and "user admin is the last admin" in out.stderr


def test_a_partition_the_caller_may_not_see_is_not_found_as_if_it_did_not_exist(secure):
    """Regression: carol's `get partition bobp` answered "belongs to bob" (rc 6) and her create of the name "already
    exists; `vipu remove partition bobp` first": a --secure controller told her whose it was and that it existed."""
    server, as_, admin_key, new_user = secure
    bob, carol = new_user("bob"), new_user("carol")
    for team, agent, user in (("bobs", "ag14", "bob"), ("carols", "ag15", "carol")):
        granted = run(server, "vipu-admin", "create", "allocation", team, "--agents", agent, "--users", user,
                      env=as_(admin_key))
        assert granted.returncode == 0, granted.stderr
    assert run(server, "vipu", "create", "partition", "bobp", "--size", "2", "--allocation", "bobs",
               env=as_(bob)).returncode == 0
    for verb in (["get"], ["remove"], ["remove", "--force"], ["reset"]):
        hidden = run(server, "vipu", *verb[:1], "partition", "bobp", *verb[1:], env=as_(carol))
        ghost = run(server, "vipu", *verb[:1], "partition", "ghost", *verb[1:], env=as_(carol))
        assert hidden.returncode == ghost.returncode == 3, (verb, hidden.stderr)
        assert hidden.stderr == ghost.stderr.replace("'ghost'", "'bobp'"), verb  # word for word
        assert "bob" not in hidden.stderr.replace("'bobp'", "")
    taken = run(server, "vipu", "create", "partition", "bobp", "--size", "2", "--allocation", "carols", env=as_(carol))
    assert taken.returncode == 4, taken.stderr  # names are the controller's: the name cannot be hers too
    assert "partition name 'bobp' is taken" in taken.stderr and "choose another name" in taken.stderr
    assert "bob" not in taken.stderr.replace("'bobp'", "") and "vipu remove" not in taken.stderr
    mine = run(server, "vipu", "create", "partition", "bobp", "--size", "2", "--allocation", "bobs", env=as_(bob))
    assert mine.returncode == 4 and "vipu remove partition bobp" in mine.stderr  # its owner is told how to free it
    assert run(server, "vipu", "get", "partition", "bobp", env=as_(admin_key)).returncode == 0
    assert run(server, "vipu", "get", "partition", "bobp", env=as_(bob)).returncode == 0


def test_a_partition_seen_through_an_allocation_is_shown_but_not_changed(secure):
    """A user granted an allocation sees its partitions (V-IPU) but changes only their own: denied, not hidden."""
    server, as_, admin_key, new_user = secure
    alice, carol = new_user("alice"), new_user("carol")
    granted = run(server, "vipu-admin", "create", "allocation", "team", "--agents", "ag14,ag15", "--users",
                  "alice,carol", env=as_(admin_key))
    assert granted.returncode == 0, granted.stderr
    assert run(server, "vipu", "create", "partition", "ap", "--size", "4", "--allocation", "team",
               env=as_(alice)).returncode == 0
    assert run(server, "vipu", "get", "partition", "ap", env=as_(carol)).returncode == 0
    for verb in ("remove", "reset"):
        out = run(server, "vipu", verb, "partition", "ap", env=as_(carol))
        assert out.returncode == 6 and "partition ap belongs to alice, not carol" in out.stderr, (verb, out.stderr)


def test_only_an_admin_may_give_a_negative_nice(secure):
    """As in Slurm: any user may lower a job's priority (nice > 0); raising it over everyone's takes an admin."""
    server, as_, admin_key, new_user = secure
    alice = new_user("alice")
    out = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "1m", "--hold", "--nice", "-100", env=as_(alice))
    assert out.returncode == 6 and "nice is -100: only an admin may give a negative nice" in out.stderr
    assert json.loads(run(server, "vipu", "queue", "--json", env=as_(admin_key)).stdout)["jobs"] == []  # nothing stored
    for key, nice in ((alice, "100"), (admin_key, "-100")):
        out = run(server, "vipu", "submit", "--ipus", "1", "--time-limit", "1m", "--hold", "--nice", nice, env=as_(key))
        assert out.returncode == 0, out.stderr


def test_updates_follow_slurms_rules_for_who_may_change_what(secure):
    """A user updates only their own jobs; a running job's time limit its owner may lower and only an admin raise;
    Priority is an admin's."""
    server, as_, admin_key, new_user = secure
    alice, bob = new_user("alice"), new_user("bob")
    out = run(server, "vipu", "submit", "--ipus", "4", "--time", "10", "--json", env=as_(alice))
    [job] = json.loads(out.stdout)["job_ids"]
    deadline = time.monotonic() + 20
    while json.loads(run(server, "vipu", "show", "job", str(job), "--json", env=as_(alice)).stdout)["state"] \
            != "RUNNING":
        assert time.monotonic() < deadline

    def update(key, *fields):
        return run(server, "vipu", "update", "job", str(job), *fields, env=as_(key))

    out = update(bob, "TimeLimit=5")
    assert out.returncode == 6 and "belongs to alice" in out.stderr
    out = update(alice, "TimeLimit=20")
    assert out.returncode == 6 and "only an admin may raise a running job's time limit" in out.stderr
    assert update(alice, "TimeLimit=5").returncode == 0
    assert update(admin_key, "TimeLimit=30").returncode == 0
    out = run(server, "vipu", "submit", "--ipus", "4", "--time", "5", "--hold", "--json", env=as_(alice))
    [held] = json.loads(out.stdout)["job_ids"]
    out = run(server, "vipu", "update", "job", str(held), "Priority=10", env=as_(alice))
    assert out.returncode == 6 and "Priority: only an admin may set a job's priority" in out.stderr
    assert run(server, "vipu", "update", "job", str(held), "Priority=10", env=as_(admin_key)).returncode == 0
    shown = json.loads(run(server, "vipu", "show", "job", str(job), "--json", env=as_(alice)).stdout)
    assert shown["time_limit_s"] == 1800


def test_cancel_filters_choose_among_the_callers_own_jobs(secure):
    server, as_, _, new_user = secure
    alice, bob = new_user("alice"), new_user("bob")
    ids = {}
    for name, key in (("alice", alice), ("bob", bob)):
        out = run(server, "vipu", "submit", "--ipus", "4", "--time", "5", "--hold", "--json", env=as_(key))
        [ids[name]] = json.loads(out.stdout)["job_ids"]
    out = run(server, "vipu", "cancel", "-u", "alice", env=as_(bob))
    assert out.returncode == 6 and "user bob cannot cancel the jobs of alice" in out.stderr
    out = run(server, "vipu", "cancel", "-s", "USR1", str(ids["alice"]), env=as_(bob))
    assert out.returncode == 6 and "belongs to alice" in out.stderr
    out = run(server, "vipu", "cancel", "-t", "PD", env=as_(bob))  # without ids: only what bob may see
    assert (out.returncode, out.stdout) == (0, f"Job {ids['bob']} cancelled: CANCELLED\n"), out.stderr
    mine = json.loads(run(server, "vipu", "queue", "--json", env=as_(alice)).stdout)["jobs"]
    assert [(x["job_id"], x["job_state"]) for x in mine] == [(ids["alice"], ["PENDING"])]


def test_a_removed_admins_key_file_goes_at_the_next_start(secure):
    """The denial's hint names admin.key: once its user is removed the file would point at a dead key."""
    server, as_, admin_key, _ = secure
    other = json.loads(run(server, "vipu-admin", "create", "user", "root2", "--admin", "--json",
                           env=as_(admin_key)).stdout)["access_key"]
    assert run(server, "vipu-admin", "remove", "user", "admin", env=as_(other)).returncode == 0
    server.restart()
    assert not (server.state_dir / "admin.key").exists()
    assert run(server, "vipu", "queue", env=as_(other)).returncode == 0
    assert run(server, "vipu", "queue", env=as_(admin_key)).returncode == 6
    server.restart()  # a secure start with an admin writes no new key
    assert not (server.state_dir / "admin.key").exists()


def test_metrics_under_secure_need_an_admins_key(secure, server_factory):
    """They name every user's partitions and jobs: no key or a wrong one gets 401, a user's key 403, an admin's
    key the metrics; --metrics-open serves them to anyone."""
    import urllib.error
    import urllib.request

    server, as_, admin_key, new_user = secure
    alice = new_user("alice")

    def scrape(url: str, key: str | None) -> int:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as reply:
                assert b"vipu_ipus" in reply.read()
                return reply.status
        except urllib.error.HTTPError as e:
            assert e.code == 403 or e.headers["WWW-Authenticate"].startswith("Bearer")  # 401 says how to log in
            return e.code

    assert [scrape(server.metrics_url, key) for key in (None, "not-a-key", alice, admin_key)] == [401, 401, 403, 200]
    open_one = server_factory(extra=["--secure", "--metrics-open"])
    assert scrape(open_one.metrics_url, None) == 200


def test_me_is_the_keys_owner_not_the_clis_own_user(secure):
    """Regression: `vipu queue --me` filtered by the CLI's local user (the OS login), so alice's key listed nothing
    with --me, while `vipu cancel --me` (decided by the controller) found her jobs."""
    server, as_, admin_key, new_user = secure
    alice = new_user("alice")
    submitted = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable", env=as_(alice))
    job = int(submitted.stdout)

    def listed(key: str, *args: str) -> list[int]:
        out = run(server, "vipu", "queue", "--json", *args, env=as_(key))
        assert out.returncode == 0, out.stderr
        return [x["job_id"] for x in json.loads(out.stdout)["jobs"]]

    assert listed(alice, "--me") == [job] == listed(alice)
    assert listed(admin_key) == [job] and listed(admin_key, "--me") == []  # the admin sees all, and owns none


def test_history_says_which_uid_cancelled_a_job_under_secure(secure):
    """sacct's "CANCELLED by UID": under --secure the uid of the Unix account an admin mapped to the canceller; one
    with none mapped (bob, the admin) has no uid, and sacct shows such a cancel as plain CANCELLED."""
    server, as_, admin_key, new_user = secure
    carol, bob = new_user("carol"), new_user("bob")
    out = run(server, "vipu-admin", "update", "user", "carol", "--unix-user", "nobody", env=as_(admin_key))
    assert out.returncode == 0, out.stderr
    ids = {}
    for name, key in (("carol", carol), ("bob", bob)):
        out = run(server, "vipu", "submit", "--ipus", "1", "--time", "5", "--hold", "--json", env=as_(key))
        [ids[name]] = json.loads(out.stdout)["job_ids"]
    assert run(server, "vipu", "cancel", str(ids["carol"]), env=as_(carol)).returncode == 0
    assert run(server, "vipu", "cancel", str(ids["bob"]), env=as_(admin_key)).returncode == 0
    out = run(server, "vipu", "history", "-P", "-n", "-o", "JobID,User,State", env=as_(admin_key))
    assert out.stdout.splitlines() == [f"{ids['carol']}|carol|CANCELLED by {pwd.getpwnam('nobody').pw_uid}",
                                       f"{ids['bob']}|bob|CANCELLED"], out.stderr


def test_a_partition_by_hand_needs_an_allocation_granted_to_its_user(secure):
    """F4 (walk 44): `default` names no user, and was open to all, so any user held the whole Pod with a partition,
    outside any job (no time limit, no fair-share charge). Under --secure it serves jobs and admins only."""
    server, as_, admin_key, new_user = secure
    bob, carol = new_user("bob"), new_user("carol")
    for args in (["--size", "64"], ["--size", "4", "--allocation", "default"]):
        out = run(server, "vipu", "create", "partition", "hog", *args, env=as_(bob))
        assert out.returncode == 6, out.stderr
        assert "allocation default is granted to no user, so under --secure it serves jobs and admins only" \
            in out.stderr
        assert "`vipu-admin create allocation NAME --agents AGENTS --users bob`" in out.stderr
    open_team = run(server, "vipu-admin", "create", "allocation", "open", "--agents", "ag12", env=as_(admin_key))
    assert open_team.returncode == 0, open_team.stderr
    out = run(server, "vipu", "create", "partition", "p", "--size", "4", "--allocation", "open", env=as_(bob))
    assert out.returncode == 6 and "allocation open is granted to no user" in out.stderr
    assert "`vipu-admin remove allocation open` then `vipu-admin create allocation open --agents ag12 --users bob`" \
        in out.stderr
    assert json.loads(run(server, "vipu", "list", "partitions", "--json", env=as_(admin_key)).stdout) == []

    granted = run(server, "vipu-admin", "create", "allocation", "bobs", "--agents", "ag14,ag15", "--users", "bob",
                  env=as_(admin_key))
    assert granted.returncode == 0, granted.stderr
    made = run(server, "vipu", "create", "partition", "bp", "--size", "8", "--allocation", "bobs", "--json",
               env=as_(bob))
    assert made.returncode == 0, made.stderr
    assert (json.loads(made.stdout)["owner"], json.loads(made.stdout)["allocation"]) == ("bob", "bobs")
    out = run(server, "vipu", "create", "partition", "cp", "--size", "4", "--allocation", "bobs", env=as_(carol))
    assert out.returncode == 6 and "allocation bobs is granted to bob, not carol" in out.stderr
    assert run(server, "vipu", "create", "partition", "ap", "--size", "16", env=as_(admin_key)).returncode == 0

    # jobs are unaffected: a user's job in `default` (and in an allocation granted to no one) gets its partition
    for allocation in ("default", "open"):
        out = run(server, "vipu", "submit", "--ipus", "4", "--time-limit", "1m", "-p", allocation, "--json",
                  env=as_(carol))
        assert out.returncode == 0, out.stderr
        [job] = json.loads(out.stdout)["job_ids"]
        wait_for(lambda: json.loads(run(server, "vipu", "show", "job", str(job), "--json",
                                        env=as_(carol)).stdout)["state"] == "RUNNING")
    mine = {x["name"] for x in json.loads(run(server, "vipu", "list", "partitions", "--json", env=as_(carol)).stdout)}
    assert len(mine) == 2 and all(name.startswith("slurm_") for name in mine)
