#pragma once
// MessageWays: how a call's large messages travel where the transport can move them directly
// (DirectCopy, transport/extensions.h): whether its senders ask the transport to copy rather
// than let the receiver read in place, and whether to write those copies past the caches.
// Decided by the call's shape alone (prefersCopy), forced (TUTTI_MESSAGE_PATH), or learnt per
// shape from the calls' times with every rank deciding alike (path_learner.h) through the
// flat exchange. Owns the learner; must not touch the queue, the planner or the executor.

#include <cstdint>
#include <optional>
#include <string>

#include "tutti/store.h"
#include "core/flat_runner.h"
#include "core/op_request.h"
#include "core/path_learner.h"
#include "executor/executor.h"
#include "transport/extensions.h"
#include "tutti/deadline.h"

namespace tutti::detail {

/// TUTTI_MESSAGE_PATH.
enum class MessagePath {
  kLearn,     // per shape, the faster way as timed (path_learner.h)
  kRule,      // prefersCopy
  kBuffered,  // through the transport's buffers
  kDirect,    // read or written in place
  kStreamed,  // through the transport's buffers, written past the caches
};
std::optional<MessagePath> parseMessagePath(const std::string& text);

/// The sizes prefersCopy decides by: the machine model's parameters of the same names
/// (tuning::MachineModel), which every rank agreed on at creation. The defaults are the
/// values measured (message_ways.cc).
struct MessageRules {
  /// Blocks from this size go through the transport's buffers (rings) where the
  /// rendezvous would be the kernel's copy.
  std::uint64_t ringBlocksFrom = std::uint64_t{32} << 20;
  /// A 2-rank all-reduce up to this size goes through the buffers.
  std::uint64_t pairAllReduceRingsUpTo = std::uint64_t{4} << 20;
};

/// Whether the call's sends ask links to copy rather than let the receiver read in place
/// (TransferRequest::preferCopy), by its shape alone and `rules`.
bool prefersCopy(const CollectiveSpec& spec, const MessageRules& rules = {});

/// Every rank publishes whether it learns the way of large messages and from which sizes
/// they may go directly or streamed, and checks every rank's against its own: creation fails
/// on a difference, naming both.
Status agreeOnMessagePath(Store& store, const std::string& prefix, int rank, int size,
                          bool learns, std::uint64_t directFrom, std::uint64_t streamedFrom,
                          Deadline deadline);

class MessageWays {
 public:
  /// `direct`: the transport's, or null where it has none; `flat`: where the ranks agree
  /// on what they learnt (null: they learn nothing).
  MessageWays(MessagePath path, const DirectCopy* direct, FlatExchangeRunner* flat,
              const MessageRules& rules = {});

  /// Sets params->preferCopy and streamPieces for `request`, stamped `stamp`, which runs
  /// `algorithm` (its place in the registry: each algorithm learns apart). Sets *shape where
  /// the learner chose, for record() once the call ran. Fails where the ranks' agreement on
  /// a way failed (which failed the communicator, worded for `what`).
  Status choose(const OpRequest& request, const CallStamp& stamp, const OpDescriber& what,
                std::uint32_t algorithm, ExecParams* params, std::optional<std::uint32_t>* shape,
                ExecReport* report);
  /// The call of `shape` that choose() chose for took `ns`.
  void record(std::uint32_t shape, std::int64_t ns) { paths_.record(shape, ns); }
  /// Whether the call choose() chose for last tries a way its shape does not keep (the
  /// learner's tries: slower, often much slower, than the shape's calls will be).
  bool triedAnotherWay() const { return triedAnotherWay_; }

 private:
  Status chooseWay(const OpRequest& request, const CallStamp& stamp, const OpDescriber& what,
                   std::uint32_t algorithm, PathLearner::Way* way,
                   std::optional<std::uint32_t>* shape, ExecReport* report);
  /// A decision of the learner for `shape`: the ranks add up their estimates in a flat
  /// exchange.
  Status agree(const OpRequest& request, const CallStamp& stamp, const OpDescriber& what,
               std::uint32_t shape, PathLearner::Way* way, ExecReport* report);

  const MessagePath path_;
  const MessageRules rules_;
  const DirectCopy* const direct_;
  FlatExchangeRunner* const flat_;
  PathLearner paths_;
  bool triedAnotherWay_ = false;
};

}  // namespace tutti::detail
