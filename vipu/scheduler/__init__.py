"""The Slurm-style batch scheduler of vipu-sim, as plain Python with no I/O.

Why a package of its own: the queue (pending work) is kept apart from capacity and placement (vipu/partition), and
every decision is a pure function of a snapshot and `now`, so the live gRPC server and the virtual-time trace replay
run the very same code. Nothing here reads the system time, opens a socket or imports gRPC, Ray or SQL; side
effects (creating partitions, running workloads, writing the store) are carried out by whoever calls it.
"""
