"""A program's session: what a user's program running as a job (vipu.sdk) does on its partition's emulated IPUs,
held by the controller and served by its DeviceService (vipu/server/device_service.py).

Why in the controller: the IPUoF endpoints a partition advertises are the controller's to serve, and a program must
never hold Ray credentials (under --secure that would hand every user the whole cluster). A program's run gets a
token (VIPU_RUN_TOKEN) that opens only its own session: its partition's IPUs, through the same transports the
built-in training uses (RayTransport on the machine actors, or MachineTransport on in-process machines with --ray
off, so capacity is refused alike), its tensors' names scoped to the run. The session ends with the run, whatever
ended it, and frees every tensor the run left.

session.py (DeviceSession: the operations), rendezvous.py (a collective waits until every member IPU's instance
has contributed, then runs once), ipu_clocks.py (each IPU's virtual time, charged by the engine's cost model),
step_report.py (a step's emulated time and its parts, per-IPU use, link bytes: the run's progress), tokens.py
(sessions by run token, and their end).
"""
