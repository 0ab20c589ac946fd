"""StepTelemetry: the machines' figures from training step reports, for a controller without machine actors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vipu.jobs.train.telemetry import StepTelemetry, split


def ipu(utilisation: float, memory: int, streaming: int = 0):
    return SimpleNamespace(utilisation=utilisation, memory_bytes=memory, streaming_bytes=streaming)


def step(ipus: dict, ipu_link: int, gw_link: int = 0):
    return SimpleNamespace(ipus=ipus, bytes_per_link_type={"ipu_link": ipu_link, "gw_link": gw_link})


# a job on IPUs 2-5: two of machine 0, two of machine 1 (4 IPUs a machine)
SPANNING = {i: ipu(0.25 * (i - 1), 1000 * i, 10) for i in range(2, 6)}


def links(stats: dict, machine: int, kind: str = "ipu_link") -> tuple[int, int]:
    x = stats[machine]["links"][kind]
    return x["sent_bytes"], x["received_bytes"]


@pytest.mark.parametrize("nbytes, share, want", [
    (10, {0: 1, 1: 2}, {0: 4, 1: 6}),  # 3.33 + 6.67: the spare byte to the lowest machine
    (8, {1: 2, 0: 2}, {0: 4, 1: 4}),
    (0, {0: 4}, {0: 0}),
    (5, {}, {}),
])
def test_split_keeps_every_byte(nbytes, share, want):
    assert split(nbytes, share) == want
    assert sum(want.values()) == (nbytes if share else 0)


def test_each_step_is_counted_once_and_its_bytes_stay_after_the_run():
    t = StepTelemetry(ipus_per_machine=4)
    steps = [step(SPANNING, 1001)]
    t.fold({(1, 1): steps})
    t.fold({(1, 1): steps})  # a second scrape before the next step adds nothing
    assert links(t.stats([]), 0) == (501, 501) and links(t.stats([]), 1) == (500, 500)
    steps.append(step(SPANNING, 1000, gw_link=6))
    t.fold({(1, 1): steps})
    stats = t.stats([])
    assert links(stats, 0) == (1001, 1001) and links(stats, 1) == (1000, 1000)
    assert links(stats, 0, "gw_link") == (3, 3)
    t.fold({(1, 2): [step(SPANNING, 10)]})  # the job's next run: counted on top; the first run's bytes stay
    assert links(t.stats([]), 0) == (1006, 1006)


def test_per_ipu_figures_are_the_last_step_of_running_jobs_only():
    t = StepTelemetry(ipus_per_machine=4)
    first, last = step({2: ipu(0.9, 5)}, 0), step(SPANNING, 0)
    stats = t.stats([[first, last], []])  # a second job with no step yet reports nothing
    assert stats[0]["per_ipu"] == {2: {"utilisation": 0.25, "sram_used_bytes": 2000},
                                   3: {"utilisation": 0.5, "sram_used_bytes": 3000}}
    assert sorted(stats[1]["per_ipu"]) == [4, 5] and stats[1]["streaming"]["used_bytes"] == 20
    assert all(not m["actor"] for m in stats.values())  # `vipu list ipus` says emulated only with an actor
    assert t.stats([]) == {}  # the job ended: its IPUs are idle again
