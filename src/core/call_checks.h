#pragma once
// The argument checks of every Communicator operation, in one place (docs/errors.md has the
// table of what is checked and what each error does to the communicator).
//
// Errors fall in two kinds, by who can see them:
//   - shared: arguments every rank taking part passes alike (a collective's data type,
//     operator, count and root, the arrays the v-collectives share; a send's and its
//     receive's type, count and tag). Each rank refuses the call on its own, before any
//     message, and the communicator stays usable.
//   - this rank's own: its buffers (null, too short to be in place, overlapping), its peer,
//     the count it states for its own block, alltoallv's arrays. The other ranks cannot see
//     the error and would wait for this rank until their deadline, so the caller also fails
//     the communicator: the peers' pending and later calls fail at once naming this rank.

#include <cstdint>

#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti::detail {

struct OpRequest;

/// The verdict on one operation's arguments.
struct CallCheck {
  /// OK, or kInvalidArgument naming the argument and its value.
  Status status;
  /// True when the error is in something only this rank passed (see the file comment).
  bool onlyHere = false;
};

/// Fills in the rank, size and in-place flag of `request.spec` (in place when the buffers
/// relate as the collective's in-place convention says) and checks every argument of the
/// operation on `rank` of a `size`-rank communicator. Pure: no communication, no state.
CallCheck checkCall(OpRequest& request, int rank, int size);

/// The last call checkCall() passed, so that a loop repeating one call checks it once: a
/// call with the same collective, count, type, operator, root, peer, tag and buffers gets
/// the same verdict (checkCall is pure). Calls with per-rank arrays (the v-collectives) or
/// a stated own count are not kept: comparing them would cost what checking them does.
/// Not thread-safe: the communicator's issuing thread owns it.
class CallCheckCache {
 public:
  /// True when `request` repeats the call remembered: fills in rank, size and the in-place
  /// flag as checkCall() would, and its arguments are valid. False: check it.
  bool reuse(OpRequest& request, int rank, int size) const;
  /// Remembers `request`, which checkCall() has just passed (a no-op for calls not kept).
  void remember(const OpRequest& request);

 private:
  bool valid_ = false;
  Collective kind_ = Collective::kAllReduce;
  std::uint64_t count_ = 0;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  int root_ = 0;
  int peer_ = -1;
  int tag_ = 0;
  const void* input_ = nullptr;
  const void* output_ = nullptr;
  bool inPlace_ = false;
};

}  // namespace tutti::detail
