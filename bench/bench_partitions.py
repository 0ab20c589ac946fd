"""Partition create+remove operations per second over gRPC on a Pod256, and placement latency as the Pod fills.

Run: .venv/bin/python bench/bench_partitions.py [--ops N] [--clients C]
Goals (issue 2): >= 1,000 create+remove per second through gRPC; placement p99 < 1 ms.
All times here are wall-clock, measured on this machine.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import tempfile
import time

import grpc
from live_server import start_server, timed_clients

from vipu.clock import VirtualClock
from vipu.errors import ResourceExhausted
from vipu.hardware.pod_files import load_pod
from vipu.partition.controller import Controller
from vipu.partition.partition_record import PartitionRequest
from vipu.partition.pod_state import NoJournal
from vipu.v1 import partition_pb2 as p, partition_pb2_grpc


SIZES = [1, 2, 4, 8, 16, 32, 64]


def client(port: int, index: int, count: int, barrier) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = partition_pb2_grpc.PartitionServiceStub(channel)
        stub.GetVersion(p.GetVersionRequest(), timeout=10)  # connect first
        barrier.wait()
        for i in range(count):
            name = f"c{index}-{i}"
            stub.CreatePartition(p.CreatePartitionRequest(name=name, size=SIZES[i % len(SIZES)]), timeout=10)
            stub.RemovePartition(p.RemovePartitionRequest(name=name), timeout=10)


def grpc_create_remove(port: int, ops: int, clients: int) -> float:
    """Each client is its own process, sharing this machine's cores with the server."""
    per_client = ops // clients
    return per_client * clients / timed_clients(client, [(port, c, per_client) for c in range(clients)])


def rpc_floor(port: int, calls: int = 2000) -> float:
    """Round trip of GetVersion, an RPC that does no work: the transport's own cost on this machine."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = partition_pb2_grpc.PartitionServiceStub(channel)
        start = time.perf_counter()
        for _ in range(calls):
            stub.GetVersion(p.GetVersionRequest(), timeout=10)
        return (time.perf_counter() - start) / calls


def placement_latency(seed: int = 1, rounds: int = 20) -> list[tuple[str, float, float, int]]:
    """Fill a Pod256 with random sizes (removing at random to churn), timing each create by fill band."""
    rng = random.Random(seed)
    bands: dict[int, list[float]] = {b: [] for b in range(4)}
    for r in range(rounds):
        controller = Controller(load_pod("bow-pod256"), NoJournal(), VirtualClock().now)
        names: list[str] = []
        for i in range(400):
            if names and rng.random() < 0.3:
                controller.partitions.remove(names.pop(rng.randrange(len(names))))
            used = 256 - bin(controller.state.usable_mask("default")).count("1")
            request = PartitionRequest(name=f"r{r}-{i}", size=rng.choice([1, 1, 2, 4, 4, 8, 16, 32, 64]))
            t0 = time.perf_counter()
            try:
                controller.partitions.create(request)
                names.append(request.name)
            except ResourceExhausted:
                pass
            bands[min(3, used * 4 // 256)].append(time.perf_counter() - t0)
    rows = []
    for band, samples in bands.items():
        samples.sort()
        if samples:
            rows.append((f"{band * 25}-{band * 25 + 25}% full", samples[len(samples) // 2], samples[int(len(samples) * 0.99)], len(samples)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    print(f"# bench_partitions: {time.strftime('%Y-%m-%d')} on {platform.node()} ({platform.processor() or platform.machine()},"
          f" Python {platform.python_version()})")
    with tempfile.TemporaryDirectory() as state_dir:
        proc, port = start_server(state_dir)
        try:
            grpc_create_remove(port, 200, 1)  # warm-up
            floor = rpc_floor(port)
            print(f"empty RPC round trip (GetVersion), 1 client: {floor * 1e6:,.0f} us; a create+remove is two RPCs, so one"
                  f" serial client is capped at {1 / (2 * floor):,.0f} per second before any work is done")
            for clients in args.clients:
                rate = grpc_create_remove(port, args.ops, clients)
                print(f"create+remove over gRPC, Pod256, {clients} client(s): {rate:,.0f} per second (goal >= 1,000)")
        finally:
            proc.terminate()
            proc.wait()
    print("\nplacement latency on a Pod256 as it fills (create = rules + buddy best-fit placement + state update):")
    print(f"{'fill':<14}{'p50 (us)':>10}{'p99 (us)':>10}{'samples':>9}")
    for label, p50, p99, n in placement_latency():
        print(f"{label:<14}{p50 * 1e6:>10.1f}{p99 * 1e6:>10.1f}{n:>9}")
    print("goal: p99 < 1,000 us")


if __name__ == "__main__":
    main()
