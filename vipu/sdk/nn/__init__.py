"""Model building blocks for programs on the emulated IPUs, in plain numpy: the same code the built-in `train`
workload runs, published so that a user's program reproduces its numbers exactly (examples/tiny_*.py).

Why here and not in the engine: a program may import only the public SDK (vipu.sdk); the engine (vipu/jobs/train)
imports these modules too, so there is one copy of every kernel, initialisation, data set, loss and optimiser.
Nothing here talks to a controller: the stage code (mlp.py, transformer.py) is written once for the t tensor
shards of a pipeline stage against the Shards interface (spmd.py), which vipu.sdk.ShardGroup implements over a
program's session and the engine's StageGroup over its fabric.

- architectures.py: MLP and Transformer, the shapes the code below reads;
- synthetic.py: initial weights, synthetic samples and the loss, a pure function of a seed;
- kernels.py: numpy layers with hand-written backward passes, and their FLOP counts;
- vector_cycles.py: the vector units' cycles the kernels charge beside FLOPs (numpy-free: the planner reads them);
- sharding.py: layers to pipeline stages, blocks, tensors to shards, and flat per-IPU buffers;
- mlp.py, transformer.py: a stage's forward and backward on its shards (Megatron-style);
- pipeline.py: GPipe and 1F1B orders of a step's forward and backward operations;
- optimizers.py: momentum SGD and Adam, elementwise.
"""
