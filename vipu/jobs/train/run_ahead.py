"""Steps that run ahead of the machines: where a read waits for the machine actors (a deferred RayTransport), a
step needs no value back from them, and the checks of what they hold wait until several steps have gathered.

Why: on Ray every wait is a call to each machine and back (about 1.5 ms on this project's VM, and about 2 ms of
the actor process's own CPU to take a call in and answer it), more than a whole step of a small job in-process.
With one wait a step, Ray stays several times slower than in-process whatever the step does. Running ahead, a step
goes on with values it has itself, and the machines get several steps' calls in one batch:
- the weights are those it put at the last step's end (as without running ahead, parallel.py), the optimiser state
  too (RunAhead.state);
- the data-parallel allreduce of the gradients also runs, the same schedule, on the in-process mirror, and the
  update takes the mirror's sums (data_parallel_ahead), as a tensor-parallel collective does (Fabric._exchange);
- what the machines computed (each step's gradient sums, pipeline sends and tensor-parallel collectives) is still
  read back and compared bit for bit (Fabric.expect, check_expected), as are the weights and the state they hold,
  on the step that checks: once AHEAD_STEPS steps, half of AHEAD_BYTES of such reads or AHEAD_S seconds have
  gathered, and at the run's end (ParallelTrainer.finish). A machine's error, or values that differ, fail the run
  then: at most AHEAD_STEPS - 1 updates later than a check before each update would. The weights and state the
  machines hold are read on that step only: they are what the step before put, and reading them every step would
  double what travels back.

Only layouts whose weights stay as put between steps (no RTS, nothing in Streaming Memory) run ahead, and only
where a step's reads are small beside AHEAD_BYTES: a large model's step waits once, as before, so that its reads
are not held for several steps.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from vipu.jobs.train.data_path import Fabric, on_groups
from vipu.jobs.train.transport_views import Unrecorded

AHEAD_STEPS = 8  # steps whose checks gather before they are made: one batch of calls to each machine
AHEAD_BYTES = 64 << 20  # the reads that may gather before they are checked (each is held until then)
AHEAD_S = 0.25  # the longest the checks wait, in the trainer's clock: slow steps gain nothing by waiting longer,
# and the machines' counters (`vipu top`) and a lost machine are then seen within it


def runs_ahead(fabric: Fabric, weights_as_put: bool, streamed: bool, step_bytes: int) -> bool:
    """Whether a trainer's steps run ahead: reads wait (a mirror exists), the weights stay as put, nothing streams,
    and `step_bytes` (what one step reads back to check) is at most half of AHEAD_BYTES."""
    return fabric.mirror is not None and weights_as_put and not streamed and 2 * step_bytes <= AHEAD_BYTES


def copies(arrays: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Arrays to check later that the step will change in place meanwhile."""
    return {ipu: a.copy() for ipu, a in arrays.items()}


def data_parallel_ahead(fabric: Fabric, name: str, arrays: dict[int, np.ndarray]) -> tuple[dict[int, np.ndarray],
                                                                                             float]:
    """`arrays` put as `name` and summed over the replicas (Fabric.data_parallel_allreduce) on the machines; the
    same on the mirror, whose sums are returned (with the allreduce's seconds) and checked against the machines'
    later."""
    fabric.put(name, arrays, handed=True)  # a step's own accumulators (parallel.py), not written again
    seconds = fabric.data_parallel_allreduce(name)
    fabric.mirror.put_tensors(name, arrays)
    if fabric.r > 1:
        on_groups("allreduce", fabric.replica_groups(), name, Unrecorded(fabric.mirror), fabric.topology,
                  fabric.partition)
    got = fabric.mirror.get_tensors(name, list(arrays))
    fabric.expect(name, got)
    return got, seconds


class RunAhead:
    """A running-ahead trainer's optimiser state, as it put it last, and which steps check what has gathered."""

    def __init__(self, fabric: Fabric, state: dict[str, dict[int, np.ndarray]], clock: Callable[[], float]):
        self.fabric, self.state, self.clock = fabric, state, clock
        self.steps = 0  # steps since the last check
        self.since = clock()  # when the last check was
        self.checking = False  # whether the current step checks (begin)

    def begin(self, weights: dict[int, np.ndarray]) -> None:
        """Called at a step's start with the weights as put: sets whether it is the step that checks what has
        gathered (checking), once AHEAD_STEPS steps, half of AHEAD_BYTES of reads (a step's own reads stay below that
        half: runs_ahead) or AHEAD_S seconds have. That step also checks the weights and state the machines hold."""
        self.steps += 1
        held = sum(a.nbytes for _, _, arrays in self.fabric.expected for a in arrays.values())
        now = self.clock()
        self.checking = self.steps >= AHEAD_STEPS or 2 * held >= AHEAD_BYTES or now - self.since >= AHEAD_S
        if self.checking:
            self.steps, self.since = 0, now
            self.expect_held(weights)

    def expect_held(self, weights: dict[int, np.ndarray]) -> None:
        """The weights and state the machines hold, expected to be these: copies, as the step updates its own in
        place before the check."""
        self.fabric.expect("params", copies(weights))
        for name, arrays in self.state.items():
            self.fabric.expect(name, copies(arrays))
