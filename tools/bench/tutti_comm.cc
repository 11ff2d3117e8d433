#include "bench/tutti_comm.h"

#include <chrono>

namespace tutti::bench {

const CallOptions& TuttiComm::optionsFor(const std::string& algorithm) {
  if (options_.algorithm != algorithm) options_.algorithm = algorithm;
  return options_;
}

void TuttiComm::compute() const {
  if (computeNs_ <= 0) return;
  // Arithmetic on registers only, as a kernel between issuing a collective and waiting for
  // it would compute (without its memory traffic), until the time has passed.
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(computeNs_);
  double x = 1.0;
  do {
    for (int i = 0; i < 256; ++i) x = x * 1.0000001 + 1e-9;
  } while (std::chrono::steady_clock::now() < until);
  sink_ = x;
}

Status TuttiComm::finish(Work work) {
  compute();
  return work.wait();
}

Status TuttiComm::finish(Status status) {
  compute();
  return status;
}

int TuttiComm::rank() const { return comm_.rank(); }

int TuttiComm::size() const { return comm_.size(); }

Status TuttiComm::barrier(const std::string& algorithm) {
  if (async_) return finish(comm_.barrierAsync(optionsFor(algorithm)));
  return finish(comm_.barrier(optionsFor(algorithm)));
}

Status TuttiComm::allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                            ReduceOp op, const std::string& algorithm) {
  if (async_) return finish(comm_.allreduceAsync(send, recv, count, dtype, op, optionsFor(algorithm)));
  return finish(comm_.allreduce(send, recv, count, dtype, op, optionsFor(algorithm)));
}

Status TuttiComm::broadcast(const void* send, void* recv, std::size_t count, DataType dtype,
                            int root, const std::string& algorithm) {
  if (async_) return finish(comm_.broadcastAsync(send, recv, count, dtype, root, optionsFor(algorithm)));
  return finish(comm_.broadcast(send, recv, count, dtype, root, optionsFor(algorithm)));
}

Status TuttiComm::reduce(const void* send, void* recv, std::size_t count, DataType dtype,
                         ReduceOp op, int root, const std::string& algorithm) {
  if (async_) return finish(comm_.reduceAsync(send, recv, count, dtype, op, root, optionsFor(algorithm)));
  return finish(comm_.reduce(send, recv, count, dtype, op, root, optionsFor(algorithm)));
}

Status TuttiComm::allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                            const std::string& algorithm) {
  if (async_) return finish(comm_.allgatherAsync(send, recv, count, dtype, optionsFor(algorithm)));
  return finish(comm_.allgather(send, recv, count, dtype, optionsFor(algorithm)));
}

Status TuttiComm::reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype,
                                ReduceOp op, const std::string& algorithm) {
  if (async_) return finish(comm_.reduceScatterAsync(send, recv, count, dtype, op, optionsFor(algorithm)));
  return finish(comm_.reduceScatter(send, recv, count, dtype, op, optionsFor(algorithm)));
}

Status TuttiComm::gather(const void* send, void* recv, std::size_t count, DataType dtype,
                         int root, const std::string& algorithm) {
  if (async_) return finish(comm_.gatherAsync(send, recv, count, dtype, root, optionsFor(algorithm)));
  return finish(comm_.gather(send, recv, count, dtype, root, optionsFor(algorithm)));
}

Status TuttiComm::scatter(const void* send, void* recv, std::size_t count, DataType dtype,
                          int root, const std::string& algorithm) {
  if (async_) return finish(comm_.scatterAsync(send, recv, count, dtype, root, optionsFor(algorithm)));
  return finish(comm_.scatter(send, recv, count, dtype, root, optionsFor(algorithm)));
}

Status TuttiComm::alltoall(const void* send, void* recv, std::size_t count, DataType dtype,
                           const std::string& algorithm) {
  if (async_) return finish(comm_.alltoallAsync(send, recv, count, dtype, optionsFor(algorithm)));
  return finish(comm_.alltoall(send, recv, count, dtype, optionsFor(algorithm)));
}

// nccl-tests runs the pair inside one group; here the send is issued first, asynchronously,
// so that a ring of ranks all sending before receiving cannot deadlock.
Status TuttiComm::sendRecv(const void* send, void* recv, std::size_t count, DataType dtype,
                           int sendPeer, int recvPeer, const std::string& algorithm) {
  const CallOptions& options = optionsFor(algorithm);
  Work sent = comm_.sendAsync(send, count, dtype, sendPeer, /*tag=*/0, options);
  Status received = comm_.recv(recv, count, dtype, recvPeer, /*tag=*/0, options);
  // Waited on even when the receive failed: the buffer must not be released under it.
  Status sendStatus = sent.wait();
  return received.ok() ? sendStatus : received;
}

Result<std::string> TuttiComm::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                            const std::string& forced) const {
  return comm_.algorithmFor(kind, count, dtype, forced, sharedBuffers_);
}

Status TuttiComm::verifyCall(const CallShape& call, const std::string& forced) const {
  CallShape shape = call;
  shape.sharedBuffers = sharedBuffers_;
  return comm_.verifyCall(shape, forced);
}

}  // namespace tutti::bench
