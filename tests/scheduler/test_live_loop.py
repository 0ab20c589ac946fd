"""The contract with the partition layer, as the live server uses it: the scheduler decides on the controller's
usable mask, and every started job's partition is created on exactly the block the scheduler chose."""

from vipu.partition.controller import Controller
from vipu.partition.partition import PartitionRequest
from vipu.partition.placement import place
from vipu.partition.rules import job_holder
from vipu.partition.state import NoJournal
from vipu.scheduler.effects import StartJob, StopJob

from tests.scheduler.builders import POD64, make, sleep, spec


def apply(controller: Controller, effects) -> None:
    for e in effects:
        if isinstance(e, StopJob):
            controller.partitions.remove(e.partition, force=True)
        elif isinstance(e, StartJob):
            assert place(e.place_mask, POD64.ipus, e.ipus) == e.first_ipu
            made = controller.partitions.create(PartitionRequest(
                name=e.partition, size=e.ipus, first_ipu=e.first_ipu, holder=job_holder(e.job_id), allocation=e.allocation))
            assert made.first_ipu == e.first_ipu


def test_live_loop_with_a_partition_made_by_hand():
    now = 0.0
    controller = Controller(POD64, NoJournal(), lambda: now)
    controller.partitions.create(PartitionRequest(name="mine", size=16))  # a user's own partition: IPUs 0-15
    s = make(pod=POD64)
    for ipus, run in [(32, 100), (16, 50), (16, 400), (8, 20), (64, 10)]:
        s.submit(spec(ipus=ipus, time_limit=run, workload=sleep(run)), now)
    for now in (0.0, 20.0, 50.0, 70.0, 100.0, 450.0):
        for job in list(s.table.running.values()):
            if job.start_time + s.job(job.id).spec.workload.duration <= now:
                apply(controller, s.job_finished(job.id, now))
        apply(controller, s.enforce_time_limits(now))
        apply(controller, s.cycle(now, available_mask=controller.state.usable_mask("default")))
        held = {p.name for p in controller.partitions.list()} - {"mine"}
        assert held == {f"slurm_{i}" for i in s.table.running}
    assert s.job(5).reason == "Resources" and s.job(5).estimated_start is None  # "mine" never ends
    controller.partitions.remove("mine")
    apply(controller, s.cycle(501.0, available_mask=controller.state.usable_mask("default")))
    assert s.job(5).state.value == "RUNNING" and s.job(5).first_ipu == 0
