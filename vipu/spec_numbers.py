"""Numbers in job specs, plan files, Pod files and scheduler configs: YAML's true and false are not 1 and 0.

pydantic's lax int and float read `r: true` as 1 (a Python bool is an int), so a layout that wrote a flag where a
number goes was planned and run with 1, and no refusal mentioned the `true`. An int here is strict: it refuses a
boolean (and "4" or 4.0) as "Input should be a valid integer", which validation.describe() completes with its fix
("give a number, not true or false"). A float refuses a boolean the same way but stays lax otherwise: PyYAML reads
1e-3 as the text "1e-3", which a float field must still take. Every number field of those models takes one of
these types, so the rule lives here alone.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError


def _not_a_flag(value: object) -> object:
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "Input should be a valid number")
    return value


Whole = Annotated[int, Field(strict=True)]
Count = Annotated[int, Field(strict=True, gt=0)]  # a positive whole number
Number = Annotated[float, BeforeValidator(_not_a_flag)]
PositiveNumber = Annotated[float, BeforeValidator(_not_a_flag), Field(gt=0)]
