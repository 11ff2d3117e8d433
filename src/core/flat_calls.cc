// The calls the shared-memory transport's flat exchange carries (Transport::flatExchange):
// small all-reduces, all-gathers(v), all-to-alls, reduce-scatters(v) and barriers run without
// the executor (runFlat), and the agreement on memAlloc buffers that comes before a large
// all-reduce's algorithm (agreeOnBuffers). Both are worded and failed as the executor's runs are.

#include <cstring>

#include "base/strings.h"
#include "core/call_describer.h"
#include "core/call_stamp.h"
#include "core/comm_impl.h"
#include "transport/shm/user_buffers.h"

namespace tutti::detail {

bool choiceNeedsBuffers(const CollectiveSpec& spec) {
  // From 1 MiB, where direct_rs_ag was measured: the agreement is a flat exchange (a few
  // microseconds on 4 to 8 ranks of 2 cores), which heap buffers pay for nothing; at 256 KiB
  // that was 2-7% of the call, from 1 MiB it is within the noise.
  return spec.kind == Collective::kAllReduce && spec.sharedMemory && spec.size >= 3 &&
         spec.size <= 8 && spec.count * dataTypeSize(spec.dtype) >= (1u << 20);
}

Status CommImpl::exchangeFlat(const OpRequest& r, const CallStamp& stamp, const void* data,
                              std::size_t bytes, FlatStop* stop,
                              const std::size_t* peerBytes) {
  FlatCall call;
  call.index = flatCalls_++;
  call.seq = r.seq;
  call.stamp = stamp;
  call.data = data;
  call.bytes = bytes;
  call.peerBytes = peerBytes;
  call.deadline = r.deadline;
  call.spinNs = spinNs_;
  call.checker = &checker_;  // a message of another call shows as a mismatch at once
  flatViews_.resize(static_cast<std::size_t>(size_));
  return transport_->flatExchange(call, flatViews_.data(), stop);
}

Status CommImpl::agreeOnBuffers(OpRequest& r) {
  // A failed communicator refuses the call further on (runSchedule) without agreeing.
  if (!transport_->health().ok()) return Status::Ok();
  const std::size_t bytes = r.spec.count * dataTypeSize(r.spec.dtype);
  const char mine = shm::findUserBuffer(r.input, bytes).valid() &&
                            shm::findUserBuffer(r.output, bytes).valid()
                        ? 1
                        : 0;
  // Stamped so as to agree with this call's messages whatever algorithm the peers choose: a
  // message from a rank already past the agreement is not taken for a mismatch.
  FlatStop stop;
  Status status = exchangeFlat(r, stampBeforeChoice(r.spec), &mine, 1, &stop);
  if (status.ok()) {
    bool all = true;
    for (const char* flag : flatViews_) all = all && *flag == 1;
    r.spec.sharedBuffers = all;
    return status;
  }
  const CallDescriber what(*this, r, "algorithm not chosen yet");
  ExecReport report;
  status = flatFailure(what, status, stop, &report);
  return failed(r, what, status, report, false);
}

std::size_t CommImpl::flatBytesFor(const CollectiveSpec& spec,
                                   const AlgorithmInfo& algorithm) const {
  if (algorithm.flatBytes == nullptr) return kNotFlat;
  const std::size_t room = transport_->flatBytes();  // 0: no flat exchange
  const std::size_t bytes = algorithm.flatBytes(spec);
  return room > 0 && bytes <= room ? bytes : kNotFlat;
}

Status CommImpl::runFlat(const OpRequest& r, const AlgorithmInfo& algorithm,
                         const CallStamp& stamp, std::size_t bytes, const OpDescriber& what,
                         ExecReport* report) {
  // `bytes` is the largest contribution; where they differ, this rank's own is its part.
  const std::size_t* peerBytes = nullptr;
  if (algorithm.flatRankBytes != nullptr) {
    flatPeerBytes_.resize(static_cast<std::size_t>(size_));
    for (int q = 0; q < size_; ++q)
      flatPeerBytes_[static_cast<std::size_t>(q)] = algorithm.flatRankBytes(r.spec, q);
    peerBytes = flatPeerBytes_.data();
    bytes = flatPeerBytes_[static_cast<std::size_t>(rank_)];
  }
  FlatStop stop;
  Status status = exchangeFlat(r, stamp, r.input, bytes, &stop, peerBytes);
  if (status.ok()) {
    // This rank's contribution is read from its own memory rather than from the slot it
    // published: the peers are reading that line at this very moment, and a read of it
    // waits on them (2 ranks, 8 bytes: the call took 0.83 of the time with this). In place,
    // the output being written is the input, so the input is taken aside first; a copy of
    // at most kFlatBytes into a buffer kept for it.
    if (bytes > 0) {
      if (!r.spec.inPlace) {
        flatViews_[static_cast<std::size_t>(rank_)] = static_cast<const char*>(r.input);
      } else {
        if (flatOwn_.size() < bytes) flatOwn_.resize(bytes);
        std::memcpy(flatOwn_.data(), r.input, bytes);
        flatViews_[static_cast<std::size_t>(rank_)] = flatOwn_.data();
      }
    }
    algorithm.flatFinish(r.spec, flatViews_.data(), r.output);
    return status;
  }
  return flatFailure(what, status, stop, report);
}

Status CommImpl::flatFailure(const OpDescriber& what, Status status,
                             const FlatStop& stop, ExecReport* report) {
  // Worded as the executor words its failures, and failed as it fails them (Run::abandon).
  if (status.code() == ErrorCode::kMismatch && stop.peer >= 0 && !stop.peerStamp.empty()) {
    status = Status(ErrorCode::kMismatch,
                    strFormat("rank %d called %s while rank %d called %s", stop.peer,
                              what.describeStamp(stop.peerStamp).c_str(), rank_,
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
  transport_->fail(status);
  const Status root = transport_->health();
  return (root.ok() ? status : root)
      .withContext(strFormat("%s failed on rank %d", what.describe().c_str(), rank_));
}

}  // namespace tutti::detail
