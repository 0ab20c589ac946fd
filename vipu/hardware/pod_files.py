"""Reading a Pod: a preset by name (bow-pod16/64/128/256/1024), or the YAML or JSON file of a site's own Pod.

A site's file may name a machine preset (bow-2000) for the chip, machine and link figures and give only its own
counts; what it gives itself wins. Every refusal names the file and the field, as the user wrote them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from vipu.documents import read_document
from vipu.errors import InvalidArgument
from vipu.hardware.pod import PodConfig
from vipu.validation import describe

PRESETS = ("bow-pod16", "bow-pod64", "bow-pod128", "bow-pod256", "bow-pod1024")


def _preset_text(name: str) -> str:
    return resources.files("vipu.hardware").joinpath("presets", f"{name}.yaml").read_text()


def _known_preset(name: str) -> bool:
    return resources.files("vipu.hardware").joinpath("presets", f"{name}.yaml").is_file()


def parse_pod(data: object, source: str) -> PodConfig:
    """Validate a Pod description (already parsed YAML/JSON); `source` names it in error messages."""
    if data is None:
        raise InvalidArgument(f"invalid pod config {source}: it is empty; give name, ilds, machines_per_ild, ...")
    if not isinstance(data, dict):
        raise InvalidArgument(f"invalid pod config {source}: expected a mapping of fields, got {type(data).__name__}")
    data = dict(data)
    preset = data.get("machine_preset")
    if preset is not None:
        if not isinstance(preset, str) or not _known_preset(preset) or preset.startswith("bow-pod"):
            raise InvalidArgument(
                f"invalid pod config {source}: machine_preset {preset!r} is not a machine preset; use bow-2000"
                " or give ipu, machine and links inline"
            )
        hardware = yaml.safe_load(_preset_text(preset))
        for section, value in hardware.items():
            data.setdefault(section, value)
    try:
        return PodConfig.model_validate(data)
    except ValidationError as e:
        raise InvalidArgument(describe(e, f"pod config {source}", data=data, retell=_retold)) from None


# what a field of the wrong type needs, by pydantic's error type: (what is expected, the fix)
EXPECTED = {"int": ("a whole number", "write it as digits, e.g. 4"),
            "float": ("a number", "write it as digits, e.g. 1.0e9"),
            "bool": ("true or false", "write true or false"),
            "string": ("text", "write it as text, e.g. site"),
            "dict": ("a mapping of fields", "give its fields indented under it"),
            "model": ("a mapping of fields", "give its fields indented under it")}

# a missing field of a Pod file, as a line to add
EXAMPLES = {"name": "name: site", "ilds": "ilds: 4", "machines_per_ild": "machines_per_ild: 16",
            "ild_topology": "ild_topology: torus", "ipu": "machine_preset: bow-2000",
            "machine": "machine_preset: bow-2000", "links": "machine_preset: bow-2000"}


def _retold(item: dict) -> str | None:
    """pydantic's wording of a wrong type or an unknown choice, retold as what was given, what is expected and the
    fix; None for the kinds describe() already tells with a fix (missing, unknown, out of bounds, ours)."""
    given, kind = item.get("input"), item["type"]
    if kind == "missing" and len(item["loc"]) == 1 and item["loc"][0] in EXAMPLES:
        return f"required; add it, e.g. `{EXAMPLES[item['loc'][0]]}`"
    if kind == "literal_error":
        choices = item["ctx"]["expected"].replace("'", "")
        return f"{given!r} is not one of {choices}; use one of them"
    for prefix, (expected, fix) in EXPECTED.items():
        if kind.startswith(f"{prefix}_") and kind.endswith(("_type", "_parsing", "_from_float", "_fraction")):
            shown = type(given).__name__ if isinstance(given, (dict, list)) else repr(given)
            return f"{shown} is not {expected}; {fix}"
    return None


def preset_with(ipus: int) -> str | None:
    """The smallest preset with at least `ipus` IPUs (a fix to name when a Pod is too small), if any."""
    return next((name for name in PRESETS if load_pod(name).ipus >= ipus), None)


def load_pod(name_or_path: str, given_as: str = "--pod") -> PodConfig:
    """A preset name (bow-pod64) or the path of a YAML/JSON file describing a site's own Pod; `given_as` is where
    the user wrote it (a flag, or a spec's field), for the refusal."""
    if name_or_path in PRESETS:
        return parse_pod(yaml.safe_load(_preset_text(name_or_path)), name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise InvalidArgument(
            f"{given_as} {name_or_path!r} is neither a preset ({', '.join(PRESETS)}) nor a readable file;"
            " pick a preset or give the path of a pod config"
        )
    try:
        text = path.read_text()
    except UnicodeDecodeError as e:
        raise InvalidArgument(f"invalid pod config {path}: not UTF-8 text (bad byte at offset {e.start}); give a"
                              " YAML or JSON file") from None
    return parse_pod(read_document(text, f"pod config {path}", as_json=path.suffix == ".json" or None), str(path))
