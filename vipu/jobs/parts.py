"""The parts a training step's time splits into, as `vipu plan` shows them and `vipu logs` reports them: (label,
field), in that order. The planner's StepTime (timing.py) and the emulator's StepReport (train/results.py) have a
field of each name. Its own module so the controller reports steps without importing the planner and numpy."""

PARTS = (("compute", "compute_s"), ("pipeline bubble", "bubble_s"),
         ("tensor-parallel collectives", "tensor_parallel_s"), ("pipeline sends", "pipeline_send_s"),
         ("batch-norm statistics", "batch_norm_s"), ("syncs", "sync_s"),
         ("data-parallel allreduce", "data_parallel_s"), ("streaming memory", "streaming_s"),
         ("host I/O", "host_io_s"))
