#pragma once
// BenchComm over a real tutti::Communicator: the only benchmark code that needs libtutti.

#include "bench/bench_comm.h"
#include "tutti/communicator.h"

namespace tutti::bench {

/// Forwards every call to `comm`, which must outlive this object; --algo becomes
/// CallOptions::algorithm, everything else uses the communicator's defaults (timeouts).
class TuttiComm final : public BenchComm {
 public:
  explicit TuttiComm(Communicator& comm) : comm_(comm) {}
  /// Every rank's buffers come from memAlloc (-R 1): algorithmFor and verifyCall say what
  /// runs with them.
  void setSharedBuffers(bool shared) { sharedBuffers_ = shared; }

  // BenchComm, forwarded one to one (sendRecv: an async send and a blocking receive).
  int rank() const override;
  int size() const override;
  Status barrier(const std::string& algorithm) override;
  Status allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                   const std::string& algorithm) override;
  Status broadcast(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                   const std::string& algorithm) override;
  Status reduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                int root, const std::string& algorithm) override;
  Status allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                   const std::string& algorithm) override;
  Status reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype,
                       ReduceOp op, const std::string& algorithm) override;
  Status gather(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                const std::string& algorithm) override;
  Status scatter(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                 const std::string& algorithm) override;
  Status alltoall(const void* send, void* recv, std::size_t count, DataType dtype,
                  const std::string& algorithm) override;
  Status sendRecv(const void* send, void* recv, std::size_t count, DataType dtype, int sendPeer,
                  int recvPeer, const std::string& algorithm) override;
  Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                   const std::string& forced) const override;
  Status verifyCall(const CallShape& call, const std::string& forced) const override;

  /// Collectives through their ...Async forms, each waited for at once (-z 1).
  void setAsync(bool async) { async_ = async; }
  /// --compute: busy for this long after issuing each collective (async: before waiting
  /// for it; blocking: after it returns), what a program overlaps with its communication.
  void setComputeNs(std::int64_t ns) { computeNs_ = ns; }

 private:
  bool sharedBuffers_ = false;
  bool async_ = false;
  std::int64_t computeNs_ = 0;
  mutable volatile double sink_ = 0;  // keeps compute()'s arithmetic
  void compute() const;
  Status finish(Work work);
  Status finish(Status status);
  /// The options of a call forcing `algorithm`, kept from call to call: building them for
  /// every timed call would time a string copy (and its allocation) no caller pays.
  const CallOptions& optionsFor(const std::string& algorithm);

  Communicator& comm_;
  CallOptions options_;
};

}  // namespace tutti::bench
