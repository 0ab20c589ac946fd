"""vipu.client: the V-IPU controller's API for Python programs, the one the vipu CLI talks through.

    from vipu.client import ApiError, Client

    with Client.connect() as client:  # where the CLI would go: arguments, VIPU_CLI_* variables, config file
        spec = {"ipus": 4, "time_limit": "10m", "workload": {"kind": "sleep", "duration": 60}}
        [job_id] = client.submit(spec).job_ids
        for job in client.jobs(users=["alice"]):
            print(job.id, job.state, job.reason)

Every failure is an ApiError with the status code, a stable reason (docs/api.md), the message the CLI would print
and the fields at fault. docs/client.md has the whole API.
"""

from __future__ import annotations

import os

# gRPC's C core logs a failed TLS handshake itself (I/E lines on stderr) on top of the error we raise. It reads
# GRPC_VERBOSITY once, when grpc is imported, so set it just for the import (a user's own setting wins, and programs
# started later do not inherit ours).
_verbosity_set = "GRPC_VERBOSITY" in os.environ
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
import grpc  # noqa: E402,F401

if not _verbosity_set:
    del os.environ["GRPC_VERBOSITY"]

from vipu.client.api_error import ApiError  # noqa: E402
from vipu.client.client import Client  # noqa: E402
from vipu.client.settings import Settings  # noqa: E402

__all__ = ["ApiError", "Client", "Settings"]
