"""A gRPC server with nothing of vipu-sim in it: the same grpcio, thread pool size and service as vipu-server, and
a GetVersion that answers an empty message. Its rate is the ceiling of any Python gRPC server on this machine, so
bench_vs_slurm and bench_cli print it beside the real one: what is left between them is ours to cut, the rest is the
transport. With --aio, gRPC's asyncio server instead (grpc.aio), to tell whether it would raise that ceiling.

Run: .venv/bin/python bench/bare_server.py [--aio]   (prints `listening on 127.0.0.1:PORT`, serves until killed)
"""

from __future__ import annotations

import asyncio
import sys
from concurrent import futures

import grpc

from vipu.server.arguments import DEFAULT_RPC_THREADS
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc


class EmptyPartitionService(partition_pb2_grpc.PartitionServiceServicer):
    def GetVersion(self, request, context):
        return p.VersionInfo()


class AsyncEmptyPartitionService(partition_pb2_grpc.PartitionServiceServicer):
    async def GetVersion(self, request, context):
        return p.VersionInfo()


def main() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=DEFAULT_RPC_THREADS))
    partition_pb2_grpc.add_PartitionServiceServicer_to_server(EmptyPartitionService(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()


async def main_aio() -> None:
    server = grpc.aio.server()
    partition_pb2_grpc.add_PartitionServiceServicer_to_server(AsyncEmptyPartitionService(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    sys.exit(asyncio.run(main_aio()) if "--aio" in sys.argv[1:] else main())
