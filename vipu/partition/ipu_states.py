"""The states an IPU is shown in, one list for the controller (ipu_status.py, the metrics' vipu_ipus{state}), the CLI
(`vipu info`'s counts, node_info.py) and the dashboards and rules built on them (deploy/). A module that imports
nothing: the CLI's read paths take it without the hundred modules that ipu_status.py pulls in (pydantic, the Pod's
state), which would add about three quarters to what `vipu info` imports."""

IPU_STATES = ("idle", "allocated", "completing", "draining", "drained", "failed")  # what IpuStatus.state may be
# a job holds them, so they are in use: draining ones run a job on a drained agent (Slurm's drng), completing ones
# hold a job whose program is still ending (comp); sinfo counts a comp or drng node's CPUs allocated
IN_USE = ("allocated", "completing", "draining")
