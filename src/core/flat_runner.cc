#include "core/flat_runner.h"

#include <cstring>

#include "base/strings.h"
#include "core/call_stamp.h"

namespace tutti::detail {

FlatExchangeRunner::FlatExchangeRunner(FlatExchange& flat, Transport& transport,
                                       CallChecker& checker, std::int64_t spinNs)
    : flat_(flat),
      transport_(transport),
      checker_(checker),
      room_(flat.flatBytes()),
      spinNs_(spinNs),
      views_(static_cast<std::size_t>(transport.size())) {}

Status FlatExchangeRunner::exchange(const OpRequest& r, const CallStamp& stamp, const void* data,
                                    std::size_t bytes, FlatStop* stop,
                                    const std::size_t* peerBytes) {
  FlatCall call;
  call.index = calls_++;
  call.seq = r.seq;
  call.stamp = stamp;
  call.data = data;
  call.bytes = bytes;
  call.peerBytes = peerBytes;
  call.deadline = r.deadline;
  call.spinNs = spinNs_;
  call.checker = &checker_;  // a message of another call shows as a mismatch at once
  return flat_.flatExchange(call, views_.data(), stop);
}

Status FlatExchangeRunner::agreeOnBuffers(OpRequest& r, const MappedBuffers& mapped,
                                          const OpDescriber& what, ExecReport* report) {
  const std::size_t bytes = r.spec.bytes();
  const char mine = mapped.mapped(r.input, bytes) && mapped.mapped(r.output, bytes) ? 1 : 0;
  // Stamped so as to agree with this call's messages whatever algorithm the peers choose: a
  // message from a rank already past the agreement is not taken for a mismatch.
  FlatStop stop;
  const Status status = exchange(r, stampBeforeChoice(r.spec), &mine, 1, &stop);
  if (!status.ok()) return failure(what, status, stop, report);
  bool all = true;
  for (const char* flag : views_) all = all && *flag == 1;
  r.spec.sharedBuffers = all;
  return status;
}

Status FlatExchangeRunner::run(const OpRequest& r, const AlgorithmInfo& algorithm,
                               const CallStamp& stamp, std::size_t bytes,
                               const OpDescriber& what, ExecReport* report) {
  const int rank = r.spec.rank;
  // `bytes` is the largest contribution; where they differ, this rank's own is its part.
  const std::size_t* peerBytes = nullptr;
  if (algorithm.flatRankBytes != nullptr) {
    peerBytes_.resize(views_.size());
    for (std::size_t q = 0; q < views_.size(); ++q)
      peerBytes_[q] = algorithm.flatRankBytes(r.spec, static_cast<int>(q));
    peerBytes = peerBytes_.data();
    bytes = peerBytes_[static_cast<std::size_t>(rank)];
  }
  FlatStop stop;
  Status status = exchange(r, stamp, r.input, bytes, &stop, peerBytes);
  if (!status.ok()) return failure(what, status, stop, report);
  // This rank's contribution is read from its own memory rather than from the slot it
  // published: the peers are reading that line at this very moment, and a read of it
  // waits on them. In place, the output being written is the input, so the input is taken
  // aside first (at most room() bytes, into a buffer kept for it).
  if (bytes > 0) {
    if (!r.spec.inPlace) {
      views_[static_cast<std::size_t>(rank)] = static_cast<const char*>(r.input);
    } else {
      if (own_.size() < bytes) own_.resize(bytes);
      std::memcpy(own_.data(), r.input, bytes);
      views_[static_cast<std::size_t>(rank)] = own_.data();
    }
  }
  algorithm.flatFinish(r.spec, views_.data(), r.output);
  return status;
}

Status FlatExchangeRunner::failure(const OpDescriber& what, Status status, const FlatStop& stop,
                                   ExecReport* report) {
  const int rank = transport_.rank();
  // Worded as the executor words its failures, and failed as it fails them (Run::abandon).
  if (status.code() == ErrorCode::kMismatch && stop.peer >= 0 && !stop.peerStamp.empty()) {
    status = Status(ErrorCode::kMismatch,
                    strFormat("rank %d called %s while rank %d called %s", stop.peer,
                              what.describeStamp(stop.peerStamp).c_str(), rank,
                              what.describe().c_str()),
                    stop.peer);
  } else if (status.code() == ErrorCode::kTimeout) {
    status = Status(ErrorCode::kTimeout,
                    strFormat("%s timed out; still waiting for data from %s",
                              what.describe().c_str(), status.message().c_str()),
                    status.peerRank());
  }
  if (report != nullptr) {
    report->completedSteps = 0;
    report->totalSteps = 1;
    if (stop.peer >= 0) report->waitingOn = strFormat("data from rank %d (flat)", stop.peer);
  }
  transport_.fail(status);
  const Status root = transport_.health();
  return (root.ok() ? status : root)
      .withContext(strFormat("%s failed on rank %d", what.describe().c_str(), rank));
}

}  // namespace tutti::detail
