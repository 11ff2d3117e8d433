#pragma once
// The hang report (DESIGN.md 7, docs/design.md "Failures"): when a call fails because the
// communicator timed out (this rank's deadline passed, or a peer's did and the abort
// protocol relayed it), every rank that was inside a call posts where it stands to the store
// (<communicator prefix>hang/<rank>: its call, and what that call was still waiting for),
// reads the others' for a short while, and appends a summary to its error: which ranks were
// in the same call, which in another one (named, and whether earlier or later), and which
// did not report. A rank that is stopped, dead, or busy outside tutti cannot post: its
// absence is the report. Nothing of this runs unless a call failed on a timeout.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::detail {

/// Where one rank stood when its call failed on the communicator's timeout.
struct HangPosition {
  /// False for point to point, which has no sequence number.
  bool collective = true;
  /// Collectives: the call's sequence number. Point to point: the number of collectives this
  /// rank had begun before it (its next collective's sequence number).
  std::uint64_t seq = 0;
  /// The call began after the communicator had already failed: this rank came late.
  bool late = false;
  /// The call as errors name it ("allreduce #5 (count 1024 float32 sum, ring)").
  std::string call;
  /// What it still waited for ("data from rank 3 (step 0)"); empty when nothing.
  std::string waitingOn;
  std::uint64_t completedSteps = 0;
  std::uint64_t totalSteps = 0;
};

/// The bytes a rank posts: a versioned text, one field per line. Texts longer than the
/// report can use are cut.
std::vector<std::uint8_t> encodeHangPosition(const HangPosition& position);
/// nullopt when `bytes` is not what encodeHangPosition() makes.
std::optional<HangPosition> decodeHangPosition(const std::vector<std::uint8_t>& bytes);

/// What a rank learned of the others.
struct HangView {
  int self = 0;
  /// One per rank, this rank's own included: what it posted, or nullopt.
  std::vector<std::optional<HangPosition>> positions;
  /// Ranks whose post did not decode.
  std::vector<int> unreadable;
  /// Ranks whose post could not be looked up because the store stopped answering.
  std::vector<int> unread;
  /// Set when the store failed (this rank could not post, or stopped answering).
  Status storeError;
  /// How long ranks had to post, for the wording.
  double waitedSec = 0;
  /// Where the communicator spans hosts: per rank, its host as messages name it
  /// (topo::View::hostLabel), so that ranks that did not report are named with their host
  /// (a host that died or was cut off loses all its ranks at once). Empty: not named.
  std::vector<std::string> hosts;
};

/// The summary appended to the error: "hang report: reached allreduce #5: ranks 0-2 (rank 0:
/// 0 of 2 steps done, waiting for data from rank 3 (step 0); ...); in recv from rank 0 (tag
/// 7, count 4 int32), not yet at allreduce #5: rank 3; did not report within 3 s (stopped,
/// dead, or outside any tutti call): rank 4" (with view.hosts: "ranks 4-5 on host 1 'b' at
/// 10.0.0.2"). `*blame` is set to the one rank that was not in
/// this rank's call when there is exactly one (and every post was read), else to
/// Status::kNoRank.
std::string summarizeHang(const HangView& view, int* blame);

/// Posts `mine` under `prefix`hang/`rank`, then reads every other rank's post, waiting until
/// `deadline` for those not there yet (ending early once all are in). Returns by the
/// deadline plus about a second (posts already there are still read for that long, one
/// round trip each), even when the store does not answer.
HangView exchangeHangPositions(Store& store, const std::string& prefix, int rank, int size,
                               const HangPosition& mine, Deadline deadline);

}  // namespace tutti::detail
