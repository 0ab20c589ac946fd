"""Builders for the training tests: small workloads with only the fields a test cares about, and runs of both
trainers on them."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from vipu.fabric import LocalTransport
from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod
from vipu.jobs.train_spec import TrainWorkload
from vipu.jobs.train import run_training, train_reference

RTOL, ATOL = 1e-5, 1e-6  # fp32: tighter than the rtol 1e-4, atol 1e-5


@lru_cache(maxsize=None)
def pod(name: str = "bow-pod16") -> PodConfig:
    return load_pod(name)


def mlp(layers=4, hidden=16, inputs=12, outputs=5, **kw) -> dict:
    return {"kind": "mlp", "layers": layers, "hidden": hidden, "inputs": inputs, "outputs": outputs, "dtype": "fp32",
            **kw}


def transformer(layers=2, hidden=16, heads=4, seq_len=6, **kw) -> dict:
    return {"kind": "transformer", "layers": layers, "hidden": hidden, "heads": heads, "seq_len": seq_len,
            "dtype": "fp32", **kw}


def workload(model: dict, optimizer="sgd", steps=4, lr=None, seed=11, **layout) -> TrainWorkload:
    layout = {"micro_batch": 3, **layout}
    lr = lr if lr is not None else (0.05 if optimizer == "sgd" else 3e-3)
    return TrainWorkload(model=model, layout=layout, optimizer=optimizer, steps=steps, learning_rate=lr, seed=seed)


@lru_cache(maxsize=None)
def _reference(key: str):
    w = TrainWorkload.model_validate_json(key)
    return train_reference(w)


def reference(w: TrainWorkload) -> tuple[list[float], dict[str, np.ndarray]]:
    """Single-device losses and final weights (cached per workload)."""
    return _reference(w.model_dump_json())


class KeepingTransport(LocalTransport):
    """A LocalTransport that remembers every tensor name put on each IPU."""

    def __init__(self):
        super().__init__()
        self.seen: set[tuple[int, str]] = set()

    def put_tensor(self, ipu, name, array, tiles=None):
        self.seen.add((ipu, name))
        super().put_tensor(ipu, name, array, tiles)


def run(w: TrainWorkload, first_ipu: int = 0, pod_name: str = "bow-pod16", **kwargs):
    return run_training(w, pod(pod_name), first_ipu, **kwargs)
