"""What squeue, sacct and sprio users select jobs with: -j lists of job ids (26, 26_3, 26_[1-3]), -t/-s lists of
states (names or short codes, `all`) and -u lists of users, read once for the commands that take them."""

from __future__ import annotations

import re
from typing import NamedTuple

from vipu.cli.failure import BAD_INPUT, fail, refuse_empty
from vipu.scheduler.job_states import ACTIVE, SHORT, JobState
from vipu.v1 import job_pb2 as j

_BY_CODE = {code: state for state, code in SHORT.items()}
STATE_FORMS = ", ".join(f"{s.value} ({c})" for s, c in SHORT.items())


def split(values: list[str] | None) -> list[str]:
    """Comma lists (-t R,PD) as well as a repeated option; a comma inside N_[1,3] does not split."""
    out = []
    for value in values or []:
        out += [v.strip() for v in re.split(r",(?![^\[]*\])", value) if v.strip()]
    return out


def given(values: list[str] | None, flag: str, example: str) -> list[str]:
    """A list flag read as `split` does; given but empty (-j '') is refused, as squeue refuses an invalid value,
    rather than read as no filter at all."""
    out = split(values)
    if values and not out:
        refuse_empty(flag, f"{example}, or leave it out")
    return out


def whole(values: list[str] | None, flag: str, example: str) -> list[str]:
    """A flag whose values are taken whole, as scancel's -n (src/scancel/opt.c keeps it as given; a job name may
    hold commas and spaces): repeated for several, never split or stripped; an empty one is refused."""
    out = list(values or [])
    if "" in out:
        refuse_empty(flag, f"{example}, or leave it out")
    return out


def selected_users(values: list[str] | None) -> list[str]:
    return given(values, "-u/--user", "user names (e.g. -u alice,bob)")


class JobIds(NamedTuple):
    """Jobs named as users write them: N (a job, or every task of array N), N_T, N_[A-B,C]."""

    whole: frozenset[int]  # N
    tasks: frozenset[tuple[int, int]]  # (N, T)

    @property
    def asked(self) -> list[int]:
        """The ids to ask the controller for (an array's id lists its tasks)."""
        return sorted(self.whole | {array for array, _ in self.tasks})

    def __contains__(self, x: j.Job) -> bool:
        if x.id in self.whole or (x.HasField("array_job_id") and x.array_job_id in self.whole):
            return True
        return x.HasField("array_job_id") and (x.array_job_id, x.array_task_id) in self.tasks


def job_ids(values: list[str] | None, flag: str) -> JobIds | None:
    """-j/--jobs read, or None when not given; a malformed id is one line naming the flag and the forms."""
    texts = given(values, flag, f"job ids (e.g. {flag.split('/')[0]} 26,27_1)")
    if not texts:
        return None
    from vipu.cli.job_ids import ID_FORMS, JOB_ID, MAX_ID, TASK_RANGE  # here: `vipu queue` without -j needs none
    from vipu.scheduler.arrays import ArraySyntaxError, parse_array

    whole, tasks = set(), set()
    for text in texts:
        ranged = TASK_RANGE.fullmatch(text)
        single = JOB_ID.fullmatch(text)
        if ranged:
            array, body = ranged.groups()
            try:
                indices = parse_array(body).indices if "%" not in body else None
            except ArraySyntaxError as e:
                fail("vipu", f"{flag}: {text!r}: {e.problem}; {e.fix}", BAD_INPUT)
            if indices is None:
                fail("vipu", f"{flag}: {text!r} has a %N limit, which names no tasks; write e.g. 26_[1-3]", BAD_INPUT)
            tasks.update((int(array), t) for t in indices)
        elif single and all(g is None or int(g) <= MAX_ID for g in single.groups()):
            job, task = single.groups()
            (whole.add(int(job)) if task is None else tasks.add((int(job), int(task))))
        else:
            fail("vipu", f"{flag}: {text!r} is not a job id; {ID_FORMS}, or 26_[1-3] for several tasks, in a comma"
                 " list", BAD_INPUT)
    return JobIds(frozenset(whole), frozenset(tasks))


def job_states(values: list[str] | None, flag: str) -> set[JobState] | None:
    """-t/--states or -s/--state read: names or short codes in any case, comma lists, `all` for every state; None
    when not given."""
    texts = given(values, flag, f"states (e.g. {flag.split('/')[0]} PD,R, or all)")
    if not texts:
        return None
    states = set()
    for text in texts:
        key = text.upper()
        if key == "ALL":
            return set(JobState)
        state = _BY_CODE.get(key) or JobState.__members__.get(key)
        if state is None:
            fail("vipu", f"{flag}: {text!r} is not a job state; give names or codes in a comma list, or all:"
                 f" {STATE_FORMS}", BAD_INPUT)
        states.add(state)
    return states


def active_and_ended(states: set[JobState] | None) -> tuple[list[str] | None, list[str]]:
    """The states to ask the queue for (None: do not ask it; [] every active one) and those to ask the history
    for (none by default: squeue lists pending, running and completing jobs)."""
    if states is None:
        return [], []
    return sorted(s.value for s in states & ACTIVE) or None, sorted(s.value for s in states - ACTIVE)
