"""Pages on every list RPC, as a gRPC client sees them (docs/api.md, Pages): page_size above the documented 10,000
is refused naming page_size; the admin listings come in pages like the others; a token whose listing is no longer
kept is refused with LISTING_EXPIRED."""

from __future__ import annotations

import base64
import json

import grpc
import pytest

from tests.conftest import ServerProcess
from tests.server.test_refusals import fields, refusal
from vipu.control.snapshot import MAX_PAGE_SIZE
from vipu.v1 import admin_pb2 as a
from vipu.v1 import admin_pb2_grpc, job_pb2 as j, job_pb2_grpc, partition_pb2 as p, partition_pb2_grpc

# every list RPC: (service, method, request type)
LISTS = [("jobs", "ListJobs", j.ListJobsRequest), ("jobs", "History", j.HistoryRequest),
         ("jobs", "Priorities", j.PrioritiesRequest), ("partitions", "ListPartitions", p.ListPartitionsRequest),
         ("partitions", "ListAllocations", p.ListAllocationsRequest), ("partitions", "ListIpus", p.ListIpusRequest),
         ("partitions", "ListMachines", p.ListMachinesRequest),
         ("admin", "ListAgents", a.ListRequest), ("admin", "ListClusters", a.ListRequest),
         ("admin", "ListAllocations", a.ListRequest), ("admin", "ListUsers", a.ListRequest)]


@pytest.fixture(scope="module")
def server_module(tmp_path_factory):
    server = ServerProcess(state_dir=tmp_path_factory.mktemp("pages") / "state", pod="bow-pod64")
    server.start()
    try:
        yield server
    finally:
        server.kill()
        server.proc.stdout.close()


@pytest.fixture(scope="module")
def stubs(server_module):
    with grpc.insecure_channel(server_module.address) as channel:
        yield {"jobs": job_pb2_grpc.JobServiceStub(channel), "partitions": partition_pb2_grpc.PartitionServiceStub(
            channel), "admin": admin_pb2_grpc.AdminServiceStub(channel)}


@pytest.mark.parametrize(("service", "method", "kind"), LISTS, ids=[f"{s}.{m}" for s, m, _ in LISTS])
def test_a_page_size_above_the_maximum_is_refused_naming_it(stubs, service, method, kind):
    """Regression: ListJobs(page_size=100000) was served 10,000 rows silently, where the docs say at most 10,000."""
    call = getattr(stubs[service], method)
    code, found = refusal(lambda: call(kind(page_size=MAX_PAGE_SIZE + 1), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["page_size"], found
    assert "10,000" in found["BadRequest"].field_violations[0].description
    call(kind(page_size=MAX_PAGE_SIZE), timeout=10)  # the maximum itself is served


def test_admin_listings_come_in_pages(stubs):
    admin = stubs["admin"]
    names, token = [], ""
    while True:
        page = admin.ListAgents(a.ListRequest(page_size=3, page_token=token), timeout=10)
        assert len(page.agents) <= 3 and page.total_size == 16  # a Bow-Pod64: 16 machines, an agent each
        names += [x.name for x in page.agents]
        token = page.next_page_token
        if not token:
            break
    assert names == [f"ag{i:02d}" for i in range(16)]
    for method in ("ListClusters", "ListAllocations", "ListUsers"):
        whole = getattr(admin, method)(a.ListRequest(), timeout=10)
        first = getattr(admin, method)(a.ListRequest(page_size=1), timeout=10)
        assert first.total_size == whole.total_size and bool(first.next_page_token) == (whole.total_size > 1)


def test_a_token_whose_listing_is_gone_is_refused_as_expired(stubs):
    admin = stubs["admin"]
    first = admin.ListAgents(a.ListRequest(page_size=3), timeout=10)
    version, offset, digest = json.loads(base64.urlsafe_b64decode(first.next_page_token + "=="))
    # the same filters at a moment whose listing was never kept: as a token after the listing's minutes are up
    stale = base64.urlsafe_b64encode(json.dumps([version + 10**6, offset, digest]).encode()).decode().rstrip("=")
    code, found = refusal(lambda: admin.ListAgents(a.ListRequest(page_size=3, page_token=stale), timeout=10))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and found["ErrorInfo"].reason == "LISTING_EXPIRED"
    assert "list again from the first page" in found["PreconditionFailure"].violations[0].description


def test_machines_come_whole_or_only_those_some_blocks_span(stubs):
    """What `vipu info -N/-s` reads (every machine, its IPUs by state) and the queue's node lists (only the
    machines its jobs' blocks span); a block outside the Pod is refused naming blocks."""
    parts = stubs["partitions"]
    whole = parts.ListMachines(p.ListMachinesRequest(), timeout=10)
    assert [m.name for m in whole.machines] == [f"ag{i:02d}" for i in range(16)] and whole.ipus_per_machine == 4
    assert all((m.ipus, m.idle + m.allocated + m.draining + m.drained + m.failed) == (4, 4) for m in whole.machines)
    some = parts.ListMachines(p.ListMachinesRequest(blocks=[p.IpuBlock(first_ipu=8, ipus=8),
                                                            p.IpuBlock(first_ipu=60, ipus=1)]), timeout=10)
    assert [m.machine for m in some.machines] == [2, 3, 15] and some.ipus_per_machine == 4
    code, found = refusal(lambda: parts.ListMachines(p.ListMachinesRequest(
        blocks=[p.IpuBlock(first_ipu=60, ipus=8)]), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and fields(found) == ["blocks"], found
