"""Means over seeds and their 95% confidence intervals (Student's t), for replays with randomness in them
(`vipu simulate --seeds N` with drawn arrivals or run times).

Why t and not 1.96: papers replay a handful of seeds, and with 5 the normal quantile makes an interval 40% too
narrow. The quantiles below are the standard table's (two-sided 95%, df = seeds - 1); past 30 degrees of freedom
1.96 + 2.5 / df stays within 0.001 of it.
"""

from __future__ import annotations

import math
from typing import Sequence

T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile(df: int) -> float:
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.5 / df


def mean_and_halfwidth(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of its 95% confidence interval); the half-width is 0 for fewer than two values."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, t_quantile(n - 1) * math.sqrt(variance / n)
