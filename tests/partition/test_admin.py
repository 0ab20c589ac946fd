"""Administration: agents, clusters, allocations and users, and a controller rebuilt from its journal.

vipu.md: one agent per IPU-Machine; agents -> cluster (whole IPU-Link domains) -> allocation -> partition;
partitions cannot span allocations; 'default' is every agent no named allocation holds (derived, never stored);
`vipu-admin create user` issues an access key and only its hash is kept.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vipu.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted
from vipu.partition.admin_records import DEFAULT_ALLOCATION, DEFAULT_CLUSTER
from vipu.partition.controller import AGENT_BASE_PORT, AGENT_HOST, Controller
from vipu.partition.pod_state import NoJournal


def agents(*machines: int) -> list[str]:
    return [f"ag{m:02d}" for m in machines]


def ild_agents(ild: int, per_ild: int = 16) -> list[str]:
    return agents(*range(ild * per_ild, (ild + 1) * per_ild))


def refused(scene, builders, action, error, *needles):
    """`action` raises `error` naming every needle, and commits and changes nothing."""
    before, commits = builders.snapshot(scene.state), len(scene.journal.commits)
    with pytest.raises(error) as caught:
        action(scene.ctl.admin)
    for needle in needles:
        assert needle in caught.value.message, f"{needle!r} not in {caught.value.message!r}"
    assert len(scene.journal.commits) == commits and builders.snapshot(scene.state) == before


# bootstrap ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pod_name,machines,ilds,topology,cluster_topology",
    [
        ("bow-pod16", 4, 1, "mesh", "direct-attach"),
        ("bow-pod64", 16, 1, "torus", "looped"),
        ("bow-pod256", 64, 4, "torus", "looped"),
        ("site-8ild", 64, 8, "torus", "switched"),
    ],
)
def test_first_start_registers_one_agent_per_machine_and_cluster0(
    pod_name, machines, ilds, topology, cluster_topology, scene_factory
):
    scene = scene_factory(pod_name)
    got = scene.state.agents
    assert sorted(got) == agents(*range(machines))
    assert [(a.machine, a.host, a.port, a.state) for a in got.values()] == [
        (m, AGENT_HOST, AGENT_BASE_PORT + m, "ONLINE") for m in range(machines)
    ]
    cluster = scene.state.clusters[DEFAULT_CLUSTER]
    assert list(scene.state.clusters) == [DEFAULT_CLUSTER]
    assert (cluster.agents, cluster.num_ilds) == (agents(*range(machines)), ilds)
    assert (cluster.topology, cluster.cluster_topology) == (topology, cluster_topology)
    assert len(scene.journal.commits) == 1, "bootstrap is one commit"
    assert scene.state.allocations == {} and scene.state.users == {}


def test_a_restart_does_not_bootstrap_again(scene_factory):
    scene = scene_factory("bow-pod16")
    assert scene.restarted().journal.commits == []


# agents -------------------------------------------------------------------------------------------------------------


def test_create_agent_on_a_pod_whose_machines_all_have_agents_is_a_conflict(scene_factory, builders):
    """A conflict with the agents there are (exit 4, as V-IPU's 'already exists'), not a lack of room (exit 7)."""
    scene = scene_factory("bow-pod64")
    refused(scene, builders, lambda admin: admin.create_agent("extra", "10.0.0.9", 8080), FailedPrecondition,
            "every one of the 16 machines of bow-pod64 has an agent", "remove one first")


def test_remove_agent_then_create_agent_on_its_machine(scene_factory, builders):
    scene = scene_factory("bow-pod64").allocation("A", agents(4, 5))
    admin = scene.ctl.admin

    gone = admin.remove_agent("ag05")

    assert gone.machine == 5 and "ag05" not in scene.state.agents
    assert "ag05" not in scene.state.clusters[DEFAULT_CLUSTER].agents
    assert scene.state.allocations["A"].agents == ["ag04"]
    refused(scene, builders, lambda a: a.create_agent("new", "h", 8080, machine=4), AlreadyExists,
            "machine 4 already has agent ag04", "remove it first")

    agent = admin.create_agent("m5", "10.1.0.5", 8200, machine=5)

    assert (agent.machine, agent.host, agent.port) == (5, "10.1.0.5", 8200)
    assert scene.state.agent_of_machine()[5].name == "m5"
    assert scene.journal.docs[("agent", "m5")] == agent.model_dump_json()


def test_create_agent_without_a_machine_takes_the_lowest_free_one(scene_factory):
    scene = scene_factory("bow-pod64")
    for name in agents(9, 3):
        scene.ctl.admin.remove_agent(name)
    assert scene.ctl.admin.create_agent("first", "h", 1).machine == 3
    assert scene.ctl.admin.create_agent("second", "h", 1).machine == 9


@pytest.mark.parametrize(
    "case,kwargs,error,needles",
    [
        ("a taken name", dict(name="ag01"), AlreadyExists, ["agent 'ag01' already exists"]),
        ("a bad name", dict(name="ag 1"), InvalidArgument, ["agent name 'ag 1' contains ' '"]),
        ("port 0", dict(port=0), InvalidArgument, ["port (--port) is 0; give a TCP port from 1 to 65535"]),
        ("port 70000", dict(port=70000), InvalidArgument, ["port (--port) is 70000; give a TCP port from 1 to 65535"]),
        ("a machine past the Pod", dict(machine=16), InvalidArgument, ["machine is 16", "machines 0 to 15"]),
        ("a negative machine", dict(machine=-1), InvalidArgument, ["machine is -1", "machines 0 to 15"]),
        # the host is what jobs dial (IPUOF_VIPU_API_HOST): a DNS name or an IP address
        ("a host with a space", dict(host="bad host!"), InvalidArgument, ["host (--host) 'bad host!' contains ' '",
                                                                          "give the agent's DNS name or IP address"]),
        ("an empty host", dict(host=""), InvalidArgument, ["host (--host) '' is empty"]),
        ("a host with '..'", dict(host="a..b"), InvalidArgument, ["'a..b' has an empty label"]),
        ("a host label starting with '-'", dict(host="-ipum.lab"), InvalidArgument, ["starts or ends with '-'"]),
        ("a 64-character label", dict(host="a" * 64 + ".lab"), InvalidArgument, ["over 63 characters"]),
        ("a 254-character host", dict(host=".".join(["a" * 50] * 5)), InvalidArgument,
         ["is 254 characters long (a DNS name has at most 253)"]),
        ("no IPv4 address", dict(host="10.1.0.999"), InvalidArgument, ["'10.1.0.999' is not an IP address"]),
        ("a host with '_'", dict(host="ipu_m0"), InvalidArgument, ["contains '_'"]),
    ],
)
def test_bad_agents_are_refused_whole(case, kwargs, error, needles, scene_factory, builders):
    scene = scene_factory("bow-pod64")
    scene.ctl.admin.remove_agent("ag07")  # leave room, so only the bad field can be the reason
    args = {"name": "new", "host": "h", "port": 8080, "machine": 7, **kwargs}
    refused(scene, builders, lambda admin: admin.create_agent(**args), error, *needles)


@pytest.mark.parametrize("host", ["ipum0", "ipum0.lab.example.com", "ipum0.example.", "10.1.0.7", "fe80::1", "::1"])
def test_an_agent_host_is_a_dns_name_or_an_ip_address(host, scene_factory):
    scene = scene_factory("bow-pod64")
    scene.ctl.admin.remove_agent("ag07")
    assert scene.ctl.admin.create_agent("new", host, 8080, 7).host == host


def test_an_agent_under_a_partition_cannot_be_removed(scene_factory, builders):
    scene = scene_factory("bow-pod64").partition("p1", 8)
    refused(scene, builders, lambda admin: admin.remove_agent("ag01"), FailedPrecondition,
            "partition p1 is on the IPUs of agent ag01; remove that partition first")


def test_a_jobs_partition_in_the_way_names_the_job_and_how_to_cancel_it(scene_factory, builders):
    """Regression: `remove allocation a1` while job 35 ran in it said "has partition slurm_35; remove it first",
    which `vipu remove partition slurm_35` refuses while the job runs."""
    scene = scene_factory("bow-pod64").allocation("a1", agents(0, 1, 2, 3))
    scene.partition("slurm_35", 4, allocation="a1", holder="job 35")
    refused(scene, builders, lambda admin: admin.remove_allocation("a1"), FailedPrecondition,
            "allocation a1 has partition slurm_35 (job 35); cancel job 35 (`vipu cancel 35`) first: a job's partition"
            " is removed when the job ends")
    refused(scene, builders, lambda admin: admin.remove_agent("ag00"), FailedPrecondition,
            "partition slurm_35 (job 35) is on the IPUs of agent ag00; cancel job 35 (`vipu cancel 35`) first")
    scene.partition("p1", 4, allocation="a1").partition("slurm_36", 4, allocation="a1", holder="job 36")
    refused(scene, builders, lambda admin: admin.remove_allocation("a1"), FailedPrecondition,
            "allocation a1 has partitions p1, slurm_35 (job 35), slurm_36 (job 36); remove partition p1 and cancel"
            " jobs 35, 36 (`vipu cancel 35 36`) first")


def test_an_agent_under_two_partitions_cannot_be_removed(scene_factory, builders):
    scene = scene_factory("bow-pod64").partition("p1", 2).partition("p2", 2)
    refused(scene, builders, lambda admin: admin.remove_agent("ag00"), FailedPrecondition,
            "partitions p1, p2 are on the IPUs of agent ag00; remove those partitions first")


def test_a_machine_without_an_agent_or_with_a_drained_one_gets_no_partition(scene_factory, builders):
    scene = scene_factory("bow-pod16")
    scene.ctl.admin.remove_agent("ag00")
    scene.ctl.admin.set_agent_state("ag02", "DRAINED")
    got = {scene.ctl.partitions.create(builders.request(f"p{i}", 4)).first_ipu // 4 for i in range(2)}
    assert got == {1, 3}
    with pytest.raises(ResourceExhausted):
        scene.ctl.partitions.create(builders.request("p2", 1))


def test_set_agent_state_refuses_an_unknown_state(scene_factory, builders):
    """Regression: model_copy skips validation, so 'BROKEN' was stored and the next start failed to load it."""
    scene = scene_factory("bow-pod16")
    refused(scene, builders, lambda admin: admin.set_agent_state("ag00", "BROKEN"), InvalidArgument,
            "state is 'BROKEN'", "ONLINE or DRAINED")


# clusters -----------------------------------------------------------------------------------------------------------


def pod256_without_cluster0(scene_factory):
    scene = scene_factory("bow-pod256")
    scene.ctl.admin.remove_cluster(DEFAULT_CLUSTER)
    return scene


@pytest.mark.parametrize(
    "case,members,num_ilds",
    [
        ("one ILD", ild_agents(1), 1),
        ("two ILDs", ild_agents(2) + ild_agents(3), 2),
        ("all four, in any order", list(reversed(agents(*range(64)))), 4),
    ],
)
def test_a_cluster_of_whole_ilds_is_created(case, members, num_ilds, scene_factory):
    scene = pod256_without_cluster0(scene_factory)
    cluster = scene.ctl.admin.create_cluster("c", members, num_ilds, "torus", "looped")
    assert (cluster.agents, cluster.num_ilds) == (members, num_ilds)
    assert scene.state.clusters == {"c": cluster}


@pytest.mark.parametrize(
    "case,members,num_ilds,topology,error,needles",
    [
        ("half of two ILDs", agents(*range(8, 24)), 1, "torus", InvalidArgument,
         ["agents do not form whole IPU-Link domains", "give all the agents of each domain"]),
        ("15 agents for one ILD", ild_agents(0)[:15], 1, "torus", InvalidArgument,
         ["num_ilds (--num-ipulinkdomains) is 1 but 15 agents were given", "give 16 agents"]),
        ("zero ILDs", ild_agents(0), 0, "torus", InvalidArgument, ["num_ilds (--num-ipulinkdomains) is 0", "1 or more"]),
        ("negative ILDs", ild_agents(0), -3, "torus", InvalidArgument, ["is -3", "1 or more (16 agents each)"]),
        ("one ILD's agents for two", ild_agents(0), 2, "torus", InvalidArgument,
         ["num_ilds (--num-ipulinkdomains) is 2 but 16 agents were given", "give 32 agents"]),
        ("an agent twice", ild_agents(0)[:15] + ["ag00"], 1, "torus", InvalidArgument,
         ["agents names an agent twice", "list each agent once"]),
        ("no agents", [], 1, "torus", InvalidArgument, ["agents is empty", "vipu-admin list agents"]),
        ("an unknown agent", ild_agents(0)[:15] + ["ghost"], 1, "torus", NotFound,
         ["agent 'ghost' does not exist"]),
        ("a ring topology", ild_agents(0), 1, "ring", InvalidArgument, ["topology is 'ring'", "use torus"]),
    ],
)
def test_a_cluster_must_be_whole_ilds(case, members, num_ilds, topology, error, needles, scene_factory, builders):
    scene = pod256_without_cluster0(scene_factory)
    refused(scene, builders, lambda admin: admin.create_cluster("c", members, num_ilds, topology, "looped"),
            error, *needles)


def test_an_agent_is_in_at_most_one_cluster(scene_factory, builders):
    scene = scene_factory("bow-pod256")
    refused(scene, builders, lambda admin: admin.create_cluster("c", ild_agents(0), 1, "torus", "looped"),
            FailedPrecondition, "already belong to cluster cluster0", "remove that cluster first")


def test_a_cluster_under_a_partition_cannot_be_removed(scene_factory, builders):
    scene = scene_factory("bow-pod64").partition("p1", 1)
    refused(scene, builders, lambda admin: admin.remove_cluster(DEFAULT_CLUSTER), FailedPrecondition,
            "partition p1 is on the IPUs of cluster cluster0")


def test_a_partition_records_the_cluster_it_landed_in(scene_factory, builders):
    scene = pod256_without_cluster0(scene_factory)
    for ild in range(4):
        scene.ctl.admin.create_cluster(f"c{ild}", ild_agents(ild), 1, "torus", "looped")
    scene.partition("big", 128).partition("small", 4)
    assert scene.ctl.partitions.get("big").cluster == "c0"
    assert scene.ctl.partitions.get("small").cluster == "c2"


# allocations --------------------------------------------------------------------------------------------------------


def test_default_is_every_agent_no_named_allocation_holds(scene_factory):
    scene = scene_factory("bow-pod64").allocation("A", agents(0, 1, 2, 3)).allocation("B", agents(12, 13))
    listing = scene.ctl.admin.list_allocations()
    assert [(a.name, a.agents) for a in listing] == [
        (DEFAULT_ALLOCATION, agents(*range(4, 12), 14, 15)),
        ("A", agents(0, 1, 2, 3)),
        ("B", agents(12, 13)),
    ]
    assert scene.ctl.admin.get_allocation(DEFAULT_ALLOCATION) == listing[0]
    assert ("allocation", DEFAULT_ALLOCATION) not in scene.journal.docs, "default is derived, never stored"
    scene.ctl.admin.remove_allocation("A")
    assert scene.ctl.admin.get_allocation(DEFAULT_ALLOCATION).agents == agents(*range(12), 14, 15)


def test_partitions_and_allocations_are_carved_from_clusters(scene_factory):
    """As in V-IPU: an agent in no cluster serves no partition and joins no allocation."""
    scene = scene_factory("bow-pod64")
    admin = scene.ctl.admin
    [cluster] = list(scene.state.clusters)
    admin.create_allocation("A", agents(0))
    with pytest.raises(FailedPrecondition, match=f"cluster {cluster} holds the agents of allocation A; remove it"):
        admin.remove_cluster(cluster)
    admin.remove_allocation("A")
    admin.remove_cluster(cluster)
    assert admin.get_allocation(DEFAULT_ALLOCATION).agents == []
    with pytest.raises(InvalidArgument, match=r"no cluster holds any agent; an admin creates one"):
        scene.partition("p", 4)
    with pytest.raises(FailedPrecondition, match="agent ag00 is in no cluster"):
        admin.create_allocation("B", agents(0))
    admin.create_cluster("half", agents(*range(16)), 1, "torus", "looped")
    assert scene.partition("p", 4).ctl.partitions.get("p").cluster == "half"


@pytest.mark.parametrize(
    "case,action,error,needles",
    [
        ("an agent in two allocations", lambda a: a.create_allocation("B", agents(3, 4)), FailedPrecondition,
         ["agent ag03 already belongs to allocation A", "an agent is in at most one allocation"]),
        ("agents in two allocations", lambda a: a.create_allocation("B", agents(2, 3)), FailedPrecondition,
         ["agents ag02, ag03 already belong to allocation A"]),
        ("the name default", lambda a: a.create_allocation("default", agents(8)), AlreadyExists,
         ["allocation 'default' is the built-in pool", "choose another name"]),
        ("a taken name", lambda a: a.create_allocation("A", agents(8)), AlreadyExists,
         ["allocation 'A' already exists"]),
        ("no agents", lambda a: a.create_allocation("B", []), InvalidArgument, ["agents is empty"]),
        ("an unknown user", lambda a: a.create_allocation("B", agents(8), users=["bob"]), NotFound,
         ["user 'bob' does not exist"]),
        ("removing default", lambda a: a.remove_allocation("default"), InvalidArgument,
         ["the default allocation is every agent of a cluster that no allocation holds, and cannot be removed"]),
        ("removing an unknown one", lambda a: a.remove_allocation("Z"), NotFound, ["allocation 'Z' does not exist"]),
        ("over agents holding default-pool partitions", lambda a: a.create_allocation("B", agents(4, 5)),
         FailedPrecondition, ["partition d1 is on the IPUs of agents ag04, ag05; remove that partition first"]),
        ("removing one with a partition", lambda a: a.remove_allocation("A"), FailedPrecondition,
         ["allocation A has partition a1; remove it first"]),
    ],
)
def test_bad_allocation_requests_are_refused_whole(case, action, error, needles, scene_factory, builders):
    scene = (
        scene_factory("bow-pod64")
        .allocation("A", agents(0, 1, 2, 3))
        .partition("a1", 4, allocation="A")
        .partition("d1", 1)
    )
    assert scene.ctl.partitions.get("d1").first_ipu // 4 == 4, "setup: d1 sits on ag04"
    refused(scene, builders, action, error, *needles)


@settings(max_examples=40, deadline=None)
@given(
    machines=st.sets(st.integers(0, 15), min_size=1, max_size=15),
    sizes=st.lists(st.sampled_from([1, 1, 2, 2, 4, 4, 8, 16, 32, 64]), min_size=1, max_size=30),
    in_allocation=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_a_partition_lands_only_on_its_allocations_agents(scene_factory, builders, machines, sizes, in_allocation):
    scene = scene_factory("bow-pod64").allocation("A", agents(*sorted(machines)))
    for n, (size, in_a) in enumerate(zip(sizes, in_allocation)):
        wanted = machines if in_a else set(range(16)) - machines
        try:
            p = scene.ctl.partitions.create(builders.request(f"p{n}", size, allocation="A" if in_a else None))
        except ResourceExhausted:
            continue
        except InvalidArgument:  # only a size no aligned block of the allocation's machines could ever hold
            assert not fits_ever(wanted, size), f"{size} IPUs refused as bad input though they fit an empty {wanted}"
            continue
        assert {ipu // 4 for ipu in p.ipus} <= wanted, f"{p.name} ({p.allocation}) left its allocation's machines"
        assert p.allocation == ("A" if in_a else DEFAULT_ALLOCATION)


@st.composite
def admin_and_partition_ops(draw):
    """Interleaved changes to who may use which IPUs (allocations, drains) and partitions that must follow them."""
    op = st.one_of(
        st.tuples(st.just("create"), st.sampled_from([1, 2, 4, 4, 8, 16]), st.booleans()),
        st.tuples(st.just("remove"), st.integers(0, 100)),
        st.tuples(st.just("drain"), st.integers(0, 15)),
        st.tuples(st.just("online"), st.integers(0, 15)),
        st.tuples(st.just("allocate"), st.sets(st.integers(0, 15), min_size=1, max_size=8)),
        st.tuples(st.just("unallocate")),
    )
    return draw(st.lists(op, min_size=5, max_size=40))


def fits_ever(machines: set[int], size: int) -> bool:
    """Brute force: some aligned block of `size` IPUs lies wholly on these machines (4 IPUs each, Pod64)."""
    ipus = {m * 4 + i for m in machines for i in range(4)}
    return any(set(range(f, f + size)) <= ipus for f in range(0, 64, size))


def allocation_machines(state, allocation: str) -> set[int]:
    """Brute force: the machines of every agent of the allocation, whatever their state."""
    taken = {a for alloc in state.allocations.values() for a in alloc.agents}
    names = ([n for n in state.agents if n not in taken] if allocation == DEFAULT_ALLOCATION
             else state.allocations[allocation].agents)
    return {state.agents[n].machine for n in names}


def allowed_ipus(state, allocation: str) -> set[int]:
    """Brute force: free, healthy IPUs of the ONLINE agents of the allocation ('default': agents in no allocation)."""
    if allocation == DEFAULT_ALLOCATION:
        taken = {a for alloc in state.allocations.values() for a in alloc.agents}
        names = [n for n in state.agents if n not in taken]
    else:
        names = state.allocations[allocation].agents
    used = {ipu for p in state.partitions.values() for ipu in p.ipus}
    return {
        ipu
        for n in names
        if state.agents[n].state == "ONLINE"
        for ipu in range(state.agents[n].machine * 4, state.agents[n].machine * 4 + 4)
    } - used - state.failed_ipus


@settings(max_examples=40, deadline=None)
@given(sequence=admin_and_partition_ops())
def test_placement_follows_every_change_of_allocations_and_agent_states(scene_factory, builders, sequence):
    scene = scene_factory("bow-pod64")
    admin, parts, state = scene.ctl.admin, scene.ctl.partitions, scene.state
    for n, (kind, *args) in enumerate(sequence):
        if kind == "create":
            size, in_a = args
            allocation = "A" if in_a and "A" in state.allocations else DEFAULT_ALLOCATION
            allowed = allowed_ipus(state, allocation)
            room = any(set(range(f, f + size)) <= allowed for f in range(0, 64, size))
            ever = fits_ever(allocation_machines(state, allocation), size)
            try:
                p = parts.create(builders.request(f"p{n}", size, allocation=allocation))
            except ResourceExhausted:
                assert not room, f"refused {size} IPUs in {allocation} though an aligned block was allowed"
                assert ever, f"{size} IPUs in {allocation} can never fit, yet refused as no room now (exit 7)"
            except InvalidArgument:
                assert not ever, f"{size} IPUs in {allocation} fit once room is freed, yet refused as bad input"
            else:
                assert set(p.ipus) <= allowed, f"{p.name} took IPUs outside {allocation}'s online agents"
        elif kind == "remove" and state.partitions:
            parts.remove(sorted(state.partitions)[args[0] % len(state.partitions)])
        elif kind == "drain":
            admin.set_agent_state(agents(args[0])[0], "DRAINED")
        elif kind == "online":
            agent = agents(args[0])[0]
            if state.agents[agent].state == "ONLINE":  # a resume of an agent not drained is refused, changing nothing
                with pytest.raises(FailedPrecondition, match="is ONLINE, not drained: resume undoes a drain"):
                    admin.set_agent_state(agent, "ONLINE")
            else:
                admin.set_agent_state(agent, "ONLINE")
        elif kind == "allocate" and "A" not in state.allocations:
            try:
                admin.create_allocation("A", agents(*sorted(args[0])))
            except FailedPrecondition:
                pass  # its agents hold default-pool partitions
        elif kind == "unallocate" and "A" in state.allocations:
            try:
                admin.remove_allocation("A")
            except FailedPrecondition:
                pass  # it has partitions


# users --------------------------------------------------------------------------------------------------------------


def test_create_user_keeps_only_the_hash_of_the_key(scene_factory, builders):
    scene = scene_factory("bow-pod16")
    user, key = scene.ctl.admin.create_user("alice")
    other, other_key = scene.ctl.admin.create_user("bob", admin=True)

    assert len(key) >= 32 and key != other_key
    assert user.key_sha256 == hashlib.sha256(key.encode()).hexdigest()
    assert key not in user.model_dump_json()
    assert not any(key in doc or other_key in doc for doc in scene.journal.docs.values()), "the key reached the store"
    assert scene.ctl.admin.user_for_key(key) == user
    assert scene.ctl.admin.user_for_key(other_key) == other and other.admin
    assert scene.ctl.admin.user_for_key(key + "x") is None
    assert scene.ctl.admin.user_for_key("") is None
    refused(scene, builders, lambda admin: admin.create_user("alice"), AlreadyExists, "user 'alice' already exists")
    refused(scene, builders, lambda admin: admin.create_user("al ice"), InvalidArgument, "user name 'al ice'")


# restart ------------------------------------------------------------------------------------------------------------


def busy_pod256(scene_factory):
    """A Pod256 that has seen every kind of administration and partition change."""
    scene = pod256_without_cluster0(scene_factory)
    admin, parts = scene.ctl.admin, scene.ctl.partitions
    admin.create_cluster("left", ild_agents(0) + ild_agents(1), 2, "torus", "looped")
    admin.create_cluster("right", ild_agents(2) + ild_agents(3), 2, "torus", "switched")
    admin.create_user("alice")
    admin.create_user("root", admin=True)
    admin.create_allocation("A", agents(*range(32, 40)), users=["alice"])
    admin.create_allocation("gone", agents(40))
    admin.remove_allocation("gone")
    admin.remove_agent("ag63")
    admin.create_agent("spare", "10.0.0.63", 9000, machine=63)
    admin.set_agent_state("ag62", "DRAINED")
    scene.clock.advance(10)
    scene.partition("big", 128, num_gcds=2, gcd_sync_replicas=4, owner="alice")
    scene.partition("mine", 16, allocation="A", reconfigurable=True).held("mine", "slurm_7")
    scene.partition("tmp", 8).partition("tiny", 2, holder="slurm_8")
    parts.reset("big")
    parts.remove("tmp")
    return scene


def test_a_controller_rebuilt_from_its_journal_has_the_same_state(scene_factory, builders):
    scene = busy_pod256(scene_factory)

    again = scene.restarted()

    assert builders.snapshot(again.state) == builders.snapshot(scene.state)
    assert again.ctl.admin.list_allocations() == scene.ctl.admin.list_allocations()
    assert again.ctl.partitions.ipu_statuses() == scene.ctl.partitions.ipu_statuses()
    for ctl in (scene.ctl, again.ctl):  # and it goes on to decide the same way
        ctl.partitions.create(builders.request("next", 32))
        ctl.partitions.create(builders.request("next-a", 8, allocation="A"))
    assert builders.snapshot(again.state) == builders.snapshot(scene.state)


def test_a_controller_rebuilt_with_no_journal_records_bootstraps_alone(pods):
    ctl = Controller(pods("bow-pod16"), NoJournal(), lambda: 0.0, records=[])
    assert len(ctl.state.agents) == 4 and list(ctl.state.clusters) == [DEFAULT_CLUSTER]


def test_failed_ipus_survive_a_restart(scene_factory):
    """Regression: failed IPUs were never journaled, so a restart showed them 'allocated' and let a reset through."""
    scene = scene_factory("bow-pod16").partition("p1", 4).failed([1, 9])  # 9 is under no partition

    again = scene.restarted()

    assert again.ctl.partitions.ipu_statuses() == scene.ctl.partitions.ipu_statuses()
    with pytest.raises(FailedPrecondition):
        again.ctl.partitions.reset("p1")


def test_create_cluster_refuses_an_unknown_cluster_topology(scene_factory, builders):
    """Regression: any string was accepted, though a Pod's cluster_topology is looped, direct-attach or switched."""
    scene = pod256_without_cluster0(scene_factory)
    refused(scene, builders, lambda admin: admin.create_cluster("c", ild_agents(0), 1, "torus", "ringy"),
            InvalidArgument, "cluster_topology is 'ringy'", "looped", "direct-attach", "switched")


def test_job_masks_are_each_allocations_online_agents_and_what_is_free_now(scene_factory):
    """The job scheduler places on `free` and confines a job of allocation X to allowed[X]: IPUs of drained
    agents are in no allocation's mask, and failed or partitioned IPUs are never free."""
    scene = scene_factory("bow-pod16").allocation("A", agents(3)).partition("p1", 2).failed([5])
    scene.ctl.admin.set_agent_state("ag02", "DRAINED")
    free, allowed = scene.state.job_masks()
    assert allowed == {DEFAULT_ALLOCATION: 0b0000_0000_1111_1111, "A": 0b1111_0000_0000_0000}
    placed = scene.state.partitions["p1"].first_ipu
    assert free == allowed[DEFAULT_ALLOCATION] & ~(0b11 << placed) & ~(1 << 5) | allowed["A"]


def test_an_agent_replacing_a_clusters_machine_joins_that_cluster(scene_factory, builders):
    scene = scene_factory("bow-pod64")
    scene.ctl.admin.remove_agent("ag07")
    assert "ag07" not in scene.state.clusters["cluster0"].agents
    scene.ctl.admin.create_agent("ag07b", "10.0.0.7", 8080, machine=7)
    assert "ag07b" in scene.state.clusters["cluster0"].agents
    assert ("cluster", "cluster0") in scene.journal.docs  # stored, so a restart agrees


def test_remove_user_revokes_the_key_but_not_the_last_admin(scene_factory, builders):
    scene = scene_factory("bow-pod16")
    admin = scene.ctl.admin
    _, key = admin.create_user("alice")
    root, _ = admin.create_user("root", admin=True)
    assert admin.user_for_key(key).name == "alice"
    admin.create_allocation("A", agents(3), users=["alice"])
    admin.remove_user("alice")
    assert admin.user_for_key(key) is None and "alice" not in scene.state.users
    assert scene.state.allocations["A"].users == ["alice"]  # kept: an empty grant would open A to everyone
    refused(scene, builders, lambda a: a.remove_user("root"), FailedPrecondition,
            "user root is the last admin", "create another admin first")
    refused(scene, builders, lambda a: a.remove_user("alice"), NotFound, "user 'alice' does not exist")


def test_ipus_of_a_drained_or_missing_agent_are_drained_until_back(scene_factory, builders):
    """Regression: they showed as idle, though no partition could go there."""
    scene = scene_factory("bow-pod16").partition("p1", 4)  # lands on machine 0
    scene.ctl.admin.set_agent_state("ag02", "DRAINED")
    scene.ctl.admin.remove_agent("ag03")
    assert scene.state.drained_mask == 0b1111_1111_0000_0000
    kinds = [s.state for s in scene.ctl.partitions.ipu_statuses()]
    assert kinds == ["allocated"] * 4 + ["idle"] * 4 + ["drained"] * 8
    scene.ctl.admin.set_agent_state("ag02", "ONLINE")
    assert scene.state.drained_mask == 0b1111_0000_0000_0000


def test_ipus_of_an_agent_drained_under_a_partition_are_draining_until_its_job_ends(scene_factory, builders):
    """Regression, twice: an agent drained while a job ran on it first showed its IPUs allocated (the drain was
    invisible until the job ended), then drained (utilisation read 0 while the job ran). Like Slurm's drng they are
    draining: in use and taking no new work, apart from allocated and drained; they keep their partition; once it
    is gone they are drained, and idle again at resume; failed IPUs stay failed."""
    scene = scene_factory("bow-pod16").partition("p1", 4).partition("p2", 4).failed([7])  # machines 0 and 1
    scene.ctl.admin.set_agent_state("ag00", "DRAINED")
    scene.ctl.admin.set_agent_state("ag01", "DRAINED")
    scene.ctl.admin.set_agent_state("ag02", "DRAINED")
    assert scene.state.draining_mask == 0b0000_0000_0111_1111
    assert scene.state.drained_mask == 0b0000_1111_0000_0000
    statuses = scene.ctl.partitions.ipu_statuses()
    assert [s.state for s in statuses] == ["draining"] * 7 + ["failed"] + ["drained"] * 4 + ["idle"] * 4
    assert [s.partition for s in statuses[:12]] == ["p1"] * 4 + ["p2"] * 4 + [None] * 4
    assert all(s.working for s in statuses[:7])  # their job still runs: telemetry reads them busy
    free, _ = scene.state.job_masks()
    assert free == 0b1111_0000_0000_0000  # nothing on a drained agent is offered to jobs
    scene.ctl.partitions.remove("p1")  # the job ended: draining became drained
    assert scene.state.draining_mask == 0b0111_0000 and scene.state.drained_mask == 0b0000_1111_0000_1111
    assert [s.state for s in scene.ctl.partitions.ipu_statuses()][:8] == ["drained"] * 4 + ["draining"] * 3 + ["failed"]
    scene.ctl.admin.set_agent_state("ag00", "ONLINE")
    assert [s.state for s in scene.ctl.partitions.ipu_statuses()][:4] == ["idle"] * 4
