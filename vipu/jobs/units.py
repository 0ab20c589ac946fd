"""Bytes as the reports print them: binary units everywhere (a tile's SRAM is 624 KiB), so `vipu plan` and
`vipu logs` give the same figure for the same bytes."""

from __future__ import annotations


def size(nbytes: float) -> str:
    """Bytes as 812 B, 41.3 KiB, 1.2 MiB, 3.0 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:,.0f} {unit}" if unit == "B" else f"{nbytes:,.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")
