"""The contract with the partition layer, as the live controller keeps it: the driver's cycles decide on the
controller's free IPUs, and the live executor makes every started job's partition on exactly the block chosen."""

from vipu.control.driver import Driver
from vipu.control.executor import LiveExecutor
from vipu.control.instruments import Metrics
from vipu.partition.controller import Controller
from vipu.partition.partition_record import PartitionRequest
from vipu.partition.pod_state import NoJournal
from vipu.workers.fleet import Fleet

from tests.scheduler.builders import POD64, make, sleep, spec


class Placed(LiveExecutor):
    """The live executor, checking each start against the partition it made."""

    def start(self, start):
        ending = super().start(start)
        assert self.controller.state.partitions[start.partition].first_ipu == start.first_ipu
        return ending


def test_live_loop_with_a_partition_made_by_hand():
    controller = Controller(POD64, NoJournal(), lambda: 0.0)
    controller.partitions.create(PartitionRequest(name="mine", size=16))  # a user's own partition: IPUs 0-15
    s = make(pod=POD64)
    machines = Fleet(POD64, on_lost=lambda machines: None, mode="off")
    driver = Driver(s, Placed(s, controller, machines, {}, {}, Metrics()), masks=controller.state.job_masks)
    for ipus, run in [(32, 100), (16, 50), (16, 400), (8, 20), (64, 10)]:
        s.submit(spec(ipus=ipus, time_limit=run, workload=sleep(run)), 0.0)
    for now in (0.0, 20.0, 50.0, 70.0, 100.0, 450.0):
        driver.step(now)
        held = {p.name for p in controller.partitions.list()} - {"mine"}
        assert held == {f"slurm_{i}" for i in s.table.running}
    assert s.job(5).reason == "Resources" and s.job(5).estimated_start is None  # "mine" never ends
    controller.partitions.remove("mine")
    driver.step(501.0)
    assert s.job(5).state.value == "RUNNING" and s.job(5).first_ipu == 0
