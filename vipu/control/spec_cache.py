"""Job specs already validated, by their text: a client that submits the same spec again and again (a loop of
sbatch, an array script, a benchmark) has it parsed and checked once.

Why it is safe: a spec's validation is a function of its text, where it came from (named in messages) and the
fields set over it; it reads no clock (a calendar `begin` is kept as text and fixed at submit, begin.py) and no
state of the controller; JobSpec is frozen, so one parsed spec can serve every submission of its text. Only
successes are kept: a refusal is worked out again, with its message. What depends on the caller or the Pod is
checked on every submission (job_ops._checked).
"""

from __future__ import annotations

import json

from vipu.scheduler.job_spec import JobSpec, load_spec, parse_spec

KEPT = 256  # distinct specs remembered; past that the cache starts again (a controller sees few distinct specs)


class SpecCache:
    def __init__(self, kept: int = KEPT):
        self.kept = kept
        self._specs: dict[tuple, JobSpec] = {}

    def load(self, text: str | bytes, source: str) -> JobSpec:
        """load_spec(text, source), once per distinct text."""
        return self._get(("load", text, source), lambda: load_spec(text, source))

    def with_fields(self, text: str | bytes, spec: JobSpec, fields: dict, source: str) -> JobSpec:
        """`spec` (the one `text` gives) with `fields` set over it, validated as parse_spec validates it."""
        if isinstance(text, dict):  # a typed spec, already a mapping: nothing to save parsing
            return parse_spec({**spec.model_dump(exclude_unset=True), **fields}, source)
        key = ("fields", text, source, json.dumps(fields, sort_keys=True, default=repr))
        return self._get(key, lambda: parse_spec({**spec.model_dump(exclude_unset=True), **fields}, source))

    def _get(self, key: tuple, make) -> JobSpec:
        spec = self._specs.get(key)
        if spec is None:
            spec = make()
            if len(self._specs) >= self.kept:
                self._specs.clear()
            self._specs[key] = spec
        return spec
