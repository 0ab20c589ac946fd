"""Link traffic counted as collectives run: by_machine sums a collective's per-IPU bytes per machine, and
TrafficCounters, which LocalTransport records into, keep exactly what each IPU sent and received."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vipu.fabric import LocalTransport, allreduce, send_recv
from vipu.fabric.traffic import TrafficCounters, by_machine
from vipu.hardware.figures import GW_LINK, IPU_LINK
from tests.fabric.helpers import block, put_all


@pytest.mark.parametrize("traffic, want", [
    ({}, {}),
    ({1: {IPU_LINK: [8, 0]}, 6: {IPU_LINK: [0, 8]}}, {0: {IPU_LINK: [8, 0]}, 1: {IPU_LINK: [0, 8]}}),
    # IPUs of one machine add up; a link type that moved nothing is left out
    ({0: {IPU_LINK: [3, 4], GW_LINK: [0, 0]}, 3: {IPU_LINK: [5, 6], GW_LINK: [0, 0]}}, {0: {IPU_LINK: [8, 10]}}),
    ({4: {IPU_LINK: [0, 0], GW_LINK: [0, 0]}}, {}),
    ({15: {GW_LINK: [2, 1]}}, {3: {GW_LINK: [2, 1]}}),
])
def test_by_machine(traffic, want):
    assert by_machine(traffic, 4) == want


def test_a_send_is_sent_by_the_senders_machine_and_received_by_the_receivers():
    """Regression: --ray off split a job's bytes over its machines by their share of its IPUs, each machine
    sending and receiving its share: a pipeline send between two machines was half on each, both ways."""
    group, counters = block("bow-pod16", 0, 8), TrafficCounters()
    transport = LocalTransport(counters)
    put_all(transport, group, {ipu: np.full(10, ipu, np.float32) for ipu in group.ipus})
    send_recv(group, 1, 6, "x", transport)  # IPU 1 of machine 0 to IPU 2 of machine 1
    assert counters.by_machine(4) == {0: {IPU_LINK: [40, 0]}, 1: {IPU_LINK: [0, 40]}}


def test_the_counters_sum_every_collective_of_every_transport_counting_into_them():
    group, counters = block("bow-pod16", 0, 16), TrafficCounters()
    arrays = {ipu: np.arange(100, dtype=np.float16) for ipu in group.ipus}
    results = []
    for _ in range(2):  # two runs' transports, the first gone before the second starts: its bytes stay
        transport = LocalTransport(counters)
        put_all(transport, group, arrays)
        results += [allreduce(group, "x", transport), send_recv(group, 0, 15, "x", transport)]
        del transport
    alone = LocalTransport()  # no counters: only its own records
    put_all(alone, group, arrays)
    result = allreduce(group, "x", alone)
    assert list(alone.records) == [result]
    want: dict[int, dict[str, list[int]]] = {}
    for result in results:
        for machine, kinds in by_machine(result.traffic, 4).items():
            for kind, (sent, received) in kinds.items():
                totals = want.setdefault(machine, {}).setdefault(kind, [0, 0])
                totals[0] += sent
                totals[1] += received
    assert counters.by_machine(4) == want
    assert sum(kinds[IPU_LINK][0] for kinds in want.values()) == sum(r.bytes_per_link_type[IPU_LINK] for r in results)


def test_runs_counting_at_once_lose_no_byte():
    counters = TrafficCounters()
    traffic = {ipu: {IPU_LINK: [1, 2]} for ipu in range(8)}

    def count():
        for _ in range(2000):
            counters.add(traffic)

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counters.by_machine(4) == {0: {IPU_LINK: [4 * 8000, 8 * 8000]}, 1: {IPU_LINK: [4 * 8000, 8 * 8000]}}


def test_a_transport_keeps_its_last_results_and_counts_every_one(monkeypatch):
    """A run of a million steps under --ray off kept every collective's result: memory grew with the steps."""
    from vipu.fabric import local_transport as module

    monkeypatch.setattr(module, "RECORDS_KEPT", 2)
    group, counters = block("bow-pod16", 0, 4), TrafficCounters()
    transport = LocalTransport(counters)
    put_all(transport, group, {ipu: np.ones(8, np.float32) for ipu in group.ipus})
    results = [allreduce(group, "x", transport) for _ in range(3)]
    assert list(transport.records) == results[1:]
    sent = sum(kinds[IPU_LINK][0] for kinds in counters.by_machine(4).values())
    assert sent == 3 * results[0].bytes_per_link_type[IPU_LINK]
