#pragma once
// The farewell: what every rank of a communicator runs as it destroys it, so that a
// mismatch no call could see is still found, and named on every rank (DESIGN.md 7).
//
// A call may end on a rank before any message of another call reaches it: a broadcast root
// that only sends returns at once, and the rank that took another root may never read what
// it was sent. So a rank that leaves a healthy communicator takes part in two rounds of
// empty point-to-point messages, on reserved tags no user call can name:
//   1. a goodbye to every peer, and every peer's goodbye received. A link delivers in
//      order, so by then every message any peer sent this rank has been read and checked
//      against this rank's call of its number (CallChecker: on arrival, or when matched);
//      a conflict fails the communicator, and the abort protocol tells every rank. A
//      message of a call this rank never began is a mismatch too (CallChecker::close): one
//      that came earlier is found as the farewell begins, a later one (a peer's probe from
//      a call that waits for this rank) as it arrives.
//   2. a second goodbye, sent by each rank only once its first round found nothing: when
//      every peer's has arrived, no rank found a mismatch; a peer that found one failed the
//      communicator instead, and its abort ends this round with its error.
// Destroying a communicator thus waits for every peer to destroy it too (as MPI_Comm_free
// does), at most until `deadline`.
//
// Cost: two rounds of n - 1 empty messages per rank, once per communicator; nothing on the
// path of a call.

#include <cstdint>

#include "executor/executor.h"
#include "transport/call_checker.h"
#include "transport/link.h"
#include "tutti/deadline.h"

namespace tutti {

/// Runs the farewell over `transport` (see above), the calling thread driving it; nothing
/// on a one-rank or failed transport. OK when no rank found a mismatch; else the
/// communicator's first failure (the transport has failed with it). `checker`: the
/// communicator's (may be null); `pool`: reused memory, as for execute().
Status farewell(Transport& transport, CallChecker* checker, Deadline deadline,
                std::int64_t spinNs, ExecutorPool& pool);

}  // namespace tutti
