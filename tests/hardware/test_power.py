"""The emulated power and temperature of a Bow IPU, as the metrics and dashboards show them."""

from __future__ import annotations

from vipu.hardware.power import power_watts, temperatures_celsius


def test_power_and_temperature_rise_with_utilisation():
    assert power_watts(0.0) == 40.0 and power_watts(1.0) == 150.0 and power_watts(2.0) == 150.0
    assert temperatures_celsius(1.0) == {"die": 30.0 + 0.3 * 150.0, "board": 30.0 + 0.15 * 150.0}
