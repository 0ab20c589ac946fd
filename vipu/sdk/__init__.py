"""vipu.sdk: what a user's program running as a job on the emulated Pod may import.

nn/ holds the model building blocks (numpy) the built-in `train` workload runs too.
"""
