#pragma once
// OpRequest: one operation as the user issued it, as it travels from the API through the
// queue to the run: the call (its spec), its buffers, and when and how to run it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "schedule/collective.h"
#include "tutti/deadline.h"

namespace tutti::detail {

class WorkState;

/// One operation: the collective's definition (rank, size and the in-place flag are filled
/// in by the checks), the buffers, and how to run it.
struct OpRequest {
  CollectiveSpec spec;
  const void* input = nullptr;
  void* output = nullptr;
  int tag = 0;  // point to point only
  /// allgatherv and gatherv: the send count this rank states; scatterv: its receive count
  /// (each must equal this rank's entry in the shared counts array).
  std::optional<std::uint64_t> ownCount;
  /// The algorithm the call's options force, kept for a call that runs later (queued or
  /// async); a blocking call run at once reads it from its options instead.
  std::string algorithm;
  Deadline deadline = Deadline::never();
  Deadline::Clock::time_point issued;  // when the user issued it (the flight recorder)
  // Collectives: the sequence number on this communicator. Point to point: the next
  // collective's (how many were issued before it).
  std::uint64_t seq = 0;
  std::shared_ptr<WorkState> work;  // async and queued calls: where their status goes
  /// CallPlanner's generation of this call's arguments (recall, remember): equal numbers,
  /// equal arguments; 0: not remembered.
  std::uint64_t memo = 0;

  /// True when the v-collectives' arrays are all empty (every other collective).
  bool withoutArrays() const {
    return spec.counts.empty() && spec.displs.empty() && spec.recvCounts.empty() &&
           spec.recvDispls.empty();
  }
};

}  // namespace tutti::detail
