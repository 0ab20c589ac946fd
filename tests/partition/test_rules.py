"""Refused requests: the right error class, a message that names the field and says what to do, nothing stored.

errors.py: "A message always names the field or object and says what to do." Every row below checks the class and
the message, then that the journal saw no commit and the controller's state is exactly what it was before.
"""

from __future__ import annotations

import pytest

from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted
from vipu.partition.admin_records import Reason
from vipu.partition.partition_states import PartitionState as S

# request fields -> error, on each of these Pods. Needles may use {limit} (the Pod's largest partition), {ipus} and
# {pod}; they must all appear in the message.
BAD_REQUESTS = [
    # id, request fields, error, needles
    ("size 0", dict(size=0), InvalidArgument, ["size is 0", "a power of two of IPUs from 1 to {limit}"]),
    ("size 3", dict(size=3), InvalidArgument, ["size is 3, not a power of two", "use 2 or 4"]),
    ("size 96", dict(size=96), InvalidArgument, ["size is 96", "64"]),  # the fix differs by Pod: table below
    ("size 1024", dict(size=1024), InvalidArgument, ["size is 1024 but {pod} has {ipus} IPUs",
                                                     "the largest partition is {limit}"]),
    ("size -4", dict(size=-4), InvalidArgument, ["size is -4", "from 1 to {limit}"]),
    ("name with a space", dict(name="my part"), InvalidArgument, ["partition name 'my part' contains ' '",
                                                                   "use ASCII letters, digits"]),
    ("unicode name", dict(name="ipu-ü"), InvalidArgument, ["partition name 'ipu-ü' contains 'ü'", "use ASCII"]),
    ("500-character name", dict(name="p" * 500), InvalidArgument, ["partition name is 500 characters long",
                                                                    "use at most 64"]),
    ("empty name", dict(name=""), InvalidArgument, ["partition name is empty", "give a name such as"]),
    ("name starting with '-'", dict(name="-p"), InvalidArgument, ["partition name '-p' starts with '-'",
                                                                  "starting with a letter or digit"]),
    ("name starting with '.'", dict(name=".hidden"), InvalidArgument, ["partition name '.hidden' starts with '.'"]),
    ("name with a slash", dict(name="a/b"), InvalidArgument, ["partition name 'a/b' contains '/'"]),
    ("3 GCDs of 16", dict(size=16, num_gcds=3), InvalidArgument, [
        "num_gcds is 3, which does not divide the partition size 16", "use one of 1, 2, 4, 8, 16"]),
    ("0 GCDs", dict(size=16, num_gcds=0), InvalidArgument, ["num_gcds is 0", "use one of 1, 2, 4, 8, 16"]),
    ("negative GCDs", dict(size=16, num_gcds=-2), InvalidArgument, ["num_gcds is -2", "use one of 1, 2, 4"]),
    ("more GCDs than IPUs", dict(size=2, num_gcds=4), InvalidArgument, ["num_gcds is 4", "use one of 1, 2"]),
    ("negative gcd_sync_replicas", dict(size=16, gcd_sync_replicas=-1), InvalidArgument, [
        "gcd_sync_replicas is -1", "use one of 1, 2, 4, 8, 16"]),
    ("more sync replicas than IPUs", dict(size=8, num_gcds=2, gcd_sync_replicas=1000), InvalidArgument, [
        "gcd_sync_replicas is 1000, but a partition of 8 IPUs in 2 GCDs", "use one of 2, 4, 8"]),
    ("sync replicas not dividing the size", dict(size=8, gcd_sync_replicas=3), InvalidArgument, [
        "gcd_sync_replicas is 3", "in 1 GCD syncs", "use one of 1, 2, 4, 8"]),
    ("sync replicas not a multiple of the GCDs", dict(size=8, num_gcds=4, gcd_sync_replicas=2), InvalidArgument, [
        "gcd_sync_replicas is 2", "use one of 4, 8"]),
    ("bad allocation name", dict(allocation="my alloc"), InvalidArgument, ["allocation name 'my alloc'",
                                                                          "use ASCII letters"]),
    ("unknown allocation", dict(allocation="nope"), NotFound, ["allocation 'nope' does not exist",
                                                               "vipu-admin list allocations"]),
]


def assert_refused(scene, builders, action, error, needles, **fmt):
    """`action` raises `error` whose message holds every needle, and leaves journal and state untouched."""
    before, commits = builders.snapshot(scene.state), len(scene.journal.commits)
    with pytest.raises(error) as caught:
        action(scene.ctl)
    message = caught.value.message
    for needle in needles:
        assert needle.format(**fmt) in message, f"{needle.format(**fmt)!r} not in {message!r}"
    assert len(scene.journal.commits) == commits, "a refused call committed to the journal"
    assert builders.snapshot(scene.state) == before, "a refused call changed the controller's state"


@pytest.mark.parametrize("pod_name", ["bow-pod64", "bow-pod256"])
@pytest.mark.parametrize("case,fields,error,needles", BAD_REQUESTS, ids=[row[0] for row in BAD_REQUESTS])
def test_bad_requests_are_refused_whole(pod_name, case, fields, error, needles, scene_factory, builders):
    scene = scene_factory(pod_name).partition("existing", 4)
    pod = scene.pod
    request = builders.request(**{"name": "p1", "size": 4, **fields})
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(request), error, needles,
                   limit=pod.max_partition_ipus, ipus=pod.ipus, pod=pod.name)


@pytest.mark.parametrize(
    "pod_name,size,suggestion",
    [
        # pod, size, the sizes the message offers instead
        ("bow-pod64", 3, "use 2 or 4"),
        ("bow-pod64", 96, "the largest partition is 64: give size 64 or less, or a Pod that has 96 IPUs"
                          " (bow-pod128)"),  # more than the Pod holds: the fix (walk33: none was named)
        ("bow-pod128", 96, "use 64 or 128"),
        ("bow-pod256", 96, "use 64 or 128"),
        ("bow-pod256", 200, "use 128 or 256"),
        ("site-8ild", 96, "use 64 or 128"),  # 3 of its 32-IPU domains are no partition
        ("bow-pod64", 128, "the largest partition is 64"),
        ("site-8ild", 512, "the largest partition is 256: give size 256 or less, or a Pod that has 512 IPUs"
                           " (bow-pod1024)"),
    ],
)
def test_a_bad_size_message_offers_the_nearest_sizes_that_fit(pod_name, size, suggestion, scene_factory, builders):
    scene = scene_factory(pod_name)
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(builders.request("p1", size)),
                   InvalidArgument, [f"size is {size}", suggestion])


@pytest.mark.parametrize("name", ["p1", "slurm_x", "slurm_042", "a.b-c_d", "X" * 64, "0start"])
def test_good_names_are_accepted(name, scene_factory):
    assert scene_factory("bow-pod16").partition(name, 1).ctl.partitions.get(name).name == name


def test_slurm_n_is_job_ns_partition_only(scene_factory, builders):
    # anyone else taking slurm_7 would stop job 7 from starting: its partition could not be made
    scene = scene_factory("bow-pod16")
    for holder in (None, "job 8", "someone"):
        assert_refused(scene, builders, lambda ctl: ctl.partitions.create(builders.request("slurm_7", 4, holder=holder)),
                       InvalidArgument, ["'slurm_7' is reserved for the partition of job 7", "choose another name"])
    assert scene.partition("slurm_7", 4, holder="job 7").ctl.partitions.get("slurm_7").holder == "job 7"


REFUSED_IN_STATE = [
    # id, setup (scene -> scene), action (controller -> ...), error, needles
    ("a taken name",
     lambda s: s.partition("p1", 4), lambda c, b: c.partitions.create(b.request("p1", 8)),
     AlreadyExists, ["partition 'p1' already exists", "choose another name", "vipu remove partition p1"]),
    ("removing an unknown partition",
     lambda s: s.partition("p1", 4), lambda c, b: c.partitions.remove("ghost"),
     NotFound, ["partition 'ghost' does not exist", "vipu list partitions"]),
    ("resetting an unknown partition",
     lambda s: s, lambda c, b: c.partitions.reset("ghost"),
     NotFound, ["partition 'ghost' does not exist", "vipu list partitions"]),
    ("removing an acquired partition without force",
     lambda s: s.partition("p1", 4).held("p1", "job-1"), lambda c, b: c.partitions.remove("p1"),
     FailedPrecondition, ["partition p1 is in use by job-1", "wait for it to end", "--force"]),
    ("resetting a partition with failed IPUs",
     lambda s: s.partition("p1", 4).failed([2]), lambda c, b: c.partitions.reset("p1"),
     FailedPrecondition, ["partition p1 has failed IPU 2;", "remove it and create another"]),
    ("resetting a partition with two failed IPUs",
     lambda s: s.partition("p1", 4).failed([1, 2]), lambda c, b: c.partitions.reset("p1"),
     FailedPrecondition, ["partition p1 has failed IPUs 1, 2;"]),
    ("acquiring a partition someone else holds",
     lambda s: s.partition("p1", 4).held("p1", "job-1"), lambda c, b: c.partitions.acquire("p1", "job-2"),
     FailedPrecondition, ["partition p1", "in use by job-1"]),
    ("acquiring a failed partition",
     lambda s: s.partition("p1", 4).failed([0]), lambda c, b: c.partitions.acquire("p1", "job-1"),
     FailedPrecondition, ["partition p1 is FAILED", "only an ACTIVE one"]),
    ("acquiring with no holder",
     lambda s: s.partition("p1", 4), lambda c, b: c.partitions.acquire("p1", ""),
     InvalidArgument, ["holder is empty", "name the job"]),
    ("releasing someone else's hold",
     lambda s: s.partition("p1", 4).held("p1", "job-1"), lambda c, b: c.partitions.release("p1", "job-2"),
     FailedPrecondition, ["partition p1 is held by job-1, not job-2"]),
    ("failing an IPU the Pod does not have (with a real one in the same call)",
     lambda s: s.partition("p1", 4), lambda c, b: c.partitions.fail_ipus([0, 64]),
     InvalidArgument, ["ipu 64 does not exist", "IPUs 0 to 63"]),
    ("a full Pod",
     lambda s: s.partition("all", 64), lambda c, b: c.partitions.create(b.request("p2", 1)),
     ResourceExhausted, ["no free aligned block of 1 IPU in allocation default", "0 IPUs free",
                         "the largest free block holds 0 IPUs", "remove a partition or ask for a smaller size"]),
    ("one IPU free",
     lambda s: s.partition("a", 32).partition("b", 16).partition("c", 8).partition("d", 4).partition("e", 2)
     .partition("f", 1), lambda c, b: c.partitions.create(b.request("p2", 2)),
     ResourceExhausted, ["no free aligned block of 2 IPUs", ": 1 IPU free, the largest free block holds 1 IPU;"]),
    ("a fragmented Pod",
     lambda s: s.partition("a", 32).partition("b", 16).partition("c", 4).partition("d", 8),
     lambda c, b: c.partitions.create(b.request("p2", 8)),
     ResourceExhausted, ["no free aligned block of 8 IPUs", "4 IPUs free, the largest free block holds 4"]),
]


@pytest.mark.parametrize("case,setup,action,error,needles", REFUSED_IN_STATE, ids=[r[0] for r in REFUSED_IN_STATE])
def test_requests_the_current_state_forbids_are_refused_whole(
    case, setup, action, error, needles, scene_factory, builders
):
    scene = setup(scene_factory("bow-pod64"))
    assert_refused(scene, builders, lambda ctl: action(ctl, builders), error, needles)


def without_agent(scene, agent: str):
    scene.ctl.admin.remove_agent(agent)
    return scene


NEVER_FITS = [
    # id, setup (scene -> scene), request fields, needles: a size no block of the allocation could ever hold is bad
    # input (exit 2), however much is removed, resumed or repaired
    ("bigger than a 4-agent allocation",
     lambda s: s.allocation("a1", ["ag00", "ag01", "ag02", "ag03"]), dict(size=64, allocation="a1"),
     ["size is 64 but allocation a1 has 16 IPUs; ask for at most 16"]),
    ("bigger than the default pool left",
     lambda s: s.allocation("a1", [f"ag{m:02d}" for m in range(8)]), dict(size=64),
     ["size is 64 but allocation default has 32 IPUs (the agents no named allocation holds); ask for at most 32 or"
      " name a larger allocation (`vipu list allocations`)"]),
    ("bigger than the allocation's largest aligned block",
     lambda s: s.allocation("a1", ["ag00", "ag01", "ag02"]), dict(size=16, allocation="a1"),
     ["size is 16 but allocation a1 has 12 IPUs, whose largest aligned block holds 8 IPUs; ask for at most 8"]),
    ("an allocation of machines apart",
     lambda s: s.allocation("a1", ["ag00", "ag02"]), dict(size=8, allocation="a1"),
     ["allocation a1 has 8 IPUs, whose largest aligned block holds 4 IPUs; ask for at most 4"]),
    ("an allocation whose agents were removed",
     lambda s: without_agent(s.allocation("a1", ["ag00"]), "ag00"), dict(size=1, allocation="a1"),
     ["size is 1 but allocation a1 has no IPUs", "use another allocation"]),
    ("a default pool with no agents",
     lambda s: s.allocation("a1", [f"ag{m:02d}" for m in range(16)]), dict(size=1),
     ["allocation default has no IPUs", "pass --allocation"]),
]


@pytest.mark.parametrize("case,setup,fields,needles", NEVER_FITS, ids=[r[0] for r in NEVER_FITS])
def test_a_size_the_allocation_can_never_hold_is_bad_input(case, setup, fields, needles, scene_factory, builders):
    scene = setup(scene_factory("bow-pod64"))
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(builders.request("p1", **fields)),
                   InvalidArgument, needles)


def test_a_size_that_fits_once_room_is_freed_is_no_capacity_now(scene_factory, builders):
    """Drained agents, failed IPUs and other partitions only take room for now: RESOURCE_EXHAUSTED (exit 7)."""
    scene = scene_factory("bow-pod64").allocation("a1", ["ag00", "ag01", "ag02", "ag03"]).partition(
        "held", 4, allocation="a1").failed([8])
    scene.ctl.admin.set_agent_state("ag03", "DRAINED")
    for size in (16, 8):
        request = builders.request("p1", size, allocation="a1")
        assert_refused(scene, builders, lambda ctl: ctl.partitions.create(request),
                       ResourceExhausted, [f"no free aligned block of {size} IPUs in allocation a1"])
    scene.ctl.partitions.remove("held")
    scene.ctl.partitions.repair_ipus([8])
    scene.ctl.admin.set_agent_state("ag03", "ONLINE")
    assert scene.ctl.partitions.create(builders.request("p1", 16, allocation="a1")).ipus == range(0, 16)


def test_a_size_only_machines_out_of_service_block_is_no_capacity_naming_them(scene_factory, builders):
    """Regression: with agent ag00 removed, 64 IPUs were refused as bad input ("ask for at most 32"), though
    re-creating the agent makes room (an agent created on a machine joins the default allocation)."""
    scene = scene_factory("bow-pod64")
    scene.ctl.admin.remove_agent("ag00")
    request = builders.request("p1", 64)
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(request), ResourceExhausted, [
        "no free aligned block of 64 IPUs in allocation default: 60 IPUs free, the largest free block holds 32 IPUs;"
        " out of service: machine 0 has no agent (`vipu-admin create agent NAME --machine 0`); an admin can bring"
        " them back, or ask for a smaller size"])
    scene.ctl.admin.set_agent_state("ag05", "DRAINED")
    scene.ctl.partitions.fail_ipus([40, 41])
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(request), ResourceExhausted, [
        "machine 0 has no agent (`vipu-admin create agent NAME --machine 0`); agent ag05 is drained (`vipu-admin"
        " resume agent ag05`); IPUs 40, 41 failed (`vipu-admin repair ipus 40 41`); an admin can bring them back, or"
        " ask for a smaller size"])
    scene.ctl.admin.set_agent_state("ag05", "DRAINED", Reason(text="fan replacement", user="ops", at=1.0))
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(request), ResourceExhausted, [
        "agent ag05 is drained ('fan replacement', by ops) (`vipu-admin resume agent ag05`)"])  # the drain says why
    scene.ctl.admin.set_agent_state("ag06", "DRAINED", Reason(text="PSU", user="ops", at=2.0))
    assert_refused(scene, builders, lambda ctl: ctl.partitions.create(request), ResourceExhausted, [
        "agents ag05, ag06 are drained (`vipu info -R` says why) (`vipu-admin resume agent ag05`)"])
    scene.ctl.admin.set_agent_state("ag06", "ONLINE")
    scene.ctl.admin.create_agent("ag00", "ipum0", 8080, 0)
    scene.ctl.admin.set_agent_state("ag05", "ONLINE")
    scene.ctl.partitions.repair_ipus([40, 41])
    assert scene.ctl.partitions.create(request).ipus == range(0, 64)


def test_removing_an_acquired_partition_with_force_succeeds_and_frees_its_ipus(scene_factory, builders):
    scene = scene_factory("bow-pod64").partition("p1", 16).held("p1", "job-1")
    commits = len(scene.journal.commits)

    removed = scene.ctl.partitions.remove("p1", force=True)

    assert removed.state == S.REMOVED
    assert scene.journal.commits[commits:] == [([], [("partition", "p1")])]
    assert "p1" not in scene.state.partitions
    assert all(s.state == "idle" for s in scene.ctl.partitions.ipu_statuses())
    assert scene.ctl.partitions.create(builders.request("p2", 64)).first_ipu == 0


NO_FIX_MESSAGES = [
    # id, setup, action: refusals whose message once named the object but did not say what to do (regressions)
    ("acquiring a partition someone else holds",
     lambda s: s.partition("p1", 4).held("p1", "job-1"), lambda c: c.partitions.acquire("p1", "job-2")),
    ("acquiring a failed partition",
     lambda s: s.partition("p1", 4).failed([0]), lambda c: c.partitions.acquire("p1", "job-1")),
    ("releasing someone else's hold",
     lambda s: s.partition("p1", 4).held("p1", "job-1"), lambda c: c.partitions.release("p1", "job-2")),
]
FIX_HINTS = ("wait", "release", "reset", "remove", "--force", "another")


@pytest.mark.parametrize("case,setup,action", NO_FIX_MESSAGES, ids=[r[0] for r in NO_FIX_MESSAGES])
def test_every_partition_refusal_says_what_to_do(case, setup, action, scene_factory):
    scene = setup(scene_factory("bow-pod64"))
    with pytest.raises(FailedPrecondition) as caught:
        action(scene.ctl)
    assert any(hint in caught.value.message for hint in FIX_HINTS), caught.value.message
