"""Stored records that do not load: which, and why in one plain line (the field and its problem, not pydantic's
text), for the start's refusal and the quarantine table (vipu-server --quarantine-bad-records).

Why bytes: a record whose bytes are not UTF-8 (random bytes over its page) failed SQLite's decoding of the whole
read, so one such record stopped every start, the repairing one too; read as bytes, it is named like any other.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, ValidationError

from vipu.errors import elided


class Damaged(NamedTuple):
    """A stored record that does not load: which, and why (shortened)."""

    kind: str
    name: str
    error: str


def record_problem(doc: bytes, model: type[BaseModel]) -> BaseModel | str:
    """The record parsed, or what is wrong with it in one plain line (which field, and why)."""
    try:
        doc.decode()
    except UnicodeDecodeError as e:
        return f"its bytes are not UTF-8 text (byte {e.start} of {len(doc)}): damaged on disk"
    try:
        return model.model_validate_json(doc)
    except ValidationError as e:
        problems = []
        for item in e.errors(include_url=False)[:2]:
            why = {"missing": "missing", "extra_forbidden": "not a field of this version's"}.get(item["type"],
                                                                                             item["msg"])
            given = item.get("input")
            if item["type"] not in ("missing", "json_invalid", "extra_forbidden") and not isinstance(given,
                                                                                              (dict, list)):
                why += f", not {elided(repr(given))}"
            problems.append(f"field {'.'.join(map(str, item['loc']))}: {why}" if item["loc"] else why)
        more = len(e.errors()) - len(problems)
        line = "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
        return line if len(line) <= 200 else line[:197] + "..."


class DamagedRecords(Exception):
    def __init__(self, damaged: list[Damaged]):
        super().__init__(f"{len(damaged)} damaged record(s)")
        self.damaged = damaged
