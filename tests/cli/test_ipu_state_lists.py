"""The IPU states `vipu info` counts are the controller's own list (vipu/partition/ipu_states.py), taken without
the controller's modules: the CLI's read paths do not pay for them."""

from __future__ import annotations

import subprocess
import sys

from vipu.cli import node_info
from vipu.partition import ipu_states, ipu_status


def test_the_cli_and_the_controller_count_the_same_ipu_states():
    """Regression: node_info kept a copy of ipu_status's list, to be kept in step by hand."""
    assert node_info.IPU_STATES is ipu_status.IPU_STATES is ipu_states.IPU_STATES
    assert node_info.IN_USE is ipu_states.IN_USE and set(ipu_states.IN_USE) < set(ipu_states.IPU_STATES)


def test_vipu_info_imports_no_controller_module_for_them():
    code = "import sys, vipu.cli.node_info; print(sorted(m for m in sys.modules if m in {'vipu.partition.ipu_status'," \
           " 'vipu.partition.pod_state', 'pydantic'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
