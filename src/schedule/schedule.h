#pragma once
// The Schedule IR (DESIGN.md 3): what one rank does in one collective, as data.
//
// A schedule is an ordered list of steps over regions of the call's buffers. Each step is
// one instruction of a small set (NCCL's vocabulary):
//
//   send(peer, src)                    send src to peer
//   recv(peer, dst)                    receive into dst
//   recvReduce(peer, src, dst)         dst = src (op) received
//   recvReduceSend(rp, sp, src, dst)   dst = src (op) received from rp; then send dst to sp
//   recvCopySend(rp, sp, dst)          receive into dst from rp; then send dst to sp
//   copy(src, dst)                     dst = src
//   reduce(src, dst)                   dst = dst (op) src
//
// A step may also `finalize` its destination after computing it (kAvg divides by the world
// size there). Steps name the earlier steps they depend on; the executor starts a step only
// when its dependencies are complete, and keeps several steps in flight, which is how
// segments pipeline. Algorithms must declare every local data hazard (a step that
// overwrites a region an earlier step still sends from, ...) as a dependency.
//
// Messages: the k-th message this rank sends to peer p carries message index k, and the
// k-th message it receives from p is expected to carry index k; the builder numbers them.
// Algorithms therefore must create the sends to p in the same order as p creates its
// receives from this rank. Regions count elements of the call's dtype, never bytes.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tutti/types.h"

namespace tutti {

enum class BufferKind : std::uint8_t { kInput = 0, kOutput = 1, kScratch = 2 };

/// A contiguous range of elements of one of the call's buffers.
struct Region {
  BufferKind buffer = BufferKind::kInput;
  std::uint64_t offset = 0;  // elements
  std::uint64_t count = 0;   // elements
};

enum class OpCode : std::uint8_t {
  kSend,
  kRecv,
  kRecvReduce,
  kRecvReduceSend,
  kRecvCopySend,
  kCopy,
  kReduce,
};

const char* opCodeName(OpCode op);
bool opReceives(OpCode op);
bool opSends(OpCode op);

using StepId = std::uint32_t;

struct Step {
  OpCode op = OpCode::kCopy;
  bool finalize = false;     // apply the operator's final step (kAvg: divide) to dst
  /// recvReduceSend only: dst is needed only to send the result on, so its contents after
  /// the step are unspecified (an executor may send each reduced piece straight from where
  /// it computed it and never store it in dst). No later step may read dst before writing
  /// it; the verifier holds dst as unwritten once the send has been delivered.
  bool forwardOnly = false;
  std::int32_t recvPeer = -1;
  std::int32_t sendPeer = -1;
  std::uint32_t recvIndex = 0;  // message index of the receive (see file comment)
  std::uint32_t sendIndex = 0;  // message index of the send
  Region src;                   // send source, or the local operand of a reduction/copy
  Region dst;                   // receive, copy or reduction destination
  std::uint32_t depBegin = 0;   // dependencies: Schedule::deps[depBegin, depBegin + depCount)
  std::uint32_t depCount = 0;
};

struct Schedule {
  int rank = 0;
  int size = 1;
  std::vector<Step> steps;
  std::vector<StepId> deps;
  /// Elements of scratch space the schedule addresses (BufferKind::kScratch).
  std::uint64_t scratchCount = 0;

  /// Human-readable listing, one step per line (for logs, tests and tutti-bench --verify).
  std::string toString() const;
};

/// Builds a Schedule step by step, numbering messages per peer.
class ScheduleBuilder {
 public:
  ScheduleBuilder(int rank, int size);

  StepId send(int peer, Region src, std::initializer_list<StepId> deps = {});
  StepId recv(int peer, Region dst, std::initializer_list<StepId> deps = {});
  StepId recvReduce(int peer, Region src, Region dst, std::initializer_list<StepId> deps = {});
  StepId recvReduceSend(int recvPeer, int sendPeer, Region src, Region dst,
                        std::initializer_list<StepId> deps = {});
  StepId recvCopySend(int recvPeer, int sendPeer, Region dst,
                      std::initializer_list<StepId> deps = {});
  StepId copy(Region src, Region dst, std::initializer_list<StepId> deps = {});
  StepId reduce(Region src, Region dst, std::initializer_list<StepId> deps = {});

  /// Adds a dependency to an existing step (must point to an earlier step).
  void addDependency(StepId step, StepId on);
  /// Marks a step as applying the operator's finalization to its destination.
  void setFinalize(StepId step);
  /// Marks a recvReduceSend whose dst is only the send's source (Step::forwardOnly).
  void setForwardOnly(StepId step);
  void reserveScratch(std::uint64_t count);
  /// Lets send and receive steps name this rank itself: point to point only (a message to
  /// self, which the executor moves through the transport's loopback link). A collective's
  /// schedule never needs it, and the check catches a slip in its arithmetic.
  void allowSelfMessages() { allowSelf_ = true; }

  int rank() const { return schedule_.rank; }
  int size() const { return schedule_.size; }
  std::size_t stepCount() const { return schedule_.steps.size(); }

  Schedule build() &&;

 private:
  StepId add(Step step, std::initializer_list<StepId> deps);

  Schedule schedule_;
  std::vector<std::uint32_t> sendCount_;  // per peer: messages created so far
  std::vector<std::uint32_t> recvCount_;
  // Dependencies are collected per step and flattened in build().
  std::vector<std::vector<StepId>> stepDeps_;
  bool allowSelf_ = false;
};

}  // namespace tutti
