"""Every transport offers the whole Transport protocol, each method with the protocol's signature (the same
parameters in the same order, the same defaults and annotations), so callers never probe for a method."""

from __future__ import annotations

import inspect

import pytest

from vipu.fabric.local_transport import LocalTransport
from vipu.fabric.machine_transport import MachineTransport
from vipu.fabric.ray_transport import RayTransport
from vipu.fabric.transport import Transport, WrappedTransport
from vipu.jobs.train.data_path import PricedAs, Scoped

METHODS = sorted(name for name, value in vars(Transport).items() if callable(value) and not name.startswith("_"))
IMPLEMENTATIONS = [LocalTransport, RayTransport, MachineTransport, WrappedTransport, PricedAs, Scoped]


def test_the_protocol_has_every_method_its_callers_use():
    assert METHODS == [
        "free_tensor", "free_tensors", "get_tensor", "get_tensors", "get_tensors_later", "hold", "load", "offload", "put_offloaded", "put_tensor",
        "put_tensors", "record",
        "record_compute", "record_streaming", "reserve", "run_steps", "spec",
    ]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS, ids=lambda cls: cls.__name__)
def test_each_transport_has_the_method_with_the_protocols_signature(implementation, method):
    assert inspect.signature(getattr(implementation, method)) == inspect.signature(getattr(Transport, method))


def test_a_transport_says_whether_its_reads_wait():
    assert LocalTransport.deferred is False and MachineTransport.deferred is False
    local = LocalTransport()
    assert Scoped(PricedAs(local, "float16"), "run-1.").deferred is False
