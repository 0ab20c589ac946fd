"""The controller's host memory for programs' tensors (tensor_memory.py): every session's data counted against one
budget, a put past it refused before anything is stored, naming the bytes, the budget and the fix; what is freed,
received, replaced or left by an ended run given back."""

from __future__ import annotations

import numpy as np
import pytest

from vipu.errors import ResourceExhausted
from vipu.jobs.sessions.tensor_memory import TensorMemory
from vipu.server.arguments import parse_bytes
from vipu.jobs.sessions.tokens import Sessions

from tests.jobs.sessions.builders import machines_for, session

KIB = 1024


@pytest.fixture
def sessions():
    return Sessions(TensorMemory(budget=64 * KIB))


def test_a_put_past_the_budget_is_refused_naming_the_bytes_and_the_budget_and_stores_nothing(sessions):
    machines = machines_for(0, 4)
    s = session(machines=machines)
    sessions.open(s)
    s.put("w", {0: np.zeros(8 * KIB, np.float32), 1: np.zeros(4 * KIB, np.float32)})  # 48 KiB
    s.put("s", {2: np.zeros(2 * KIB, np.float32)}, "streaming")  # 8 KiB: 56 KiB held
    assert sessions.memory.held == 56 * KIB
    with pytest.raises(ResourceExhausted) as refused:
        s.put("big", {3: np.zeros(4 * KIB, np.float32)}, "streaming")
    error = refused.value
    assert error.reason == "TENSOR_MEMORY"
    assert "put 'big': 16,384 bytes (16.0 KiB) more would pass the controller's host memory for tensors" in error.message
    assert "programs hold 57,344 of its 65,536 bytes (64.0 KiB), this run 57,344" in error.message
    assert "Device.free" in error.message and "--tensor-memory" in error.message
    assert error.metadata == {"asked_bytes": "16384", "held_bytes": "57344", "budget_bytes": "65536"}
    assert sessions.memory.held == 56 * KIB
    assert machines[0][0].stats()["per_ipu"]  # (the machine is there) and nothing of "big" reached it:
    with pytest.raises(Exception, match="big"):
        s.get("big", [3])
    s.reserve("act", {3: 1 << 20})  # no data: not counted
    s.put("w", {0: np.zeros(8 * KIB, np.float32), 1: np.zeros(4 * KIB, np.float32)})  # a replace takes nothing more
    assert sessions.memory.held == 56 * KIB
    s.free("w", [0, 1])
    assert sessions.memory.held == 8 * KIB
    s.put("big", {3: np.zeros(4 * KIB, np.float32)}, "streaming")
    assert sessions.memory.held == 24 * KIB


def test_one_budget_over_every_run_first_come_and_an_ended_run_gives_its_bytes_back(sessions):
    first, second = session(first=0, job_id=7), session(first=4, job_id=8)
    token = sessions.open(first)
    sessions.open(second)
    first.put("w", {0: np.zeros(12 * KIB, np.float32)})  # 48 KiB
    with pytest.raises(ResourceExhausted, match="programs hold 49,152 of its 65,536 bytes.*this run 0"):
        second.put("w", {0: np.zeros(8 * KIB, np.float32)})
    sessions.close(token, "job 7 was cancelled")
    assert first.freed.wait(5) and sessions.memory.held == 0
    second.put("w", {0: np.zeros(8 * KIB, np.float32)})
    assert sessions.memory.held == 32 * KIB


def test_sends_and_collectives_count_what_they_leave_and_a_receive_gives_it_back(sessions):
    s = session()
    sessions.open(s)
    s.collective("allreduce", "g", None, {0: np.ones(KIB, np.float32), 1: np.ones(KIB, np.float32)}, 0)
    assert sessions.memory.held == 8 * KIB  # the result stays on both IPUs
    s.send("act", {0: np.ones(2 * KIB, np.float32)}, [2], 0)
    assert sessions.memory.held == 16 * KIB  # on its way: held on the receiver
    s.recv("act", [0], [2], 0)
    assert sessions.memory.held == 8 * KIB
    with pytest.raises(ResourceExhausted, match="allreduce 'h': 65,536 bytes"):
        s.collective("allreduce", "h", None, {0: np.ones(8 * KIB, np.float32), 1: np.ones(8 * KIB, np.float32)}, 0)
    assert sessions.memory.held == 8 * KIB


@pytest.mark.parametrize(("text", "want"), [("8G", 8 << 30), ("512MiB", 512 << 20), ("1.5k", 1536), ("4096", 4096)])
def test_a_budget_is_read_in_binary_units(text, want):
    assert parse_bytes(text) == want


@pytest.mark.parametrize("text", ["0", "-1G", "8Q", "lots", "", "0.5"])
def test_a_budget_that_is_no_size_is_refused_with_the_form(text):
    with pytest.raises(ValueError, match="give bytes above 0, e.g. 8G"):
        parse_bytes(text)
