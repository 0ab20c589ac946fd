"""Opening a state folder: the store, the Pod it belongs to, and the controller and queue rebuilt from its records
(the queue: vipu/control/queue_rebuild.py says which running jobs go on and which end, and when with Ray).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from functools import partial
from pathlib import Path

from vipu.clock import WallClock
from vipu.control.creations import KINDS as CREATION_KINDS, Creations
from vipu.control.ended_jobs import stored_retry
from vipu.control.lifecycle import LifecycleLog
from vipu.control.lost_records import MISSING, kept_records, name_lost_jobs, note_skipped_ids, unreadable
from vipu.control.plane import ControlPlane
from vipu.control.queue_rebuild import cycle_collection_paused, recover_stored
from vipu.control.workloads import RunSettings, WorkloadKind, builtin_kinds
from vipu.errors import InvalidArgument
from vipu.partition.controller import Controller
from vipu.hardware.pod_files import PRESETS, load_pod
from vipu.partition.pod_state import KINDS as PARTITION_KINDS
from vipu.scheduler.config import SchedulerConfig
from vipu.scheduler.job_checks import job_contradictions
from vipu.scheduler.job_record import KINDS as JOB_KINDS
from vipu.scheduler.scheduler import Scheduler
from vipu.partition.stored_checks import contradictions
from vipu.store import WRITE_TIMEOUT_S, Damaged, DamagedRecords, Store
from vipu.store_faults import cannot_write, is_disk_fault
from vipu.store_generation import EmptiedDatabase, Generation, LostLog
from vipu.store_rebuild import LOST, Unrebuildable, rebuild_history
from vipu.store_schema import SCHEMA_VERSION, MissingTables, NewerSchema, UnknownSchema

log = logging.getLogger("vipu.recovery")
DATABASE = "vipu.sqlite3"  # the state folder's database
SECURED = "secured"  # meta key: the state was served with --secure once
OPEN_SINCE = "served_open"  # meta key: served without --secure since its last --secure start (anyone an admin)
STATE_ID = "state_id"  # meta key: the id of this state, also in the folder's marker file
STATE_MARKER = "state.id"  # that marker file, in the state folder
ADMIN_KEY = "admin.key"  # the first --secure start's admin key, in the state folder


def open_plane(pod_name: str, state_dir: Path, api_host: str, api_port: int, config: SchedulerConfig | None = None,
               kinds: dict[str, WorkloadKind] | None = None, kill_wait_s: float = 30.0,
               modelled_time_scale: float = 1.0, quarantine: bool = False, secure: bool = False,
               open_to_all: bool = False, state_id: str | None = None, accept_empty: bool = False,
               accept_lost_log: bool = False, output_dirs: tuple[Path, ...] = (),
               trust_users: bool = False, admin_key: bool = False,
               write_timeout_s: float = WRITE_TIMEOUT_S, recover_later: bool = False) -> ControlPlane:
    """Open (or create) the state folder for `pod_name` and rebuild the controller and the queue from it.
    `quarantine`: move records that do not load into the database's quarantine table instead of refusing to
    start. `secure`: the controller checks access keys; a state once served so is refused without it unless
    `open_to_all`, since anyone could then act as any of its users, and keys made meanwhile would outlive it.
    `state_id`: the id the folder's marker file holds (None: no marker yet). A database without it is empty or
    another state's: refused unless `accept_empty`, since its queue would be lost and job ids given again.
    The plane's `state_id` is the database's, for the caller to keep in the marker. A database whose -wal file was
    lost after a crash is refused unless `accept_lost_log`. A --secure start after one without it is refused while
    users exist, unless `trust_users`: any caller could have made or changed them, admins included. `admin_key`: the
    folder holds an admin key file (checked by the caller), which a --secure state without users refuses.
    `recover_later`: the queue is rebuilt by recover_stored(), once Ray is connected (the caller's)."""
    pod = load_pod(pod_name)
    refuse_missing_database(state_dir, accept_empty or accept_lost_log)
    path = Path(state_dir) / DATABASE
    store, stored = _open_store(path, accept_lost_log, accept_empty)
    store.write_timeout_s = write_timeout_s
    if store.lost_log is not None:
        log.warning("--accept-lost-log: serving %s at generation %d, though the last controller reached generation"
                    " %d and its -wal file is gone or emptied: jobs submitted or changed since its last checkpoint may"
                    " be lost, and their ids given again", path, store.lost_log.held, store.lost_log.marked)
    store = _checked_history(store, path, quarantine, clock_now=WallClock().now)
    held = store.get_meta(STATE_ID)
    if state_id is not None and held != state_id and not (accept_empty or accept_lost_log):
        store.close()
        raise _not_this_state(path, "is empty" if held is None else "holds another state")
    if not secure and store.get_meta(SECURED) and not open_to_all:
        store.close()
        raise InvalidArgument(
            f"state folder {state_dir} was served with --secure: without it anyone could act as any of its users,"
            " admins included; start with --secure, or, if every local user may act as any user, with"
            " --insecure-ignore-access-keys"
        )
    if stored is not None and stored != pod.model_dump(mode="json"):
        store.close()
        raise InvalidArgument(
            f"state folder {state_dir} belongs to pod {stored.get('name')!r} with a different configuration than"
            f" --pod {pod_name}; start with that pod, or give a new --state-dir"
        )
    kinds = kinds if kinds is not None else builtin_kinds()  # before the records: their specs name the kinds
    store.job_kinds = frozenset(r for kind in kinds.values() for r in kind.records)
    clock = WallClock()
    with cycle_collection_paused():  # every stored record becomes objects that last, in no cycle
        records = _load(store, pod, path, quarantine, clock.now(), pod_named=stored is not None)
        if stored is not None:  # a start completed on this database: its records say so
            records = kept_records(store, path, records, accept_empty)
        if stored is None:  # only once the records fit it: a refusal leaves the next start free to give another
            store.set_meta("pod", pod.model_dump(mode="json"))
        _check_users(store, state_dir, records, secure, trust_users, open_to_all, admin_key)
        if held is None:  # only now: a refused start leaves a database without one as it was
            held = uuid.uuid4().hex
            store.set_meta(STATE_ID, held)
        if secure:  # only now: a refused start leaves the state as it was (a later start without --secure free)
            store.set_meta(SECURED, True)
        note_skipped_ids(store, records, (config or SchedulerConfig()).first_job_id)
        name_lost_jobs(store, path, records, clock.now())
        journal = LifecycleLog(store, records, pod.machine.ipus)  # the store, and a log line per event
        controller = Controller(pod, journal, clock.now, [(k, r) for k, r in records if k in PARTITION_KINDS])
        scheduler = Scheduler(pod, config or SchedulerConfig(), journal)
        scheduler.recall = partial(stored_retry, store)
        scheduler.table.quarantined = _quarantined(store, path)
        settings = RunSettings(kill_wait_s=kill_wait_s, state_dir=Path(state_dir), output_dirs=output_dirs,
                               modelled_time_scale=modelled_time_scale)
        creations = Creations(store, [r for k, r in records if k in CREATION_KINDS])
        plane = ControlPlane(controller, scheduler, store, clock.now, api_host, api_port, kinds, settings, creations)
        plane.unrecovered = [(k, r) for k, r in records if k in JOB_KINDS]
        if not recover_later:
            recover_stored(plane)
    plane.state_id = held
    return plane


def _open_store(path: Path, accept_lost_log: bool, accept_empty: bool) -> tuple[Store, dict | None]:
    """The store and its Pod's record, or InvalidArgument naming what is wrong with its database and the fix."""
    try:
        try:
            store = Store(path, accept_lost_log=accept_lost_log, remake_tables=accept_empty)
        except EmptiedDatabase:
            if not (accept_empty or accept_lost_log):
                raise _not_this_state(path, "is empty") from None
            Generation(path).closed()  # the operator begins afresh: the marker of the state that was is let go
            store = Store(path)
        for table in store.remade:
            log.warning("the state database %s had no %s table: made again, empty%s", path, table,
                        " (the records moved aside into it are gone)" if table == "quarantine" else
                        "; --accept-empty-state: what it held is gone")
        return store, store.get_meta("pod")
    except MissingTables as e:
        raise InvalidArgument(
            f"the state database {path} has no {' and no '.join(e.tables)} table (dropped, or lost with its pages):"
            " what it held is gone, and copying the database cannot bring it back; restore it from a backup, or start"
            " with --accept-empty-state to make it again, empty, and serve what is left") from None
    except LostLog as e:
        raise InvalidArgument(
            f"the state database {path} has lost its write-ahead log: {e}. Serving it would drop those changes and"
            " hand out job ids again: restore the -wal file (from the backup the database came from), or start with"
            " --accept-lost-log to serve what the database file holds") from None
    except sqlite3.DatabaseError as e:
        raise unreadable(path, e) from None
    except NewerSchema as e:
        raise InvalidArgument(
            f"the state database {path} was written by a newer vipu-sim (schema {e.found}; this version reads up to"
            f" {SCHEMA_VERSION}); run that version or a later one, or give another --state-dir"
        ) from None
    except UnknownSchema as e:
        raise InvalidArgument(
            f"the state database {path} has schema version {e.found}, which no vipu-sim writes (PRAGMA user_version"
            " changed by hand, or damaged); restore it from a backup, or set the version that wrote it with"
            f" `sqlite3 {path} 'PRAGMA user_version = {SCHEMA_VERSION}'` (this version's; 0 for a state from before"
            " the numbering)"
        ) from None


def _not_this_state(path: Path, what: str, signs: str = "") -> InvalidArgument:
    return InvalidArgument(
        f"the state database {path} {what}, but this folder held a controller's state{signs}: restore the database"
        " (with its -wal file) from a backup, or start with --accept-empty-state to begin afresh (the queue is then"
        " gone and job ids start again)")


def refuse_missing_database(state_dir: Path, accept_empty: bool) -> None:
    """InvalidArgument if the folder has no database, or an empty file in its place, but files only a controller's
    state leaves. Called before anything is created in the folder (the database file, its -wal, the markers): a
    refused start leaves it as it was. Why admin.key counts: without --secure nothing else looked at it, and the
    state it came with was lost without a word (an empty file: the key's own check would blame the key)."""
    path = Path(state_dir) / DATABASE
    emptied = path.is_file() and not path.is_symlink() and path.stat().st_size == 0
    if accept_empty or (path.exists() or path.is_symlink()) and not emptied:
        return
    signs = [p.name for p in (Path(state_dir) / STATE_MARKER, Generation(path).marker,
                              path.with_name(path.name + "-wal")) if p.exists() or p.is_symlink()]
    key = Path(state_dir) / ADMIN_KEY
    if key.is_file() and not key.is_symlink() and _private(key):  # (one planted by another user: refused as such)
        signs.append(key.name)
    if signs:
        raise _not_this_state(path, "is empty" if emptied else "is missing", f" (it holds {', '.join(signs)})")


def foreign_admin_key(state_dir: Path) -> InvalidArgument:
    """The refusal of a --secure start whose folder holds an admin key but whose state has no users. Why: the key
    came with another state (or this one's database was replaced); replacing it would lose that key without a word."""
    return InvalidArgument(f"{Path(state_dir) / ADMIN_KEY} holds a key, but the state in {state_dir} has no users: it"
                           " is another state's admin key (or this state's database was replaced); start on the state"
                           " it came from, or move the file away for a new admin")


def _quarantined(store: Store, path: Path) -> dict[int, str]:
    """What `vipu show job` says of each job id a start found lost or a repairing start moved aside (startup: once)."""
    said = {}
    for name, error in store.quarantined(("job", "job_history")):
        if not name.isdigit():
            continue
        if error == MISSING:
            said[int(name)] = (f"job {name} is in neither the queue nor the job history: its record was lost before a"
                               " start (with a damaged page, or moved aside under another name: `sqlite3"
                               f" {path} 'SELECT kind, name, error FROM quarantine'` lists them); the log of that"
                               " start names it")
        elif error == LOST:
            said[int(name)] = (f"job {name} was lost at a start with --quarantine-bad-records: its record was in a"
                               " damaged page of the job history; the log of that start lists it")
        else:
            said[int(name)] = (f"job {name}'s stored record did not load and was moved aside at a start with"
                               f" --quarantine-bad-records: `sqlite3 {path} \"SELECT kind, error, doc FROM quarantine"
                               f" WHERE name = '{name}'\"` shows it, and the log of that start why")
    return said


def _private(path: Path) -> bool:
    """This user's own file that no other may read or write, as the controller makes them."""
    info = path.stat()
    return info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _check_users(store: Store, state_dir: Path, records: list, secure: bool, trust_users: bool,
                 open_to_all: bool = False, admin_key: bool = False) -> None:
    """Users made while anyone could act as an admin must not become a --secure controller's without a word; and a
    start that lets everyone act as the users there are says so. An admin key beside a state without users is
    another state's (foreign_admin_key)."""
    users = sorted(r.name for k, r in records if k == "user")
    if secure and admin_key and not users:
        store.close()
        raise foreign_admin_key(state_dir)
    if not secure:
        store.set_meta(OPEN_SINCE, True)
        if open_to_all and users:
            log.warning("--insecure-ignore-access-keys: state folder %s has %d user(s) (%s); every caller may now act"
                        " as any of them, admins included, and users made or changed meanwhile need --trust-users at"
                        " the next --secure start", state_dir, len(users), _few(users))
        return
    if users and store.get_meta(OPEN_SINCE) and not trust_users:
        store.close()
        raise InvalidArgument(
            f"state folder {state_dir} was served without --secure since its users ({_few(users)}) were made, when any"
            " caller could create or change users, admins included: check them (start with"
            " --insecure-ignore-access-keys instead of --secure and run `vipu-admin list users`, removing any you did"
            " not make), then start with --secure --trust-users")
    store.set_meta(OPEN_SINCE, False)


def _few(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _load(store: Store, pod, path: Path, quarantine: bool, now: float, pod_named: bool = True) -> list:
    """Every record, or InvalidArgument naming those that do not load or contradict the Pod or each other, and the
    fix. Why refuse rather than skip: a job left out would be lost without a word, and its id given again.
    `pod_named`: the database says which Pod it was made on (--pod was checked against it)."""
    try:
        named = store.load({**PARTITION_KINDS, **JOB_KINDS, **CREATION_KINDS}, names=True)
        records = [(kind, record) for kind, _, record in named]
        outside = contradictions(pod, records)
        if outside and not pod_named:  # the records were made on another Pod: dropping them is no fix
            store.close()
            raise _other_pod(path, pod, records, outside)
        bad = [Damaged(*c) for c in [*outside, *job_contradictions(named)]]
    except DamagedRecords as e:
        bad = e.damaged
    except sqlite3.DatabaseError as e:
        store.close()
        raise unreadable(path, e) from None
    if not bad:
        return records
    if quarantine:
        store.quarantine(bad, now)
        for x in bad:
            log.warning("moved %s %s to the quarantine table of %s: %s", x.kind, x.name, path, x.error)
        return _load(store, pod, path, False, now, pod_named)
    store.close()
    named = "; ".join(f"{x.kind} {x.name}: {x.error}" for x in bad[:3])
    more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
    raise InvalidArgument(
        f"the state database {path} has {len(bad)} record(s) it cannot serve: {named}{more}; start once with"
        " --quarantine-bad-records to move them into its quarantine table (kept for inspection) and go on without"
        " them"
    )


def _other_pod(path: Path, pod, records: list, outside: list) -> InvalidArgument:
    agents = sum(kind == "agent" for kind, _ in records)  # one a machine: the Pod it was made on has as many
    fits = [name for name in PRESETS if not contradictions(load_pod(name), records)]
    fits = [name for name in fits if load_pod(name).machines == agents] or fits
    named = "; ".join(f"{x.kind} {x.name} {x.why}" for x in outside[:2])
    fit = (f"{', '.join(fits)} {'fit' if len(fits) > 1 else 'fits'} its records" if fits else
           "no preset fits its records: a Pod file of the size it had")
    return InvalidArgument(
        f"the state database {path} does not say which Pod it was made on, and {len(outside)} of its records do not"
        f" fit --pod {pod.name} ({named}{' ...' if len(outside) > 2 else ''}): start with the --pod it was made on"
        f" ({fit}); moving the records aside would drop its machines and partitions")


def _checked_history(store: Store, path: Path, quarantine: bool, clock_now) -> Store:
    """The store, its history tables checked: a damaged one is refused, or rebuilt with `quarantine`."""
    damaged = store.damaged_tables()
    if not damaged:
        return _readable_history(store, path, quarantine, clock_now)
    store.close()
    named = "; ".join(f"table {t}: {why}" for t, why in damaged)
    rebuildable = all(t == "job_history" for t, _ in damaged)  # a table with a rowid: read around the damage
    if not (quarantine and rebuildable):
        fix = ("start once with --quarantine-bad-records to rebuild the database with the history's readable rows (the"
               " damaged file is kept beside it, and the ids of the jobs lost are listed in its quarantine table), or"
               " restore it from a backup") if rebuildable else \
            "restore it from a backup, or move it away to start afresh"
        raise InvalidArgument(f"the state database {path} has damaged pages in its job history ({named}); {fix}")
    try:
        rebuilt = rebuild_history(path, clock_now())
    except (Unrebuildable, sqlite3.DatabaseError) as e:
        if is_disk_fault(e):  # the new file did not fit: the damaged one is as it was
            raise cannot_write(path.parent, e) from None
        raise InvalidArgument(f"the state database {path} has damaged pages in its job history ({named}) and could"
                              f" not be rebuilt ({e}); restore it from a backup, or move it away to start afresh"
                              ) from None
    lost = rebuilt.lost
    listed = (f"{len(lost)} lost (listed in its quarantine table: {', '.join(map(str, lost[:20]))}"
              f"{' ...' if len(lost) > 20 else ''})") if lost else "none lost"
    log.warning("rebuilt %s around damaged pages of its job history: %d of %d jobs kept, %s; the damaged file is %s",
                path, rebuilt.kept, rebuilt.had, listed, rebuilt.damaged)
    if rebuilt.strays:
        log.warning("%d row(s) of the damaged pages were made of their bytes, no job's (rowids %s): moved to the"
                    " quarantine table as job_history_stray", len(rebuilt.strays),
                    ", ".join(map(str, rebuilt.strays[:20])) + (" ..." if len(rebuilt.strays) > 20 else ""))
    return _readable_history(Store(path), path, quarantine, clock_now)


def _readable_history(store: Store, path: Path, quarantine: bool, clock_now) -> Store:
    """The store, its history's rows checked to be records (a repairing start: also to be text), those that are not
    refused or moved aside. Why: `vipu history` failed for good on one, printing its bytes."""
    bad = store.bad_history_rows(decode=quarantine)
    if bad and not quarantine:
        store.close()
        named = "; ".join(f"job {i}: {why}" for i, why in bad[:3]) + (f" (and {len(bad) - 3} more)" if len(bad) > 3
                                                                     else "")
        raise InvalidArgument(
            f"the state database {path} has {len(bad)} job history row(s) it cannot read: {named}; start once with"
            " --quarantine-bad-records to move them into its quarantine table (kept for inspection)")
    if bad:
        store.quarantine_history(bad, clock_now())
        for i, why in bad:
            log.warning("moved job %d of the history to the quarantine table of %s: %s", i, path, why)
    return store
