// A compiled gRPC client for bench_vs_slurm: COUNT calls, one job per call, one after another, as one sbatch loop
// submits. Why it exists: Slurm's client (sbatch) is C, ours are Python; this one shows what the server accepts
// when the client costs little, so the table separates the client's share from the server's.
// Build and run: bench_vs_slurm.py does both (protoc + g++ against Debian's libgrpc++-dev).
// Prints how many calls were answered OK (submit: how many job ids came back).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "vipu/v1/job.grpc.pb.h"
#include "vipu/v1/partition.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s HOST:PORT COUNT submit|empty SPEC_JSON\n", argv[0]);
    return 2;
  }
  const std::string target = argv[1], mode = argv[3], spec = argv[4];
  const long count = std::stol(argv[2]);
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto jobs = vipu::v1::JobService::NewStub(channel);
  auto partitions = vipu::v1::PartitionService::NewStub(channel);
  std::mt19937_64 random(std::random_device{}());
  long answered = 0;
  for (long i = 0; i < count; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status status;
    if (mode == "empty") {  // the transport alone: a call that asks for nothing
      vipu::v1::GetVersionRequest request;
      vipu::v1::VersionInfo reply;
      status = partitions->GetVersion(&context, request, &reply);
      answered += status.ok();
    } else {  // a fresh request id per call, as `vipu submit` sends
      vipu::v1::SubmitJobRequest request;
      vipu::v1::SubmitJobResponse reply;
      char request_id[33];
      std::snprintf(request_id, sizeof request_id, "%016llx%016llx", static_cast<unsigned long long>(random()),
                    static_cast<unsigned long long>(random()));
      request.set_spec(spec);
      request.set_request_id(request_id);
      status = jobs->SubmitJob(&context, request, &reply);
      answered += reply.job_ids_size();
    }
    if (!status.ok()) {
      std::fprintf(stderr, "call %ld: %s\n", i, status.error_message().c_str());
      return 1;
    }
  }
  std::printf("%ld\n", answered);
  return 0;
}
