"""Turn a pydantic ValidationError into one line that names each bad field and what it needs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module for MAX_SPEC_BYTES; pydantic would add ~30 ms to its start-up
    from collections.abc import Callable

    from pydantic import ValidationError

MAX_SPEC_BYTES = 1 << 20  # a job spec file or request: 1 MiB (the CLI, the planner and the controller agree)
MAX_REQUEST_BYTES = 16 << 20  # what the controller reads of one call: above one spec, so a spec too big gets our message
MAX_REQUEST_ID = 128  # a submit's request_id, in characters
MAX_SPECS_PER_CALL = 10_000  # SubmitJobs: specs in one call (a queue of 10,000 from one command)


SCALARS = ("int_", "float_", "bool_", "string_")  # pydantic's error types of a field that takes one plain value


def _shown(given: object) -> str:
    """A value as the user's YAML or JSON wrote it: true, false and null, not Python's True, False and None."""
    return json.dumps(given) if isinstance(given, bool) or given is None else repr(given)


def _fix(kind: str, given: object) -> str:
    """A hint for a scalar of the wrong type: the usual cause is a number or boolean written as a string, or the
    other way round."""
    numeric = isinstance(given, str) and given.strip().lstrip("-").replace(".", "", 1).isdigit()
    if kind.startswith(("int_", "float_")) and numeric:
        return "; write the number without quotes"
    if kind.startswith(("int_", "float_")) and isinstance(given, bool):
        return "; give a number, not true or false"
    if kind.startswith("string_") and isinstance(given, (bool, int, float)):
        return f"; quote it ('{_shown(given)}') to give it as text"
    if given is None:  # `name:` with nothing after it reads as null
        return "; give a value"
    if kind.startswith("int_") and isinstance(given, float):  # 1e308 is integral too: no 309-digit suggestion
        return f"; write a whole number{f' ({int(given)})' if given.is_integer() and abs(given) < 1e15 else ''}"
    if kind.startswith("bool_"):
        return "; use true or false"
    if kind.startswith("int_") and isinstance(given, str):
        return "; give a whole number"
    if kind.startswith("float_") and isinstance(given, str):
        return "; give a number"
    return ""


def _path(loc: tuple, data: object) -> str:
    """A location as a dotted path in the user's document. pydantic puts a tagged union member's tag in the location
    after the field (workload.train.steps for a train workload's steps), where the document has no such key: the
    tag is the value of the field's `kind` (every tagged union here is told apart by its `kind`), so it is left out."""
    parts, node = [], data
    for p in loc:
        if isinstance(node, dict) and p not in node and node.get("kind") == p:
            continue
        parts.append(str(p))
        if isinstance(node, dict):
            node = node.get(p)
        elif isinstance(node, list) and isinstance(p, int) and -len(node) <= p < len(node):
            node = node[p]
        else:
            node = None
    return ".".join(parts)


# a number out of its bounds: pydantic's error type -> (too what, what to give, the bound in its context)
BOUNDS = {"less_than_equal": ("large", "at most", "le"), "greater_than_equal": ("small", "at least", "ge"),
          "less_than": ("large", "less than", "lt"), "greater_than": ("small", "more than", "gt")}


def violations(error: ValidationError, unknown: dict[str, str] | None = None, data: object = None,
               retell: Callable[[dict], str | None] | None = None) -> list[tuple[str, str]]:
    """Each bad field of `error` (at most 5) as (its path in the document, what it needs): what describe() joins
    into a line, and what a refusal's details list field by field. `unknown`, `data`, `retell`: as describe()'s."""
    found = []
    for item in error.errors()[:5]:
        field = _path(item["loc"], data)
        message = item["msg"].removeprefix("Value error, ")  # pydantic's prefix for our validators' messages
        if item["type"] == "extra_forbidden":
            message = (unknown or {}).get(field) or "unknown field; remove it (check the spelling against the documented fields)"
        elif item["type"] == "missing":
            message = "required; add it"
        elif item["type"] == "union_tag_invalid":  # a workload's kind: no such kind
            tags = item["ctx"]["expected_tags"].replace("'", "")
            message = f"{item['ctx']['tag']!r} is not one of the kinds; use one of {tags}"
            field = _path((*item["loc"], item["ctx"]["discriminator"].strip("'")), data)
        elif item["type"] == "union_tag_not_found":  # a workload or model with no kind (an empty typed oneof)
            field = _path((*item["loc"], item["ctx"]["discriminator"].strip("'")), data)
            message = "missing; say which kind this is (a typed JobSpec: set one member of its kind)"
        elif item["type"] in BOUNDS:
            word, give, key = BOUNDS[item["type"]]
            given = item["input"]
            said = "is not a number" if isinstance(given, float) and given != given else f"is too {word}"  # NaN
            message = f"{given!r} {said}; give {give} {item['ctx'][key]}"
        elif item["type"] in ("string_too_long", "too_long") and hasattr(item.get("input"), "__len__"):
            limit = item["ctx"]["max_length"]
            unit = "characters" if item["type"] == "string_too_long" else "items"
            message = f"{len(item['input']):,} {unit} long; give at most {limit:,}"
        elif item["type"].endswith(("_type", "_parsing")) and not isinstance(item.get("input"), (dict, list)):
            message = f"{message}, not {_shown(item['input'])}{_fix(item['type'], item['input'])}"
        elif item["type"].startswith(SCALARS) and isinstance(item.get("input"), (dict, list)):
            shape = "a list" if isinstance(item["input"], list) else "a mapping"
            message = f"{message}, not {shape}; give one value"
        message = (retell and retell(item)) or message
        found.append((field, message))
    return found


def describe(error: ValidationError, what: str, unknown: dict[str, str] | None = None, data: object = None,
             retell: Callable[[dict], str | None] | None = None) -> str:
    """`what` names the thing being validated ("partition request", "pod config FILE"); `unknown` gives the message
    for a top-level field that is not one of the model's but means something elsewhere (a planning-only key);
    `data`, the document validated, lets each field be named by its path in it (see _path); `retell` may word a
    pydantic error (one of error.errors()) the caller's own way, or give None to keep the wording here."""
    parts = [f"{field}: {message}" if field else message
             for field, message in violations(error, unknown, data, retell)]
    more = len(error.errors()) - 5
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"invalid {what}: " + "; ".join(parts) + suffix
