"""Users' own programs as jobs: the `command` workload kind (a batch script, as sbatch takes it), run as a real
process on the job's partition by a supervisor of its own (stepd.py, Slurm's slurmstepd), locally or on the Ray
node that holds the job's machines.

command_spec.py (the spec), environment.py (what the program sees), stepd.py (the supervisor process),
run_locks.py (how a restarted controller knows an old run's program is gone),
hosts.py (where supervisors run: this process's machine, or a Ray node), program_runs.py (the kind's runner),
launcher.py (`poprun` inside a job: its instances with their POPDIST_* variables), poprun_options.py (PopRun's
options: those honoured, and those said to have no effect here).
"""
