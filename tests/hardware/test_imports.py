"""The hardware model sits under everything else: it imports nothing of vipu but errors, validation, documents and
spec_numbers (leaves that import no other part of vipu)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vipu.hardware

ALLOWED = {"vipu.errors", "vipu.validation", "vipu.documents", "vipu.spec_numbers"}
MODULES = sorted(Path(vipu.hardware.__file__).parent.glob("*.py"))


def vipu_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "vipu" or name.startswith("vipu.")}


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_hardware_imports_only_the_leaves_of_vipu(path):
    stray = {name for name in vipu_imports(path) if name not in ALLOWED and not name.startswith("vipu.hardware")}
    assert not stray, f"{path.name} imports {sorted(stray)}; the hardware model must not depend on the rest of vipu"
