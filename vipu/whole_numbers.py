"""Whole numbers in job specs, plan files, Pod files and scheduler configs: YAML's true and false are not 1 and 0.

pydantic's lax int reads `r: true` as 1 (a Python bool is an int), so a layout that wrote a flag where a number
goes was planned and run with 1, and no refusal mentioned the `true`. Strict, an int refuses it (and "4" or 4.0)
as "Input should be a valid integer", which validation.describe() completes with its fix ("give a number, not true
or false"). Every integer field of those models takes one of these types, so the rule lives here alone.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Whole = Annotated[int, Field(strict=True)]
Count = Annotated[int, Field(strict=True, gt=0)]  # a positive whole number
