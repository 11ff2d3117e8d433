// Questions about a call that the communicator answers without running it: which
// algorithm it would run (algorithmFor) and whether every rank's schedule for it verifies
// (verifyCall: the schedules of all ranks built here, from representative specs, and
// checked together by schedule/verifier.h).

#include "core/comm_impl.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/macros.h"
#include "base/strings.h"
#include "schedule/verifier.h"

namespace tutti::detail {

namespace {

// The spec of `call` on `rank` of an n-rank world, with a representative shape for the
// v-collectives (`count` elements per rank, packed in rank order).
CollectiveSpec representativeSpec(const CallShape& call, int rank, int n, std::uint64_t segmentBytes,
                                  bool sharedMemory) {
  CollectiveSpec spec;
  spec.sharedMemory = sharedMemory;
  spec.kind = call.kind;
  spec.rank = rank;
  spec.size = n;
  spec.count = call.count;
  spec.dtype = call.dtype;
  spec.op = call.op;
  spec.root = call.root;
  spec.inPlace = call.inPlace;
  spec.peer = (rank + 1) % n;
  spec.segmentCount = std::max<std::uint64_t>(1, segmentBytes / dataTypeSize(call.dtype));
  spec.sharedBuffers = call.sharedBuffers && choiceNeedsBuffers(spec);  // as agreed in a call
  const auto ranks = static_cast<std::size_t>(n);
  if (call.kind == Collective::kGatherV || call.kind == Collective::kScatterV ||
      call.kind == Collective::kAllGatherV || call.kind == Collective::kReduceScatterV ||
      call.kind == Collective::kAllToAllV) {
    spec.counts.assign(ranks, call.count);
    spec.displs.resize(ranks);
    for (std::size_t i = 0; i < ranks; ++i) spec.displs[i] = i * call.count;
    if (call.kind == Collective::kAllToAllV) {
      spec.recvCounts = spec.counts;
      spec.recvDispls = spec.displs;
    }
  }
  return spec;
}

}  // namespace

Result<std::string> CommImpl::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                           const std::string& forced, bool sharedBuffers) const {
  CallShape call;
  call.kind = kind;
  call.count = count;
  call.dtype = dtype;
  call.sharedBuffers = sharedBuffers;
  OpRequest r;
  r.spec = representativeSpec(call, rank_, size_, segmentBytes_, sharedMemory_);
  TUTTI_RETURN_IF_ERROR(validateSpec(r.spec));
  auto algorithm = selectAlgorithm(r.spec, forcedAlgorithm(forced, r.spec.kind));
  if (!algorithm.ok()) return algorithm.status();
  return std::string((*algorithm)->name);
}

Status CommImpl::verifyCall(const CallShape& call, const std::string& forced) const {
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  const auto n = static_cast<std::size_t>(size_);
  specs.reserve(n);
  schedules.reserve(n);
  const bool p2p = call.kind == Collective::kSend || call.kind == Collective::kRecv;
  TUTTI_CHECK_ARG(!p2p || size_ >= 2, "%s: a world of one rank has no peer to verify against",
                  collectiveName(call.kind));
  const char* name = nullptr;
  for (int q = 0; q < size_; ++q) {
    CollectiveSpec spec = representativeSpec(call, q, size_, segmentBytes_, sharedMemory_);
    if (p2p) {
      // Pairs (0 -> 1, 2 -> 3, ...); the last rank of an odd world takes no part.
      const bool sender = q % 2 == 0;
      const int partner = sender ? q + 1 : q - 1;
      spec.kind = sender ? Collective::kSend : Collective::kRecv;
      spec.peer = partner < size_ ? partner : -1;
      spec.inPlace = false;
      if (spec.peer < 0) {
        spec.count = 0;
        Schedule idle;
        idle.rank = q;
        idle.size = size_;
        specs.push_back(std::move(spec));
        schedules.push_back(std::move(idle));
        continue;
      }
    }
    TUTTI_RETURN_IF_ERROR(validateSpec(spec));
    auto algorithm = selectAlgorithm(spec, forcedAlgorithm(forced, spec.kind));
    if (!algorithm.ok()) return algorithm.status();
    // Every rank must pick the same algorithm for the same call, or they would not meet.
    if (name != nullptr && !p2p && std::string_view(name) != (*algorithm)->name) {
      return Status(ErrorCode::kInternal,
                    strFormat("%s: rank %d would run %s but rank 0 %s", collectiveName(call.kind),
                              q, (*algorithm)->name, name));
    }
    name = (*algorithm)->name;
    schedules.push_back((*algorithm)->build(spec));
    specs.push_back(std::move(spec));
  }
  VerifyOptions options;
  options.maxInflight = static_cast<std::size_t>(std::max<std::int64_t>(1, config_.maxInflight));
  Status status = verifySchedules(specs, schedules, options);
  if (!status.ok() && name != nullptr) return status.withContext(name);
  return status;
}

}  // namespace tutti::detail
