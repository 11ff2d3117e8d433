#pragma once
// The argument checks of every Communicator operation, in one pass and one place
// (docs/errors.md has the table of what is checked and what each error does to the
// communicator).
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

#include "core/op_request.h"
#include "tutti/status.h"

namespace tutti::detail {

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

}  // namespace tutti::detail
