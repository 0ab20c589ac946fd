"""Builders for planner fixtures: small workloads with only the fields a test cares about."""

from __future__ import annotations

from functools import lru_cache

from vipu.hardware.pod import PodConfig
from vipu.hardware.pod_files import load_pod
from vipu.jobs import Assumptions, TrainWorkload

ASSUME = Assumptions()
SRAM = 1472 * 638976  # bow-2000.yaml: 1,472 tiles x 624 KiB = 940,572,672 bytes
RESERVED = 0.15 * SRAM  # assumptions.py: code and exchange buffers


@lru_cache(maxsize=None)
def pod(name: str = "bow-pod16") -> PodConfig:
    return load_pod(name)


def mlp(layers=3, hidden=16, inputs=8, outputs=4, dtype="fp32", optimizer="adam", master=True, **layout):
    return TrainWorkload(model={"kind": "mlp", "layers": layers, "hidden": hidden, "inputs": inputs,
                                "outputs": outputs, "dtype": dtype},
                         optimizer=optimizer, master_weights=master, layout=layout)


def transformer(layers=2, hidden=64, heads=4, seq_len=16, vocab=None, dtype="fp16", optimizer="adam", master=True,
                **layout):
    return TrainWorkload(model={"kind": "transformer", "layers": layers, "hidden": hidden, "heads": heads,
                                "seq_len": seq_len, "vocab": vocab, "dtype": dtype},
                         optimizer=optimizer, master_weights=master, layout=layout)


def bert_large(**layout):
    """BERT-Large's shape (24 x 1024, 16 heads, SL128, vocab 30,400), fp16 weights without a master copy."""
    return transformer(layers=24, hidden=1024, heads=16, seq_len=128, vocab=30400, master=False, **layout)
