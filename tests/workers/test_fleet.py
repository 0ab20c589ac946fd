"""The machines' figures of a controller without machine actors (vipu-server --ray off): each machine's link bytes
are exactly what its IPUs sent and received in the training runs' collectives, counted as they ran, and stay
counted when a run ends or its job is requeued, whenever the metrics are scraped."""

from __future__ import annotations

import pytest

from tests.jobs.train.builders import mlp, pod, run, workload
from vipu.fabric.transport import WrappedTransport
from vipu.jobs.train.stats_without_actors import machine_stats
from vipu.workers.fleet import Fleet

PROGRESS: dict = {}  # (set per test) the running jobs' steps so far, as the control plane gathers them


def fleet_without_actors() -> tuple[Fleet, dict]:
    """A --ray off Fleet; the returned dict is its running jobs' steps so far."""
    PROGRESS.clear()
    return Fleet(pod(), on_lost=lambda machines: None, mode="off"), PROGRESS


class Recording(WrappedTransport):
    """The fleet's machine transport, keeping each collective's result as LocalTransport does."""

    def __init__(self, inner):
        super().__init__(inner)
        self.records = []

    def record(self, result, times: int = 1) -> None:
        self.records.extend([result] * times)
        self.inner.record(result, times)


def train(fleet: Fleet, w, on_step=None) -> list:
    """Run `w` as the controller runs it with --ray off (on the fleet's in-process machines); returns the
    transports it used."""
    transports = []

    def factory(group):
        transports.append(Recording(fleet.machine_transport(sorted({ipu // 4 for ipu in group.ipus}))))
        return transports[-1]

    run(w, transport_factory=factory, on_step=on_step)
    return transports


def links(fleet: Fleet) -> dict[int, dict[str, tuple[int, int]]]:
    """Machine -> link type -> (sent, received), as a scrape reads them; link types with no bytes left out."""
    return {m: {kind: (x["sent_bytes"], x["received_bytes"]) for kind, x in stats["links"].items()
                if x["sent_bytes"] or x["received_bytes"]}
            for m, stats in machine_stats(PROGRESS.values(), fleet.link_bytes(), 4).items() if stats["links"]}


def moved(transports: list) -> dict[int, dict[str, tuple[int, int]]]:
    """What each machine's IPUs sent and received in every collective the transports ran (4 IPUs a machine)."""
    out: dict[int, dict[str, list[int]]] = {}
    for transport in transports:
        for result in transport.records:
            for ipu, kinds in result.traffic.items():
                for kind, (sent, received) in kinds.items():
                    totals = out.setdefault(ipu // 4, {}).setdefault(kind, [0, 0])
                    totals[0] += sent
                    totals[1] += received
    return {m: {kind: tuple(x) for kind, x in kinds.items() if any(x)} for m, kinds in out.items()}


def test_each_machines_link_bytes_are_what_its_ipus_moved():
    """Regression: a step's bytes were split over the job's machines by their share of its IPUs. Here stage 0 runs
    on machine 0 and stage 1 on machine 1, and stage 0's backward has no input gradient to allreduce: machine 1
    moves more."""
    fleet, _ = fleet_without_actors()
    assert links(fleet) == {}  # no run yet
    transports = train(fleet, workload(mlp(), steps=2, t=4, p=2, micro_batches=2))
    got = links(fleet)
    assert got == moved(transports)
    assert got[0]["ipu_link"][0] < got[1]["ipu_link"][0]


def test_a_requeued_jobs_last_steps_stay_counted():
    """Regression: the bytes were folded from the steps of the runs the controller still knew at a scrape, so the
    steps a run made after the last scrape were lost once its job was requeued (its next run replaced it)."""
    fleet, progress = fleet_without_actors()
    w = workload(mlp(), steps=3, t=2, p=2, micro_batches=2)
    steps: list = []
    progress[1] = steps  # job 1, running
    scraped = []

    def step(report):
        steps.append(report)
        if len(steps) == 1:
            scraped.append(links(fleet))  # scraped after its first step only

    first = train(fleet, w, step)
    progress[1] = []  # requeued: its next run starts with no step, and no scrape came in between
    again = train(fleet, w)
    [mid_run] = scraped
    assert mid_run and links(fleet) == moved(first + again)
    assert links(fleet)[0]["ipu_link"][0] == 2 * moved(first)[0]["ipu_link"][0]  # the same run twice: twice the bytes


def test_a_machine_bundle_no_node_offers_is_refused_at_start_naming_the_flag_and_what_nodes_offer(ray_session):
    """Regression: --machine-bundle ipu_hots=1 (a typo) left each job RUNNING for minutes, its machines' placement
    groups waiting, with no line saying why."""
    from vipu.errors import InvalidArgument
    from vipu.workers.fleet import Fleet

    fleet = Fleet(pod(), lambda machines: None, bundle={"ipu_hots": 1.0})
    try:
        with pytest.raises(InvalidArgument) as refused:
            fleet.start()
        assert refused.value.message.startswith("--machine-bundle ipu_hots=1: no node of the Ray cluster offers all"
                                                " of it (")
        assert "CPU=2" in refused.value.message and fleet.pool is None
    finally:
        fleet.shutdown()
    joining = Fleet(pod(), lambda machines: None, bundle={"ipu_hots": 1.0})
    joining.nodes_may_join = True  # --ray-wait: a head started beside its controller, its workers joining later
    try:
        joining.start()
        assert joining.pool is not None
    finally:
        joining.shutdown()
    offered = Fleet(pod(), lambda machines: None, bundle={"CPU": 0.01})
    try:
        offered.start()  # one a node offers starts
        assert offered.pool is not None
    finally:
        offered.shutdown()
