"""docs/api.md lists every reason a refusal can carry, and no reason the code never gives."""

from __future__ import annotations

import re
from pathlib import Path

from vipu.client import api_error

ROOT = Path(__file__).resolve().parents[2]
# the kinds refusals name an object of (resource=(kind, name)): each gets KIND_NOT_FOUND, and the creatable ones
# KIND_EXISTS (vipu/errors.py)
FOUND_KINDS = ("job", "partition", "agent", "cluster", "allocation", "user")
CREATED_KINDS = ("partition", "agent", "cluster", "allocation", "user")


def documented() -> set[str]:
    rows = [line.split("|")[1] for line in (ROOT / "docs/api.md").read_text().splitlines()
            if re.match(r"\| [A-Z_]+[ ,|]", line)]
    return {name.strip() for row in rows for name in row.split(",")}


def given_by_the_code() -> set[str]:
    text = "\n".join(path.read_text() for path in (ROOT / "vipu").rglob("*.py"))
    literal = set(re.findall(r'\breason ?= ?"([A-Z][A-Z_]+)"', text))
    derived = {f"{k.upper()}_NOT_FOUND" for k in FOUND_KINDS} | {f"{k.upper()}_EXISTS" for k in CREATED_KINDS}
    client = {value for name, value in vars(api_error).items() if name == value}  # UNREACHABLE = "UNREACHABLE"
    return literal | derived | client


def test_every_reason_is_documented_and_every_documented_reason_is_given():
    assert given_by_the_code() == documented()
