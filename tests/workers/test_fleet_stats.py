"""What the fleet keeps of its machines' counters, and how it names the resources Ray nodes offer.

Regression (ray41): two /metrics scrapes at once merged their answers in the order they came back, so the one asked
first, merged last, put a machine's counters back: Prometheus reads a counter that goes down as a reset."""

from __future__ import annotations

import pytest
import ray

from vipu.hardware.figures import IPU_LINK
from vipu.workers.fleet import bundle_problem, newest


def answer(sent: int) -> dict:
    return {"links": {IPU_LINK: {"sent_bytes": sent}}}


@pytest.mark.parametrize("kept, fresh, running, want", [
    ({0: (5, answer(50))}, {0: (4, answer(40))}, {0}, {0: 50}),  # an older ask merged last: the newer stays
    ({0: (4, answer(40))}, {0: (5, answer(50))}, {0}, {0: 50}),  # a newer ask: taken
    ({0: (4, answer(40))}, {}, {0}, {0: 40}),  # no answer this time: the last one kept
    ({0: (4, answer(40)), 1: (2, answer(9))}, {0: (5, answer(50))}, {0}, {0: 50}),  # 1 stopped running: dropped
    ({}, {3: (0, answer(7))}, set(), {3: 7}),  # a first answer, whatever the running set read meanwhile
])
def test_each_machine_keeps_its_newest_answer_whatever_order_they_merge_in(kept, fresh, running, want):
    merged = newest(kept, fresh, running)
    assert {m: counters["links"][IPU_LINK]["sent_bytes"] for m, (_, counters) in merged.items()} == want


def test_a_machines_later_answer_has_a_higher_number_and_a_late_earlier_one_does_not_put_it_back(pool):
    """With a real machine actor: two scrapes' answers, the earlier merged last, as the race merged them."""
    actor = pool.actors_for([0])[0]
    earlier = pool.stats(30.0)
    ray.get(actor.record_traffic.remote(IPU_LINK, 1000, 1000, 0.001))
    later = pool.stats(30.0)
    assert later[0][0] > earlier[0][0]
    sent = later[0][1]["links"][IPU_LINK]["sent_bytes"]
    assert sent == earlier[0][1]["links"][IPU_LINK]["sent_bytes"] + 1000
    merged = newest(newest({}, later, {0}), earlier, {0})
    assert merged[0][1]["links"][IPU_LINK]["sent_bytes"] == sent


def test_what_nodes_offer_is_named_as_the_flag_takes_it():
    """--machine-bundle's refusal names each node's resources in the flag's own form (k=v,k=v), so they can be
    given back as they are; it said them joined by ", " before, unlike the bundle it named beside them."""
    nodes = [{"Alive": True, "NodeManagerAddress": "10.0.0.5",
              "Resources": {"node:10.0.0.5": 1.0, "ipu_host": 8.0, "CPU": 2.0}},
             {"Alive": False, "NodeManagerAddress": "10.0.0.6", "Resources": {"ipu_hots": 1.0}}]
    problem = bundle_problem({"ipu_hots": 1.0, "CPU": 0.01}, nodes)
    assert problem.startswith("--machine-bundle ipu_hots=1,CPU=0.01: no node of the Ray cluster offers all of it"
                              " (10.0.0.5 offers CPU=2,ipu_host=8); ")
    assert bundle_problem({"ipu_host": 1.0}, nodes) is None
