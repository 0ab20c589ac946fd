"""The control plane: what the edges (gRPC, metrics, the server's start-up) call, and the one loop that drives the
scheduler live, in replay and in tests.

plane.py (ControlPlane: owns the scheduler, partitions, store, clock, lock, machines; job_ops, job_views,
partition_ops and admin_ops hold its operations), snapshot.py (reads without the lock, pages) and pacing.py (reads yield to writes),
lock.py (the lock and its group commit), driver.py (the event heap and its executors), realtime.py (the driver on
the wall clock), executor.py (the live executor: partitions, machines, workload runners), workloads.py (the
registry of workload kinds), accounts.py (the Unix account a user's program runs as), startup.py (opening a state
folder and recovering), output_files.py (sbatch --output files), instruments.py (the counters the metrics edge
exports).
"""
