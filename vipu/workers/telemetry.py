"""One IPU's reading from its machine's stats: the utilisation and SRAM that `vipu list ipus`, `vipu top` and the
Prometheus collector show for it (the power and temperature they derive from it: vipu/hardware/power.py)."""

from __future__ import annotations


def ipu_reading(machine_stats: dict | None, ipu: int, working: bool) -> tuple[float, int]:
    """(utilisation, SRAM bytes in use) of Pod-wide IPU `ipu` from its machine actor's stats() (None: no actor,
    idle). stats()["per_ipu"] is keyed by the Pod-wide IPU number as an int (Machine.stats; Ray's pickling keeps
    the type). An IPU that is not `working` (in no partition, or failed) does no work, whatever its machine last
    reported: utilisation is of the last step, which stays in the stats after the job has ended."""
    per_ipu = (machine_stats or {}).get("per_ipu", {}).get(ipu, {})
    utilisation = float(per_ipu.get("utilisation", 0.0)) if working else 0.0
    return utilisation, int(per_ipu.get("sram_used_bytes", 0))
