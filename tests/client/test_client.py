"""vipu.client's own rules: list calls page by page, a listing the controller dropped started again, and a refusal
read back into ApiError with its reason, fields and object."""

from __future__ import annotations

import grpc
import pytest

from vipu.client import ApiError, Client, Settings
from vipu.control.snapshot import ListingGone
from vipu.errors import InvalidArgument
from vipu.server import refusals
from vipu.v1 import job_pb2 as j


class Refused(grpc.RpcError):
    """What a call the controller refused raises: its status, details and origin mark as the server sends them."""

    def __init__(self, error, request=None):
        self.status = refusals.status(error, request)

    def code(self):
        return self.status.code

    def details(self):
        return self.status.details

    def trailing_metadata(self):
        return self.status.trailing_metadata


def offline() -> Client:
    return Client(Settings("127.0.0.1", 1, "u", None, None), timeout=5)


def listing(ids: list[int], gone_once: bool):
    """A fake ListJobs over `ids` in pages; with `gone_once`, the first request for a second page finds its listing
    dropped."""
    asked = []

    def call(request, timeout, metadata):
        asked.append((request.page_token, request.page_size))
        start = int(request.page_token or 0)
        if start and gone_once and sum(1 for token, _ in asked if token) == 1:
            raise Refused(ListingGone("page_token names a listing no longer kept"))
        end = start + request.page_size
        return j.ListJobsResponse(jobs=[j.Job(id=i) for i in ids[start:end]],
                                  next_page_token=str(end) if end < len(ids) else "")

    return call, asked


def test_items_follow_the_pages_to_the_end():
    call, asked = listing(list(range(1, 8)), gone_once=False)
    assert [x.id for x in offline().items(call, j.ListJobsRequest(page_size=3))] == list(range(1, 8))
    assert asked == [("", 3), ("3", 3), ("6", 3)]


def test_every_page_starts_a_dropped_listing_again_and_items_say_so():
    call, asked = listing(list(range(1, 8)), gone_once=True)
    merged = offline().every_page(call, j.ListJobsRequest(page_size=3))
    assert [x.id for x in merged.jobs] == list(range(1, 8)) and merged.next_page_token == ""
    assert [token for token, _ in asked] == ["", "3", "", "3", "6"]
    call, _ = listing(list(range(1, 8)), gone_once=True)
    with pytest.raises(ApiError) as gone:
        list(offline().items(call, j.ListJobsRequest(page_size=3)))
    assert (gone.value.code, gone.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "LISTING_EXPIRED")


def test_a_refusal_comes_back_with_its_reason_fields_and_object():
    def refuse(request, timeout, metadata):
        raise Refused(InvalidArgument("ipus is 0; give 1 or more"), request)

    with pytest.raises(ApiError) as refused:
        offline().call(refuse, j.SubmitJobRequest(spec=b"{ipus: 0}"))
    error = refused.value
    assert (error.code, error.reason, error.message) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD",
                                                          "ipus is 0; give 1 or more")
    assert error.field_violations == (("spec.ipus", "ipus is 0; give 1 or more"),) and error.from_controller


@pytest.mark.parametrize(("arguments", "named"), [
    ({"time_limit": "abc"}, "update(): time_limit='abc' cannot be sent ("),
    ({"time_limit": float("nan")}, "update(): time_limit=nan cannot be sent (not a finite number)"),
    ({"time_limit_add": float("inf")}, "update(): time_limit_add=inf cannot be sent (not a finite number)"),
    ({"nice": 10**12}, "update(): nice=1000000000000 cannot be sent ("),
    ({"begin": float("nan")}, "update(): begin=nan cannot be sent ("),
])
def test_an_update_argument_the_request_cannot_carry_is_an_api_error_naming_it(arguments, named):
    """Regression: these raised a bare ValueError, where docs/client.md says every failure is an ApiError."""
    with pytest.raises(ApiError) as refused:
        offline().update(1, **arguments)
    assert refused.value.message.startswith(named) and refused.value.reason == "BAD_SETTING"
