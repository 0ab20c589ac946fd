"""The Pod's hardware model: what the emulated Bow Pod is made of, and what its parts cost in time.

Everything else depends down on this package (partition, fabric, jobs, workers); it imports nothing of vipu but
errors.py, validation.py and documents.py, so the figures are stated once and read the same everywhere.

Config: figures.py (the chip, machine and link figures), pod.py (PodConfig: the counts and the rules that make a
Pod coherent), pod_files.py (a preset by name or a site's own file), presets/*.yaml (each figure with its standing).
Layout: topology.py (where each IPU sits, the IPU-Link grid, rings through a block), links.py (each link's bandwidth
and latency, and the route a transfer takes). Costs, pure functions of the figures: bsp_cost.py (one IPU's compute,
sync and exchange in a BSP compute set), streaming_cost.py (Streaming Memory transfers), power.py (power and
temperature).
"""
