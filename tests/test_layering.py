"""The import rules of the architecture (docs/architecture.md), read from the code: the scheduler and the partition
rules import no edge and none of jobs, workers or fabric; the edges reach the domain only through the control
plane, never its stateful parts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "vipu"
PURE = ("scheduler", "partition")  # decisions and rules: plain Python, clock injected
NOT_BELOW_PURE = ("vipu.jobs", "vipu.workers", "vipu.fabric", "vipu.server", "vipu.cli", "vipu.control",
                  "vipu.metrics", "vipu.replay", "vipu.store", "vipu.v1")
EXECUTION = ("fabric", "workers", "jobs")  # stand on the domain and the hardware model, below the control plane
ABOVE_EXECUTION = ("vipu.control", "vipu.server", "vipu.cli", "vipu.metrics", "vipu.replay")
EDGE_PACKAGES = ("vipu.server", "vipu.cli", "vipu.metrics")
EDGES = ("server", "metrics")
# the domain's stateful parts, which only the control plane holds
INTERNAL = ("vipu.scheduler.scheduler", "vipu.scheduler.table", "vipu.scheduler.reasons", "vipu.scheduler.cycle",
            "vipu.scheduler.order", "vipu.scheduler.view", "vipu.scheduler.holds", "vipu.scheduler.startable",
            "vipu.scheduler.recovery", "vipu.scheduler.submission", "vipu.scheduler.policies", "vipu.scheduler.claims",
            "vipu.partition.controller", "vipu.partition.partitions", "vipu.partition.admin", "vipu.store",
            "vipu.jobs", "vipu.fabric", "vipu.workers.pool", "vipu.workers.machine", "vipu.workers.actor",
            "vipu.control.driver", "vipu.control.executor", "vipu.control.lock")
# what an edge may not reach through the control plane either
INTERNAL_ATTRIBUTES = {"scheduler", "controller", "table", "driver", "runners", "executor", "listings", "store",
                       "machines"}


def modules(package: str):
    for path in sorted((ROOT / package).rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def imported(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("package", PURE)
def test_the_pure_packages_import_no_edge_and_no_execution(package):
    wrong = [f"{path.relative_to(ROOT.parent)} imports {name}" for path, tree in modules(package)
             for name in imported(tree) if under(name, NOT_BELOW_PURE)]
    assert wrong == []


@pytest.mark.parametrize("package", EXECUTION)
def test_execution_imports_nothing_above_it(package):
    """Workers, fabric and workload kinds are called by the control plane, never the other way round."""
    wrong = [f"{path.relative_to(ROOT.parent)} imports {name}" for path, tree in modules(package)
             for name in imported(tree) if under(name, ABOVE_EXECUTION)]
    assert wrong == []


def test_the_control_plane_imports_no_edge():
    wrong = [f"{path.relative_to(ROOT.parent)} imports {name}" for path, tree in modules("control")
             for name in imported(tree) if under(name, EDGE_PACKAGES)]
    assert wrong == []


@pytest.mark.parametrize("package", EDGES)
def test_edges_reach_the_domain_only_through_the_control_plane(package):
    wrong = [f"{path.relative_to(ROOT.parent)} imports {name}" for path, tree in modules(package)
             for name in imported(tree) if under(name, INTERNAL)]
    wrong += [f"{path.relative_to(ROOT.parent)}:{node.lineno} reads plane.{node.attr}"
              for path, tree in modules(package) for node in plane_reads(tree) if node.attr in INTERNAL_ATTRIBUTES]
    assert wrong == []


def plane_reads(tree: ast.AST) -> list[ast.Attribute]:
    """Attributes read off the control plane: `plane.x` or `self.plane.x`."""
    def is_plane(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "plane") or (
            isinstance(node, ast.Attribute) and node.attr == "plane" and isinstance(node.value, ast.Name))

    return [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and is_plane(node.value)]


def test_the_rules_catch_what_they_forbid(tmp_path, monkeypatch):
    """The checks above can fail: a module that breaks each rule is found."""
    tree = ast.parse("from vipu.scheduler.table import JobTable\nimport vipu.jobs.train\nx = plane.scheduler.table\n"
                     "y = self.plane.store\nz = pod.machines")
    assert [n for n in imported(tree) if under(n, INTERNAL)] == ["vipu.scheduler.table",
                                                               "vipu.scheduler.table.JobTable", "vipu.jobs.train"]
    assert sorted(n.attr for n in plane_reads(tree) if n.attr in INTERNAL_ATTRIBUTES) == ["scheduler", "store"]


def test_the_sdk_imports_only_itself_the_generated_api_and_the_errors():
    """vipu.sdk is what users' programs import: it brings none of the controller (its import stays light, and a
    program reaches the IPUs only through its session), and the engine may use its model code (vipu/sdk/nn)."""
    wrong = [f"{path.relative_to(ROOT.parent)} imports {name}" for path, tree in modules("sdk")
             for name in imported(tree) if under(name, ("vipu",)) and not under(name, ("vipu.sdk", "vipu.v1",
                                                                                     "vipu.errors"))]
    assert wrong == []


def test_no_module_name_means_two_things():
    """A module's name says what it is: the same name in two packages (spec.py, states.py) made a reader guess."""
    seen: dict[str, list[str]] = {}
    for path in ROOT.rglob("*.py"):
        if path.name != "__init__.py" and "v1" not in path.parts:
            seen.setdefault(path.name, []).append(str(path.parent.relative_to(ROOT.parent)))
    assert {name: places for name, places in seen.items() if len(places) > 1} == {}


def test_the_client_imports_only_itself_the_generated_api_and_the_errors():
    """vipu.client is what scripts and the CLI import to call the controller: none of the controller comes with it."""
    wrong = [f"{path.relative_to(ROOT.parent)} imports {name}" for path, tree in modules("client")
             for name in imported(tree) if under(name, ("vipu",)) and not under(name, ("vipu.client", "vipu.v1",
                                                                                     "vipu.errors"))]
    assert wrong == []


def test_no_module_is_over_400_lines():
    """A file past 400 lines usually holds two ideas (the project's rule); the generated API is not written here."""
    long = {str(path.relative_to(ROOT.parent)): n for path in ROOT.rglob("*.py") if "v1" not in path.parts
            for n in [len(path.read_text().splitlines())] if n > 400}
    assert long == {}
