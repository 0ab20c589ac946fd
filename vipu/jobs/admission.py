"""Whether a `train` job may be queued: its layout fits the IPUs' memory, and the emulator can run it (unless it
is only modelled: execute: false).

Why before the controller's lock: a layout that does not fit is refused with layouts that would, and that search
takes up to a second or so of CPU (bench/bench_suggest.py); the control plane runs this check first, so other
submissions and listings go on meanwhile.
"""

from __future__ import annotations

from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig


def check_train(spec, pod: PodConfig) -> None:
    """A train job (`spec`: its JobSpec) that can never fit is refused with a layout that would (the refusal
    `vipu plan` prints), and one the emulator cannot execute with why; both at once when both hold, so the
    suggested layout is not tried in vain. A modelled one (execute: false) computes nothing: only its fit counts,
    and its plan is kept for its run's start (train/modelled.py)."""
    # imported here: the planner and the emulator bring numpy, which a controller that only queues needs never load
    from vipu.jobs.suggest import check_fits
    from vipu.jobs.train.problem import check_runnable

    workload = spec.workload
    if workload.modelled:
        from vipu.jobs.train.modelled import remember

        remember(workload, pod, check_fits(workload, pod, ipus=spec.ipus))
        return
    try:
        check_fits(workload, pod, ipus=spec.ipus)
    except InvalidArgument as unfit:
        try:
            check_runnable(workload)
        except InvalidArgument as unrunnable:
            both = f"{unfit.message}; and whatever the layout, it cannot run here: {unrunnable.message}"
            raise InvalidArgument(both) from None
        raise
    try:
        check_runnable(workload)
    except InvalidArgument as unrunnable:  # it fits: it can be modelled
        raise InvalidArgument(f"{unrunnable.message}; or, as it fits, submit it with workload.execute: false to model"
                              " it (it holds its partition for its steps x the predicted step time, computing"
                              " nothing)") from None
