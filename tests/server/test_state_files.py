"""The state folder is the controller's own: 0700, its files 0600, no symlink followed, no planted key used, and a
state once served with --secure not served to everyone by a start without it (issue 23, findings 1, 2, 4 and 5)."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess

import pytest

from tests.cli.test_cli_e2e import run
from tests.conftest import ServerProcess
from tests.server.test_startup import start
from vipu.scheduler.arrays import spans
from vipu.store_schema import SCHEMA_VERSION


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_fresh_secure_state_is_private(server_factory, tmp_path):
    server = server_factory(state_dir=tmp_path / "state", extra=["--secure"])
    key = (tmp_path / "state" / "admin.key").read_text().strip()
    env = {**server.env(), "VIPU_CLI_API_ACCESS_KEY": key}
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", env=env).returncode == 0
    assert mode(tmp_path / "state") == 0o700
    files = sorted(p.name for p in (tmp_path / "state").iterdir())
    assert {"admin.key", "controller.lock", "vipu.sqlite3", "vipu.sqlite3-wal"} <= set(files)
    assert {p: mode(tmp_path / "state" / p) for p in files} == {p: 0o600 for p in files}


def test_a_planted_admin_key_is_refused_and_receives_nothing(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    planted = state / "admin.key"
    planted.write_text("")
    planted.chmod(0o666)  # made in advance by another local user, hoping for the key
    out = start("--secure", "--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (f"vipu-server: error: {planted} has mode 0666, which lets other users read or write"
                                  " it; remove it (the controller makes its own, mode 0600)")
    assert planted.read_text() == ""
    assert sorted(p.name for p in state.iterdir()) == ["admin.key"]  # regression: a database and the lock too


def test_a_refused_admin_key_leaves_an_existing_state_as_it_was(server_factory, tmp_path):
    """Regression: a start refused over a 0644 admin.key had marked the state as served with --secure, so the next
    plain start was refused for a --secure it never had."""
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    server.kill(signal.SIGTERM)  # a clean stop: no -wal file left
    before = sorted(p.name for p in state.iterdir())
    (state / "admin.key").write_text("")
    (state / "admin.key").chmod(0o644)
    out = start("--secure", "--port", "0", "--state-dir", str(state))
    assert out.returncode == 2 and "has mode 0644" in out.stderr, out.stderr
    assert sorted(p.name for p in state.iterdir()) == sorted([*before, "admin.key"])
    (state / "admin.key").unlink()
    assert server.start().proc.poll() is None  # not "was served with --secure"


@pytest.mark.parametrize("secure", [["--secure"], []])
def test_a_folder_holding_only_an_admin_key_is_refused_and_nothing_made_in_it(tmp_path, secure):
    """Regression: a folder holding only an admin.key (its database gone or moved) started empty without --secure;
    with it, the refused start made a new database, its -wal, state.id and vipu.generation beside the key."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    key = state / "admin.key"
    key.write_text("the-old-admins-key\n")
    key.chmod(0o600)
    out = start(*secure, "--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"vipu-server: error: the state database {state / 'vipu.sqlite3'} is missing, but this folder held a"
        " controller's state (it holds admin.key): restore the database (with its -wal file) from a backup, or start"
        " with --accept-empty-state to begin afresh (the queue is then gone and job ids start again)")
    assert key.read_text() == "the-old-admins-key\n"
    assert sorted(p.name for p in state.iterdir()) == ["admin.key"]  # regression: and controller.lock


def test_an_emptied_database_beside_its_admin_key_is_named_not_the_key(server_factory, tmp_path):
    """Regression: a served --secure state whose database was emptied was refused as holding "another state's admin
    key", pointing at the key; the database is what is wrong, and the key only came with it."""
    state = tmp_path / "state"
    server_factory(state_dir=state, extra=["--secure"]).kill(signal.SIGTERM)
    (state / "vipu.sqlite3").write_bytes(b"")
    (state / "vipu.sqlite3-wal").unlink(missing_ok=True)
    out = start("--secure", "--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().startswith(f"vipu-server: error: the state database {state / 'vipu.sqlite3'} is empty, but"
                                         " this folder held a controller's state (it holds "), out.stderr
    assert "admin.key" in out.stderr and "--accept-empty-state" in out.stderr


def test_a_start_refused_over_its_flags_makes_no_state_folder(tmp_path):
    """Regression: the folder, its controller.lock and an empty vipu.sqlite3 were made before --pod and
    --scheduler-config were read; the empty database then looked like a state at the next start."""
    state, config = tmp_path / "state", tmp_path / "bad.yaml"
    config.write_text("min_job_age: -1\n")
    for flags in (["--pod", "nowhere"], ["--scheduler-config", str(config)]):
        out = start(*flags, "--port", "0", "--state-dir", str(state))
        assert out.returncode == 2 and flags[1] in out.stderr, out.stderr
        assert not state.exists(), flags


def test_a_withdrawn_claim_leaves_nothing_and_a_held_one_is_not_taken(tmp_path):
    from vipu.errors import FailedPrecondition
    from vipu.server.state_dir import claim, withdraw

    state = tmp_path / "state"
    held = claim(state)
    with pytest.raises(FailedPrecondition, match=f"is in use by another vipu-server \\(pid {os.getpid()}\\)"):
        claim(state)
    assert sorted(p.name for p in state.iterdir()) == ["controller.lock"]  # the refused claim removed nothing
    withdraw(held)
    assert not state.exists()  # the folder and the lock it made
    state.mkdir()
    (state / "controller.lock").write_text("")
    withdraw(claim(state))
    assert sorted(p.name for p in state.iterdir()) == ["controller.lock"]  # what was there stays


@pytest.mark.parametrize("error, cause, fix", [
    (errno.EROFS, "the file system is read-only", "remount it read-write"),
    (errno.EACCES, "this user may not write it", "give this user write access to the folder and its files"),
])
def test_a_state_folder_the_disk_will_not_write_is_unavailable_and_kept(tmp_path, monkeypatch, error, cause, fix):
    """Regression: a read-only state volume (mount -o remount,ro) was bad input (exit 2, which systemd does not
    restart), "give a folder this user can create and write", and following that left the queue behind. The
    error is injected where claim() opens the lock file: remounting needs a mount a test cannot rely on."""
    from vipu.errors import InvalidArgument, Unavailable
    from vipu.server import state_dir

    def refused(path, flags, **_):
        raise OSError(error, os.strerror(error), str(path))

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "vipu.sqlite3").write_bytes(b"")
    monkeypatch.setattr(state_dir, "open_private", refused)
    with pytest.raises(Unavailable) as unwritable:  # vipu-server: exit 5
        state_dir.claim(state)
    said = unwritable.value.message
    assert said.startswith(f"the state folder {state} cannot be written ({os.strerror(error)}): {cause}; its records"
                           f" are kept: {fix}") and said.endswith(" and start again"), said
    assert "another --state-dir" not in said
    with pytest.raises(InvalidArgument, match="cannot be used .*; give a folder this user can create and write"):
        state_dir.claim(tmp_path / "new")  # a folder it would make: the flag is to blame, another will do
    assert not (tmp_path / "new").exists()


def test_another_states_admin_key_is_not_replaced_by_a_new_one(tmp_path):
    """Regression: a --secure start on a state without users (begun afresh) overwrote the key with a new admin's."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    key = state / "admin.key"
    key.write_text("the-old-admins-key\n")
    key.chmod(0o600)
    out = start("--secure", "--accept-empty-state", "--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (f"vipu-server: error: {key} holds a key, but the state in {state} has no users: it"
                                  " is another state's admin key (or this state's database was replaced); start on the"
                                  " state it came from, or move the file away for a new admin")
    assert key.read_text() == "the-old-admins-key\n"
    assert sorted(p.name for p in state.iterdir()) == ["admin.key"]  # regression: a database and the lock too


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path):
    state, target = tmp_path / "state", tmp_path / "precious"
    state.mkdir()
    target.write_text("keep me\n")
    (state / "controller.lock").symlink_to(target)
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2 and f"{state / 'controller.lock'} is a symlink" in out.stderr, out.stderr
    assert target.read_text() == "keep me\n"


def test_a_symlinked_generation_marker_is_refused_not_removed(server_factory, tmp_path):
    """Regression: the marker is replaced by a rename, which dropped the link without a word."""
    state, target = tmp_path / "state", tmp_path / "precious"
    server = server_factory(state_dir=state)
    server.kill()  # leaves the marker
    target.write_text((state / "vipu.generation").read_text())
    (state / "vipu.generation").unlink()
    (state / "vipu.generation").symlink_to(target)
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (f"vipu-server: error: {state / 'vipu.generation'} is a symlink; the controller writes"
                                  " only its own files: remove it")
    assert (state / "vipu.generation").is_symlink()


def test_an_earlier_versions_readable_files_are_made_private(server_factory, tmp_path):
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    server.kill()
    (state / "state.id").unlink()  # versions before this one wrote none
    for p in state.iterdir():
        p.chmod(0o644)  # as they left them
    state.chmod(0o755)
    server.start()
    assert mode(state) == 0o700 and {mode(p) for p in state.iterdir()} == {0o600}
    assert (state / "state.id").exists()


def test_a_secured_state_is_not_served_to_everyone_without_secure(server_factory, tmp_path):
    state = tmp_path / "state"
    server = server_factory(state_dir=state, extra=["--secure"])
    server.kill()
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"vipu-server: error: state folder {state} was served with --secure: without it anyone could act as any of"
        " its users, admins included; start with --secure, or, if every local user may act as any user, with"
        " --insecure-ignore-access-keys"
    )
    server.extra = ["--insecure-ignore-access-keys"]
    assert server.start().proc.poll() is None  # the operator said so
    [warning] = [line for line in server.stderr_text().splitlines() if "--insecure-ignore-access-keys: " in line]
    assert f"state folder {state} has 1 user(s) (admin); every caller may now act as any of them" in warning  # regression


def test_users_made_without_secure_are_not_trusted_by_a_later_secure_start(server_factory, tmp_path):
    """Regression: any caller of an open controller made itself an admin, and the next --secure start served that
    user's key as the only admin's, creating none for the operator."""
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    made = run(server, "vipu-admin", "create", "user", "evil", "--admin")
    assert made.returncode == 0, made.stderr
    server.kill()
    out = start("--port", "0", "--state-dir", str(state), "--secure")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"vipu-server: error: state folder {state} was served without --secure since its users (evil) were made,"
        " when any caller could create or change users, admins included: check them (start with"
        " --insecure-ignore-access-keys instead of --secure and run `vipu-admin list users`, removing any you did not"
        " make), then start with --secure --trust-users")
    server.extra = ["--insecure-ignore-access-keys"]  # the check the message names, as it names it
    server.start()
    assert "evil" in run(server, "vipu-admin", "list", "users").stdout
    server.kill()
    server.extra = ["--secure", "--trust-users"]
    assert server.start().proc.poll() is None  # the operator checked them
    server.extra = ["--secure"]
    assert server.restart().proc.poll() is None  # trusted once: not asked again while served securely


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder to another user")
def test_a_state_folder_of_another_user_is_refused(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    os.chown(state, 65534, 65534)  # nobody
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2 and "belongs to uid 65534" in out.stderr, out.stderr
    assert list(state.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the database to another user")
def test_a_database_of_another_user_is_refused_with_a_fix_that_keeps_it(server_factory, tmp_path):
    """Regression (walk45): the fix offered was "remove it", for the database that holds the queue (a restore done
    as another user leaves it so); giving it back keeps every job."""
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold").returncode == 0
    server.kill(signal.SIGTERM)
    database = state / "vipu.sqlite3"
    os.chown(database, 65534, 65534)
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (f"vipu-server: error: {database} belongs to uid 65534, not to this user (0); if it"
                                  " is this state's own (restored or copied as another user), give it back with"
                                  f" `chown 0 {database}`; if not, move it out of the state folder")
    os.chown(database, 0, -1)  # what the line says
    server.start()
    assert run(server, "vipu", "queue", "--noheader", "-o", "%i").stdout.split() == ["1"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a link of another user's")
def test_a_state_folder_link_planted_by_another_user_is_refused(tmp_path):
    """Regression: a link of nobody's to a folder of root's was followed, and the folder made 0700 for the state."""
    target = tmp_path / "victim"
    target.mkdir(mode=0o755)
    link = tmp_path / "state"
    link.symlink_to(target)
    os.chown(link, 65534, 65534, follow_symlinks=False)
    out = start("--port", "0", "--state-dir", str(link))
    assert out.returncode == 2 and "is a symbolic link of uid 65534's" in out.stderr, out.stderr
    assert list(target.iterdir()) == [] and stat.S_IMODE(target.stat().st_mode) == 0o755


def damage(state, sql: str, *args) -> None:
    with sqlite3.connect(state / "vipu.sqlite3") as db:
        db.execute(sql, args)


@pytest.fixture(scope="module")
def two_held_jobs(tmp_path_factory):
    """A state folder of a controller killed holding two held jobs, and their ids: each test damages a copy."""
    state = tmp_path_factory.mktemp("held") / "state"
    server = ServerProcess(state_dir=state).start()
    ids = [run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip() for _ in range(2)]
    server.kill()
    server.proc.stdout.close()
    return state, ids


@pytest.mark.parametrize("doc,stored", [("{not json", "?"), ('{"id": 1, "state": "EXPLODED"}', "?"),
                                        (b"\x00\xff\x13 random bytes", "?"),
                                        (b"\x00\xff\x13 random bytes", "CAST(? AS TEXT)")])  # as random bytes on a page
def test_a_damaged_record_stops_the_start_naming_it_and_quarantine_keeps_it(server_factory, tmp_path, two_held_jobs,
                                                                           doc, stored):
    intact, ids = two_held_jobs
    state = tmp_path / "state"
    shutil.copytree(intact, state)
    damage(state, f"UPDATE records SET doc = {stored} WHERE kind = 'job' AND name = ?", doc, ids[1])
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith(f"vipu-server: error: the state database {state / 'vipu.sqlite3'} has 1 record(s) it"
                           f" cannot serve: job {ids[1]}: ")
    assert line.endswith("start once with --quarantine-bad-records to move them into its quarantine table (kept for"
                         " inspection) and go on without them")
    server = server_factory(state_dir=state, extra=["--quarantine-bad-records"])
    queue = run(server, "vipu", "queue", "--no-header").stdout
    assert [line.split()[0] for line in queue.splitlines()] == [ids[0]]  # the other job is kept
    with sqlite3.connect(state / "vipu.sqlite3") as db:
        assert db.execute("SELECT kind, name, CAST(doc AS BLOB) FROM quarantine").fetchall() == [
            ("job", ids[1], doc if isinstance(doc, bytes) else doc.encode())]
    shown = run(server, "vipu", "show", "job", ids[1])  # regression: it was said to have left (min_job_age)
    assert shown.returncode != 0 and f"job {ids[1]}'s stored record did not load and was moved aside at a start with" \
        f" --quarantine-bad-records: `sqlite3 {state / 'vipu.sqlite3'} \"SELECT kind, error, doc FROM quarantine" \
        f" WHERE name = '{ids[1]}'\"` shows it, and the log of that start why" in shown.stderr, shown.stderr
    # the quarantined job's id is not given again
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip() == str(int(ids[1]) + 1)


@pytest.fixture(scope="module")
def many_held_jobs(tmp_path_factory):
    """A state folder of a controller stopped holding 150 held jobs (records over many pages), and their ids. Stopped
    cleanly: the tests checkpoint a copy themselves, which after a kill -9 is a lost log (store_generation.py)."""
    folder = tmp_path_factory.mktemp("many")
    server = ServerProcess(state_dir=folder / "state").start()
    specs = []
    for i in range(150):
        specs.append(folder / f"{i}.yaml")
        specs[-1].write_text('{"name": "load", "ipus": 1, "time_limit": "10m", "hold": true}')
    submitted = run(server, "vipu", "submit", "--parsable", *map(str, specs))
    server.kill(signal.SIGTERM)
    server.proc.stdout.close()
    ids = submitted.stdout.split()
    assert len(ids) == 150, submitted.stderr
    return folder / "state", ids


@pytest.mark.parametrize("lost", ["jobs", "scheduler_meta"])
def test_the_command_a_damaged_database_refusal_names_recovers_it_here(server_factory, tmp_path, many_held_jobs,
                                                                       lost):
    """Regression: the refusal named `sqlite3 ... .recover`, which fails with Debian's sqlite3 3.40 (no dbpage
    table), even on a sound database. Then: the .dump it names dropped user_version, and the copy of a database
    whose damaged page held the next job id (scheduler_meta) was served without a word, job ids starting again."""
    intact, ids = many_held_jobs
    state = tmp_path / "state"
    shutil.copytree(intact, state)
    path = state / "vipu.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        leaves = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'")]
    pages = {p: path.read_bytes()[(p - 1) * 4096:p * 4096] for p in leaves}
    if lost == "jobs":  # a page of jobs only
        page = max(p for p, b in pages.items() if b"next_job_id" not in b and b"agentag" not in b)
    else:
        [page] = [p for p, b in pages.items() if b"next_job_id" in b]
    with open(path, "r+b") as f:  # random bytes over it
        f.seek((page - 1) * 4096)
        f.write(b"\xff" * 8 + os.urandom(3000))  # no page type: its reads fail, always
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert "cannot be read (database disk image is malformed); restore it from a backup, or copy" in line, line
    [command] = re.findall(r"`([^`]*)`", line)
    assert command == (f"sqlite3 {path} .dump | sed 's/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3"
                       f" {path}.recovered && sqlite3 {path}.recovered 'PRAGMA user_version = {SCHEMA_VERSION}'")
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    path.rename(state / "damaged")  # as the message says: the damaged file and its side files aside
    for side in state.glob("vipu.sqlite3-*"):
        side.unlink()
    (state / "vipu.sqlite3.recovered").rename(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    if lost == "scheduler_meta":
        out = start("--port", "0", "--state-dir", str(state))
        assert out.returncode == 2, out.stderr
        [line] = out.stderr.strip().splitlines()
        assert line.startswith(f"vipu-server: error: the state database {path} held a controller's state (its meta"
                               " table names its Pod), but its records lack the next job id (scheduler_meta): they"
                               " were lost"), line
        assert "start with --accept-empty-state to serve what is left (" in line and "gone for good" in line, line
    server = server_factory(state_dir=state, extra=["--accept-empty-state"] if lost == "scheduler_meta" else [])
    queue = run(server, "vipu", "queue", "--no-header").stdout.split("\n")
    kept = [row.split()[0] for row in queue if row.strip()]
    assert 0 < len(kept) < len(ids) and set(kept) <= set(ids)  # the readable jobs; those on the damaged page lost
    if lost == "jobs":  # regression: the start said nothing of them
        gone = sorted(set(map(int, ids)) - set(map(int, kept)))
        assert (f"{len(gone)} job id(s) below the next one ({int(ids[-1]) + 1}) are in none of the tables of {path}:"
                f" their records were lost") in server.stderr_text() and f"name: {spans(gone)};" in server.stderr_text()
    new = run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip()
    assert int(new) > max(map(int, kept))


def test_a_database_whose_header_sqlite_cannot_read_is_refused_with_a_fix_that_works(server_factory, tmp_path):
    """Regression: the refusal named the .dump pipeline, which exits 0 with an empty copy here (SQLite reads
    nothing past a bad header), and that copy moved into place was then refused as an emptied database."""
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    server.kill(signal.SIGTERM)
    path = state / "vipu.sqlite3"
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert line == (f"vipu-server: error: the state database {path} cannot be read (file is not a database): SQLite"
                    " cannot read its header, so no copy can get anything out of it; restore it (with its -wal file)"
                    " from a backup, or move it aside with its -wal and -shm files and start with"
                    " --accept-empty-state to begin afresh (its queue, job history, users and partitions are then"
                    " gone, and job ids start again at 1)")
    path.rename(state / "unreadable")  # as it says
    server.extra = ["--accept-empty-state"]
    server.start()
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip() == "1"


@pytest.mark.parametrize("loss", ["emptied", "deleted"])
def test_an_emptied_or_deleted_database_is_not_a_fresh_start_without_a_word(server_factory, tmp_path, loss):
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip() == "1"
    server.kill()
    database = state / "vipu.sqlite3"
    for p in state.glob("vipu.sqlite3*"):
        p.unlink()
    if loss == "emptied":
        database.touch(mode=0o600)  # a 0-byte file
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    what = "is empty" if loss == "emptied" else "is missing"  # (it said empty for a missing one too)
    holds = " (it holds state.id, vipu.generation)"  # (an emptied one named none)
    assert out.stderr.strip() == (
        f"vipu-server: error: the state database {database} {what}, but this folder held a controller's state{holds}:"
        " restore the database (with its -wal file) from a backup, or start with --accept-empty-state to begin"
        " afresh (the queue is then gone and job ids start again)"
    )
    if loss == "deleted":
        assert not database.exists()  # the refusal made nothing
    server.extra = ["--accept-empty-state"]
    server.start()
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").stdout.strip() == "1"
    server.extra = []
    server.restart()  # the new state is the folder's now
    assert run(server, "vipu", "queue", "--no-header").stdout.split()[0] == "1"


def test_a_write_ahead_log_deleted_after_kill_9_is_refused_not_served_as_an_older_state(server_factory, tmp_path):
    """Regression: the last commits lived in vipu.sqlite3-wal; without it the controller served an older queue and
    gave job ids out again, without a word."""
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    for _ in range(3):
        run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable")
    server.kill()  # SIGKILL: the database is left open, its changes in the -wal file
    wal = state / "vipu.sqlite3-wal"
    assert wal.exists()
    wal.unlink()
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert line.startswith(f"vipu-server: error: the state database {state / 'vipu.sqlite3'} has lost its write-ahead"
                           f" log: {wal} is missing, but ")
    assert line.endswith("restore the -wal file (from the backup the database came from), or start with"
                         " --accept-lost-log to serve what the database file holds")
    server.extra = ["--accept-lost-log"]
    server.start()  # the operator's choice: what the database file holds
    [warning] = [line for line in server.stderr_text().splitlines() if "--accept-lost-log: " in line]
    assert re.search(r"serving \S+vipu.sqlite3 at generation \d+, though the last controller reached generation \d+"
                     r" and its -wal file is gone or emptied: jobs submitted or changed since its last checkpoint may"
                     r" be lost",
                     warning), warning  # regression: the accepted loss was not logged
    server.extra = []
    server.restart()  # a clean stop closed it: no flag needed any more
    assert run(server, "vipu", "queue", "--no-header").returncode == 0


def test_a_damaged_page_of_the_job_history_stops_the_start_naming_the_table_and_the_fix(server_factory, tmp_path):
    """Regression: the damage went unseen until the first move into the history, which then failed every write."""
    from tests.test_store_history import damage_last_page

    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    server.kill()
    with sqlite3.connect(state / "vipu.sqlite3") as db:  # ended jobs as purge.py leaves them (their docs unread)
        db.executemany("INSERT INTO job_history (id, user, state, ended, doc) VALUES (?, 'u', 'COMPLETED', 0, ?)",
                       [(i, "{}" + " " * 800) for i in range(1, 301)])
    damage_last_page(state / "vipu.sqlite3")
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    assert line.startswith(f"vipu-server: error: the state database {state / 'vipu.sqlite3'} has damaged pages in"
                           " its job history (table job_history: ")
    assert "start once with --quarantine-bad-records to rebuild the database with the history's readable rows" in line
    server.extra = ["--quarantine-bad-records"]
    server.start()
    assert "around damaged pages of its job history: " in server.stderr_text()
    with sqlite3.connect(f"file:{state / 'vipu.sqlite3'}?mode=ro", uri=True) as db:
        kept = {i for (i,) in db.execute("SELECT id FROM job_history")}
        lost = {int(n) for (n,) in db.execute("SELECT name FROM quarantine WHERE kind = 'job_history'")}
    assert lost and kept | lost == set(range(1, 301))
    assert run(server, "vipu", "submit", "--ipus", "1", "--hold", "--parsable").returncode == 0


def test_overlapping_partitions_are_refused_and_quarantine_keeps_the_first(server_factory, tmp_path):
    state = tmp_path / "state"
    server = server_factory(state_dir=state)
    for name in ("first", "second"):
        assert run(server, "vipu", "create", "partition", name, "--size", "4").returncode == 0
    server.kill()
    with sqlite3.connect(state / "vipu.sqlite3") as db:  # the second moved onto the first's IPUs
        doc = json.loads(db.execute("SELECT doc FROM records WHERE name = 'second'").fetchone()[0])
        first = json.loads(db.execute("SELECT doc FROM records WHERE name = 'first'").fetchone()[0])["first_ipu"]
        db.execute("UPDATE records SET doc = ? WHERE name = 'second'", (json.dumps({**doc, "first_ipu": first}),))
    out = start("--port", "0", "--state-dir", str(state))
    assert out.returncode == 2, out.stderr
    assert (f"has 1 record(s) it cannot serve: partition second: holds IPU {first}, which partition first holds too;"
            " start once with --quarantine-bad-records") in out.stderr
    server.extra = ["--quarantine-bad-records"]
    server.start()
    listed = json.loads(run(server, "vipu", "list", "partitions", "--json").stdout)
    assert [x["name"] for x in listed] == ["first"]


def test_a_fifo_or_folder_among_the_state_files_is_refused_at_once(server_factory, tmp_path):
    """Regression: a FIFO there hung the start for ever (opening it waits for a writer, deaf to SIGTERM), or gave
    "cannot be used (None)"; a folder named vipu.sqlite3 was blamed on a full disk (exit 5)."""
    intact = tmp_path / "intact"
    server = server_factory(state_dir=intact, extra=["--secure"])
    server.kill(signal.SIGTERM)
    cases = [(name, os.mkfifo, "a FIFO") for name in ("vipu.sqlite3", "state.id", "vipu.generation", "admin.key",
                                                      "controller.lock")] + [("vipu.sqlite3", os.mkdir, "a folder")]
    for name, make, what in cases:
        state = tmp_path / f"{name}-{what[2:]}"
        shutil.copytree(intact, state)
        if (state / name).exists():
            (state / name).unlink()
        make(state / name, 0o600)
        out = start("--secure", "--port", "0", "--state-dir", str(state))
        assert out.returncode == 2, (name, out.stderr)
        assert out.stderr.strip() == (f"vipu-server: error: {state / name} is {what}, not a file the controller made:"
                                      " move it out of the state folder (the controller makes its own)"), name


@pytest.mark.parametrize("mode_bits, entries", [(0o1777, []), (0o755, ["notes.txt"])])
def test_a_shared_folder_is_not_made_private_for_the_state(tmp_path, mode_bits, entries):
    """Regression: `--state-dir /tmp` made /tmp 0700, locking every other user out of it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    for name in entries:
        (shared / name).write_text("someone's\n")
    shared.chmod(mode_bits)
    out = start("--port", "0", "--state-dir", str(shared))
    assert out.returncode == 2, out.stderr
    assert f"--state-dir {shared} is a folder others may use (mode {mode_bits:04o}" in out.stderr
    assert f"give a folder of its own, e.g. --state-dir {shared / 'vipu-state'}" in out.stderr
    assert stat.S_IMODE(shared.stat().st_mode) == mode_bits and sorted(os.listdir(shared)) == entries
