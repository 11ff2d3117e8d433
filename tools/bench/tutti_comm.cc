#include "bench/tutti_comm.h"

namespace tutti::bench {

const CallOptions& TuttiComm::optionsFor(const std::string& algorithm) {
  if (options_.algorithm != algorithm) options_.algorithm = algorithm;
  return options_;
}

int TuttiComm::rank() const { return comm_.rank(); }

int TuttiComm::size() const { return comm_.size(); }

Status TuttiComm::barrier(const std::string& algorithm) {
  if (async_) return comm_.barrierAsync(optionsFor(algorithm)).wait();
  return comm_.barrier(optionsFor(algorithm));
}

Status TuttiComm::allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                            ReduceOp op, const std::string& algorithm) {
  if (async_) return comm_.allreduceAsync(send, recv, count, dtype, op, optionsFor(algorithm)).wait();
  return comm_.allreduce(send, recv, count, dtype, op, optionsFor(algorithm));
}

Status TuttiComm::broadcast(const void* send, void* recv, std::size_t count, DataType dtype,
                            int root, const std::string& algorithm) {
  if (async_) return comm_.broadcastAsync(send, recv, count, dtype, root, optionsFor(algorithm)).wait();
  return comm_.broadcast(send, recv, count, dtype, root, optionsFor(algorithm));
}

Status TuttiComm::reduce(const void* send, void* recv, std::size_t count, DataType dtype,
                         ReduceOp op, int root, const std::string& algorithm) {
  if (async_) return comm_.reduceAsync(send, recv, count, dtype, op, root, optionsFor(algorithm)).wait();
  return comm_.reduce(send, recv, count, dtype, op, root, optionsFor(algorithm));
}

Status TuttiComm::allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                            const std::string& algorithm) {
  if (async_) return comm_.allgatherAsync(send, recv, count, dtype, optionsFor(algorithm)).wait();
  return comm_.allgather(send, recv, count, dtype, optionsFor(algorithm));
}

Status TuttiComm::reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype,
                                ReduceOp op, const std::string& algorithm) {
  if (async_) return comm_.reduceScatterAsync(send, recv, count, dtype, op, optionsFor(algorithm)).wait();
  return comm_.reduceScatter(send, recv, count, dtype, op, optionsFor(algorithm));
}

Status TuttiComm::gather(const void* send, void* recv, std::size_t count, DataType dtype,
                         int root, const std::string& algorithm) {
  if (async_) return comm_.gatherAsync(send, recv, count, dtype, root, optionsFor(algorithm)).wait();
  return comm_.gather(send, recv, count, dtype, root, optionsFor(algorithm));
}

Status TuttiComm::scatter(const void* send, void* recv, std::size_t count, DataType dtype,
                          int root, const std::string& algorithm) {
  if (async_) return comm_.scatterAsync(send, recv, count, dtype, root, optionsFor(algorithm)).wait();
  return comm_.scatter(send, recv, count, dtype, root, optionsFor(algorithm));
}

Status TuttiComm::alltoall(const void* send, void* recv, std::size_t count, DataType dtype,
                           const std::string& algorithm) {
  if (async_) return comm_.alltoallAsync(send, recv, count, dtype, optionsFor(algorithm)).wait();
  return comm_.alltoall(send, recv, count, dtype, optionsFor(algorithm));
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
