"""The emulated IPU-Machines: one Ray actor per Bow-2000 (4 IPUs), created lazily for the machines jobs use.

Pure domain, the machines' state on the figures of vipu/hardware: tile_sram.py (tile SRAM), streaming_memory.py
(Streaming Memory), bsp.py (BSP cost rules and counters), machine.py (one machine), telemetry.py (an IPU's reading from its
machine's stats). Ray edge: actor.py (MachineActor, a thin wrapper) and pool.py (MachinePool: lazy creation,
pinning, fault injection). Importing this package does not import Ray; only actor.py and pool.py do.
"""
