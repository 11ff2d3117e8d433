// How a call's messages travel (message_ways.h).

#include "core/message_ways.h"

#include <bit>
#include <cstdio>
#include <cstring>

#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/bounded_store.h"

namespace tutti::detail {

// The sizes in `rules` are the machine model's (MessageRules); their defaults are the values
// measured below, on the Intel and AMD VMs of docs/host-rules.md. ringBlocksFrom was
// measured when the copies streamed from 32 MiB (reduce's threshold, now 8 MiB by default)
// and not re-measured since.
// Whether a call's messages go through the transport's buffers rather than being read in
// place by their receiver (rendezvous, TransferRequest::preferCopy). Over shared memory a
// receiver reduces a copied message piece by piece as it arrives, from cache, while its
// sender copies the next pieces on another core; one read in place is read by the
// receiver alone, through the kernel's copy (a bounce buffer at a time, ShmLink::
// readCombiningLocked). Measured against rendezvous (docs/performance.md, 2 and 4 ranks):
// reduce 0.46-0.79 of the time, reduce-scatter 0.78-0.91, all-reduce 0.90 up to 4 MiB and
// 0.83 at 16 MiB on 4 ranks; again once rendezvous reduced through the bounce buffer:
// reduce 16 MiB 0.49, reduce-scatter 64 MiB 0.84, 1 MiB 1.02 (2 ranks). A larger
// all-reduce on 2 ranks keeps rendezvous: both ranks are busy reducing anyway, and half of
// its messages are copied rather than reduced (through the ring it took 1.03-1.06 as long),
// until its halves are large enough for the receiver to stream them out of the ring
// (ringBlocksFrom): then the ring took 0.85 (64 MiB) and 0.92-0.93 (128 and 256 MiB)
// of rendezvous' time, 1.00 at 32 MiB and 1.06 at 16 MiB.
// The shm transport ignores the preference for a send from a memAlloc buffer, which the
// receiver reduces straight from its mapping (reduce-scatter 64 MiB on 2 ranks: 0.58).
bool prefersCopy(const CollectiveSpec& spec, const MessageRules& rules) {
  switch (spec.kind) {
    case Collective::kReduce:
    case Collective::kReduceScatter:
    case Collective::kReduceScatterV:
      return true;
    case Collective::kAllReduce:
      return spec.size > 2 || spec.bytes() <= rules.pairAllReduceRingsUpTo ||
             spec.bytes() / 2 >= rules.ringBlocksFrom;
    case Collective::kAllGather:
    case Collective::kAllToAll:
      // Every rank sends and receives at once, so both cores copy anyway. A block of
      // ringBlocksFrom bytes moves faster through the rings, copied into cache by its
      // sender and streamed out by its receiver, than by the kernel's copy from memory to
      // memory.
      return spec.bytes() >= rules.ringBlocksFrom;
    default:
      return false;
  }
}

std::optional<MessagePath> parseMessagePath(const std::string& text) {
  if (text == "learn") return MessagePath::kLearn;
  if (text == "rule") return MessagePath::kRule;
  if (text == "buffered") return MessagePath::kBuffered;
  if (text == "direct") return MessagePath::kDirect;
  if (text == "streamed") return MessagePath::kStreamed;
  return std::nullopt;
}

// Whether a collective's large messages learn their way (TUTTI_MESSAGE_PATH) is decided by each
// rank from its own settings, and the ranks must decide alike: a rank that learns waits in a
// decision's flat exchange for ranks that do not, until the call's deadline. So every rank
// publishes what decides it (learning, and from which sizes messages may go directly or
// streamed) and reads every rank's, and creation fails on a difference, naming both ranks'
// settings.
Status agreeOnMessagePath(Store& store, const std::string& prefix, int rank, int size,
                          bool learns, std::uint64_t directFrom, std::uint64_t streamedFrom,
                          Deadline deadline) {
  const std::string mine =
      strFormat("%d %llu %llu", learns ? 1 : 0, static_cast<unsigned long long>(directFrom),
                static_cast<unsigned long long>(streamedFrom));
  TUTTI_RETURN_IF_ERROR(setBefore(store, prefix + "path/" + std::to_string(rank),
                                  std::vector<std::uint8_t>(mine.begin(), mine.end()), deadline));
  for (int r = 0; r < size; ++r) {
    auto raw = store.get(prefix + "path/" + std::to_string(r), deadline);
    if (!raw.ok())
      return raw.status().withContext(strFormat("waiting for rank %d's message path", r));
    const std::string theirs(raw->begin(), raw->end());
    if (theirs == mine) continue;
    unsigned theirLearns = 0;
    unsigned long long theirFrom = 0, theirStreamed = 0;
    if (std::sscanf(theirs.c_str(), "%u %llu %llu", &theirLearns, &theirFrom, &theirStreamed) != 3)
      return Status(ErrorCode::kProtocolError,
                    strFormat("rank %d published a malformed message path '%s'", r,
                              theirs.c_str()));
    auto describe = [](bool l, unsigned long long from, unsigned long long streamed) {
      return strFormat("%s, large messages directly from %llu bytes and streamed from %llu "
                       "(0: never)",
                       l ? "learns which way large messages go" : "does not learn it", from,
                       streamed);
    };
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("rank %d %s, but rank %d %s: set TUTTI_MESSAGE_PATH, "
                            "TUTTI_SHM_CMA_BYTES and TUTTI_SHM_STREAMED_BYTES alike on every "
                            "rank, and give every rank a core or none",
                            r, describe(theirLearns != 0, theirFrom, theirStreamed).c_str(),
                            rank,
                            describe(learns, directFrom,
                                     static_cast<unsigned long long>(streamedFrom))
                                .c_str()),
                  r);
  }
  return Status::Ok();
}

MessageWays::MessageWays(MessagePath path, const DirectCopy* direct, FlatExchangeRunner* flat,
                         const MessageRules& rules)
    : path_(path), rules_(rules), direct_(direct), flat_(flat) {}

Status MessageWays::choose(const OpRequest& r, const CallStamp& stamp, const OpDescriber& what,
                           std::uint32_t algorithm, ExecParams* params,
                           std::optional<std::uint32_t>* shape, ExecReport* report) {
  PathLearner::Way way = PathLearner::Way::kDirect;
  triedAnotherWay_ = false;
  TUTTI_RETURN_IF_ERROR(chooseWay(r, stamp, what, algorithm, &way, shape, report));
  params->preferCopy = way != PathLearner::Way::kDirect;
  params->streamPieces = way == PathLearner::Way::kStreamed;
  return Status::Ok();
}

Status MessageWays::chooseWay(const OpRequest& r, const CallStamp& stamp, const OpDescriber& what,
                              std::uint32_t algorithm, PathLearner::Way* way,
                              std::optional<std::uint32_t>* shape, ExecReport* report) {
  using Way = PathLearner::Way;
  const CollectiveSpec& spec = r.spec;
  switch (path_) {
    case MessagePath::kRule:
      *way = prefersCopy(spec, rules_) ? Way::kBuffered : Way::kDirect;
      return Status::Ok();
    case MessagePath::kBuffered:
      *way = Way::kBuffered;
      return Status::Ok();
    case MessagePath::kDirect:
      *way = Way::kDirect;
      return Status::Ok();
    case MessagePath::kStreamed:
      *way = Way::kStreamed;
      return Status::Ok();
    case MessagePath::kLearn:
      break;
  }
  // Where the transport kept direct moves although they measured slow, only calls that
  // learn try them.
  const bool rule = prefersCopy(spec, rules_) || (direct_ != nullptr && direct_->directSlow());
  *way = rule ? Way::kBuffered : Way::kDirect;
  // Learnt where the choice can matter (PathLearner::waysFor) and the ranks can agree
  // cheaply (a flat exchange: every rank on this host), for calls whose shape is the same on
  // every rank (a v-collective's count is this rank's).
  if (direct_ == nullptr || flat_ == nullptr || flat_->room() < sizeof(PathLearner::Times))
    return Status::Ok();
  const std::uint64_t bytes = spec.bytes();
  // About a call's largest message: an all-reduce's block (count is the whole vector), a
  // block for the others (allgather, alltoall, reduce-scatter...), the whole for broadcast
  // and reduce.
  const std::uint64_t message =
      spec.kind == Collective::kAllReduce ? bytes / static_cast<std::uint64_t>(spec.size) : bytes;
  const unsigned ways = PathLearner::waysFor(spec.kind, message, rule, direct_->directFrom(),
                                             direct_->streamedFrom());
  if (std::popcount(ways) < 2) return Status::Ok();
  // Where nothing goes directly, the rule's way is the buffers'.
  if ((ways & PathLearner::bit(*way)) == 0) *way = Way::kBuffered;
  const std::uint32_t s = PathLearner::shapeOf(spec.kind, spec.dtype, bytes, algorithm);
  const PathLearner::Choice choice = paths_.choose(s, *way, ways, message);
  *shape = s;
  *way = choice.way;
  triedAnotherWay_ = choice.trying;
  if (!choice.decides) return Status::Ok();
  return agree(r, stamp, what, s, way, report);
}

Status MessageWays::agree(const OpRequest& r, const CallStamp& stamp, const OpDescriber& what,
                          std::uint32_t shape, PathLearner::Way* way, ExecReport* report) {
  const PathLearner::Times mine = paths_.estimates(shape);
  FlatStop stop;
  const Status status = flat_->exchange(r, stamp, mine.data(), sizeof(mine), &stop);
  if (!status.ok()) return flat_->failure(what, status, stop, report);
  PathLearner::Times sums{};
  for (const char* view : flat_->views()) {
    PathLearner::Times theirs;
    std::memcpy(theirs.data(), view, sizeof(theirs));
    for (std::size_t w = 0; w < PathLearner::kWays; ++w)
      sums[w] = sums[w] < 0 || theirs[w] < 0 ? -1 : sums[w] + theirs[w];
  }
  bool changed = false;
  *way = paths_.decide(shape, sums, &changed);
  if (changed) {
    static constexpr const char* kNames[] = {"directly", "through the buffers",
                                             "through the buffers, streamed"};
    auto us = [&](PathLearner::Way w) {
      return static_cast<double>(sums[static_cast<std::size_t>(w)]) / 1e3;
    };
    TUTTI_DEBUG(kTune,
                "rank %d: %s of %llu bytes now sends %s (summed over the ranks: %.1f us "
                "through the buffers, %.1f directly, %.1f streamed; -0.0 untimed)",
                r.spec.rank, collectiveName(r.spec.kind),
                static_cast<unsigned long long>(r.spec.bytes()),
                kNames[static_cast<std::size_t>(*way)], us(PathLearner::Way::kBuffered),
                us(PathLearner::Way::kDirect), us(PathLearner::Way::kStreamed));
  }
  return Status::Ok();
}

}  // namespace tutti::detail
