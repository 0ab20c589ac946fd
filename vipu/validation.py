"""Turn a pydantic ValidationError into one line that names each bad field and what it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module for MAX_SPEC_BYTES; pydantic would add ~30 ms to its start-up
    from pydantic import ValidationError

MAX_SPEC_BYTES = 1 << 20  # a job spec file or request: 1 MiB (the CLI, the planner and the controller agree)


def describe(error: ValidationError, what: str) -> str:
    """`what` names the thing being validated ("partition request", "pod config FILE")."""
    parts = []
    for item in error.errors()[:5]:
        field = ".".join(str(p) for p in item["loc"]) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field; remove it (check the spelling against the documented fields)"
        elif item["type"] == "missing":
            message = "required; add it"
        parts.append(f"{field}: {message}")
    more = len(error.errors()) - 5
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"invalid {what}: " + "; ".join(parts) + suffix
