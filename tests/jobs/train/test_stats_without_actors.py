"""machine_stats: the machines' figures for a controller without machine actors, per IPU from the running training
jobs' step reports, per link from the counters their transports count into."""

from __future__ import annotations

from types import SimpleNamespace

from vipu.hardware.figures import LINK_TYPES
from vipu.jobs.train.stats_without_actors import machine_stats, with_modelled


def ipu(utilisation: float, memory: int, streaming: int = 0):
    return SimpleNamespace(utilisation=utilisation, memory_bytes=memory, streaming_bytes=streaming)


def step(ipus: dict, modelled: bool = False):
    return SimpleNamespace(ipus=ipus, modelled=modelled)


# a job on IPUs 2-5: two of machine 0, two of machine 1 (4 IPUs a machine)
SPANNING = {i: ipu(0.25 * (i - 1), 1000 * i, 10) for i in range(2, 6)}


def test_per_ipu_figures_are_the_last_step_of_running_jobs_only():
    first, last = step({2: ipu(0.9, 5)}), step(SPANNING)
    stats = machine_stats([[first, last], []], {}, 4)  # a second job with no step yet reports nothing
    assert stats[0]["per_ipu"] == {2: {"utilisation": 0.25, "sram_used_bytes": 2000},
                                   3: {"utilisation": 0.5, "sram_used_bytes": 3000}}
    assert sorted(stats[1]["per_ipu"]) == [4, 5] and stats[1]["streaming"]["used_bytes"] == 20
    assert all(not m["actor"] for m in stats.values())  # `vipu list ipus` says emulated only with an actor
    assert machine_stats([], {}, 4) == {}  # the job ended: its IPUs are idle again


def test_link_bytes_are_the_counters_of_every_machine_that_moved_any():
    stats = machine_stats([[step(SPANNING)]], {0: {"ipu_link": [40, 0]}, 3: {"gw_link": [7, 9]}}, 4)
    assert stats[0]["links"]["ipu_link"] == {"sent_bytes": 40, "received_bytes": 0}
    assert stats[1]["links"] == {}  # the job runs there, but nothing has crossed its links yet
    assert stats[3]["per_ipu"] == {} and stats[3]["links"]["gw_link"] == {"sent_bytes": 7, "received_bytes": 9}
    assert all(sorted(stats[m]["links"]) == sorted(LINK_TYPES) for m in (0, 3))  # the shape of Machine.stats()
    assert stats[3]["links"]["ipu_link"] == {"sent_bytes": 0, "received_bytes": 0}


def test_with_actors_a_modelled_jobs_ipus_read_its_predicted_step():
    """A modelled job computes nothing on the actors, whose stats would show its IPUs idle; a computed job's IPUs
    read what their actor says."""
    actor = {"machine": 0, "actor": True, "streaming": {"used_bytes": 5}, "links": {"ipu_link": {"sent_bytes": 1}},
             "per_ipu": {i: {"utilisation": 0.0, "sram_used_bytes": 0, "tensors": 0} for i in range(4)}}
    computed = [step({0: ipu(0.3, 100)})]
    predicted = [step({2: ipu(0.9, 700, 30), 3: ipu(0.9, 800, 40), 4: ipu(0.9, 900, 50)}, modelled=True)]
    stats = with_modelled({0: actor}, [computed, predicted, []], 4)
    assert stats[0]["per_ipu"][2] == {"utilisation": 0.9, "sram_used_bytes": 700, "tensors": 0}
    assert stats[0]["per_ipu"][0]["utilisation"] == 0.0  # the actor's word for a computed job's IPU
    assert stats[0]["streaming"]["used_bytes"] == 5 + 70 and stats[0]["links"] == actor["links"] and stats[0]["actor"]
    assert stats[1]["per_ipu"] == {4: {"utilisation": 0.9, "sram_used_bytes": 900}}  # its actor did not answer
    assert with_modelled({}, [computed], 4) == {}
