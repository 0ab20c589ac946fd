"""Tile cycles of the IPU's vector units that the kernels charge beside their FLOPs. Why a module without numpy:
the planner (vipu plan, which runs without numpy) prices the same work from the same figures.
"""

# Tile cycles per attention score on the vector units (not the matrix units), from poplibs' cycle tables
# (graphcore/poplibs 7eac0f26 lib/popops/popopsCycleEstimators.hpp and .cpp binaryOpInnerLoopCycles): half ADD,
# SUBTRACT and MULTIPLY one cycle and two of overhead a 4-wide vector (0.75 a score), EXPONENT 4 cycles per 4 (1.0).
# Forward, as Graphcore's PopART BERT runs it (graphcore/examples applications/popart/bert/bert_model.py at 32fc7bd):
# scale, add the mask, then poplibs' softmax (lib/popnn/NonLinearity.cpp softmaxImpl: max reduction, subtract,
# exponential, sum reduction, multiply by 1/sum), the reductions counted as a binary op each (an assumption):
# 6 x 0.75 + 1. Backward: the softmax gradient (softmaxInputGradientImpl: multiply, sum reduction, multiply,
# subtract) and the scale's: 5 x 0.75. The planner's defaults (vipu/jobs/assumptions.py) are these.
SCORE_FORWARD_CYCLES = 5.5
SCORE_BACKWARD_CYCLES = 3.75
