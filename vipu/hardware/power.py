"""Emulated power, temperature and clock of a Bow IPU: a simple, documented model, so dashboards and alerts
have the series gc-monitor users know.

Assumptions (nothing here is published as a formula): power rises linearly with utilisation from an idle floor
(40 W) to a loaded ceiling (150 W; gc-monitor shows ~92 W on a busy Bow IPU, in the middle of that range); the die
sits 0.3 degC per watt above a 30 degC inlet and the board 0.15 degC per watt; the clock is fixed at the preset's
1.85 GHz (Bow IPUs do not scale their clock with load).
"""

from __future__ import annotations

IDLE_W = 40.0
LOADED_W = 150.0
INLET_C = 30.0
DIE_C_PER_W = 0.3
BOARD_C_PER_W = 0.15


def power_watts(utilisation: float) -> float:
    u = min(max(utilisation, 0.0), 1.0)
    return IDLE_W + (LOADED_W - IDLE_W) * u


def temperatures_celsius(utilisation: float) -> dict[str, float]:
    watts = power_watts(utilisation)
    return {"die": INLET_C + DIE_C_PER_W * watts, "board": INLET_C + BOARD_C_PER_W * watts}
