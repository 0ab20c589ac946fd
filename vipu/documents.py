"""The YAML and JSON files users write (job specs, pod and scheduler configs), parsed one way.

Why not plain yaml.safe_load / json.loads: both keep the last of two equal keys, so a spec saying `name: a` and
later `name: b` was silently read as b; a repeated key is almost always a paste or merge mistake, and Slurm's and
Kubernetes' users expect it refused.
"""

from __future__ import annotations

import json
import re

import yaml

from vipu.errors import InvalidArgument


class DuplicateKey(yaml.YAMLError):
    """A mapping gives the same key twice (a YAMLError, so callers that report bad syntax report this too)."""


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    if any(key_node.tag == "tag:yaml.org,2002:merge" for key_node, _ in node.value):
        return loader.construct_mapping(node, deep=deep)  # `<<:` merges: overriding a merged key is their point
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: construct_mapping refuses it with its own message
            continue
        if repeated:
            raise DuplicateKey(f"field {key!r} is given twice (line {key_node.start_mark.line + 1}); keep one")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


class HugeNumber(yaml.YAMLError):
    """A number longer than Python converts (4,300 digits): no field takes one, and Python's own words name none."""


def _int(loader: _Loader, node: yaml.ScalarNode) -> int:
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        raise HugeNumber(f"the number at line {node.start_mark.line + 1} has {len(node.value):,} digits; no field"
                         " takes one that long") from None


_Loader.add_constructor("tag:yaml.org,2002:int", _int)


def _timestamp(loader: _Loader, node: yaml.ScalarNode) -> str:
    """An unquoted date stays text, for the field to check. Why: PyYAML builds a datetime itself, and an invalid
    one (2026-13-45, 2026-02-30) failed there, naming neither the field nor the reason; the fields that take times
    read the text as they read it quoted or in JSON."""
    return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"field {key!r} is given twice; keep one")
        out[key] = value
    return out


def parse_document(text: str, as_json: bool | None = None) -> object:
    """JSON when `as_json`, YAML when not; None: JSON when the text starts with '{' and parses as JSON (fast, and
    most specs sent over gRPC are), else YAML, which also reads flow mappings like {ipus: 4, time_limit: 10m}.
    Raises yaml.YAMLError (DuplicateKey included) or json.JSONDecodeError."""
    if as_json or (as_json is None and text.lstrip().startswith("{")):
        try:
            return json.loads(text, object_pairs_hook=_pairs)
        except json.JSONDecodeError:
            if as_json:
                raise
    if _nests_deeper(text, MAX_FLOW_DEPTH):
        raise RecursionError  # what PyYAML would raise, after about a second of CPU for each such request
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader


MAX_FLOW_DEPTH = 100  # [ and { open at once; no spec or config needs a tenth of it (brackets in strings count too)
_BRACKETS = re.compile(r"[\[\]{}]")


def _nests_deeper(text: str, limit: int) -> bool:
    depth = 0
    for m in _BRACKETS.finditer(text):
        depth += 1 if m.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def read_document(text: str, source: str, as_json: bool | None = None) -> object:
    """parse_document, with any failure as InvalidArgument naming `source` ("job spec", "pod config FILE")."""
    try:
        return parse_document(text, as_json)
    except (DuplicateKey, HugeNumber) as e:
        raise InvalidArgument(f"invalid {source}: {e}") from None
    except RecursionError:
        raise InvalidArgument(f"invalid {source}: it nests lists or mappings deeper than it can be read; no field"
                              " takes more than a few levels") from None
    except (yaml.YAMLError, json.JSONDecodeError) as e:
        raise InvalidArgument(f"invalid {source}: not valid YAML/JSON ({syntax_error(e)}); fix the syntax") from None
    except ValueError:  # JSON's int() past 4,300 digits (after JSONDecodeError, a ValueError of its own)
        raise InvalidArgument(f"invalid {source}: a number has more than 4,300 digits; no field takes one that long"
                              ) from None


def syntax_error(e: Exception) -> str:
    """Where the text stops being YAML or JSON and why: "line 3, column 7: mapping values are not allowed here",
    with what the parser was reading when it began elsewhere (an unclosed bracket's line)."""
    if isinstance(e, json.JSONDecodeError):
        return f"line {e.lineno}, column {e.colno}: {e.msg}"
    mark, problem = getattr(e, "problem_mark", None), getattr(e, "problem", None)
    if mark is None or not problem:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    where = f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    context, began = getattr(e, "context", None), getattr(e, "context_mark", None)
    if context and began is not None and (began.line, began.column) != (mark.line, mark.column):
        where += f" ({context} from line {began.line + 1}, column {began.column + 1})"
    return where
