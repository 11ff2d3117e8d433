#pragma once
// Pieces shared by the verifier's passes (verifier.cc drives them; verifier.h states the
// contract): how one rank's buffers map onto address spaces once in-place aliasing is
// applied, and how steps and regions are named in error messages.
//
// Address spaces: every rank has up to three, the input, the output and the scratch
// buffer. In place, one of input and output is a view into the other (collective.h), so
// its regions are translated into the other's space: a write through the output is then
// seen by a read through the input, as it is in memory.

#include <cstdint>
#include <string>

#include "schedule/collective.h"
#include "schedule/schedule.h"
#include "tutti/status.h"

namespace tutti::verify {

inline constexpr int kSpaceCount = 3;  // input, output, scratch

/// A region translated into its address space: elements [lo, hi) of space `space`.
struct Extent {
  int space = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;

  bool empty() const { return lo == hi; }
  bool overlaps(const Extent& other) const {
    return space == other.space && lo < other.hi && other.lo < hi;
  }
  bool operator==(const Extent& other) const = default;
};

/// One rank's buffers for a call: their lengths (bufferLayout() plus the schedule's
/// scratch) and where each buffer lives after aliasing.
class RankBuffers {
 public:
  RankBuffers(const CollectiveSpec& spec, std::uint64_t scratchCount);

  /// Elements the buffer holds as the user passed it (the view's length when aliased).
  std::uint64_t length(BufferKind kind) const { return length_[index(kind)]; }
  /// Elements of address space `space`.
  std::uint64_t spaceSize(int space) const { return spaceSize_[space]; }
  /// True when `region` lies inside its buffer (empty regions always do).
  bool contains(const Region& region) const;
  /// `region` in its address space; the region must lie inside its buffer.
  Extent map(const Region& region) const;
  /// The element of `kind` that address `address` of the kind's space is, i.e. the inverse
  /// of map() (for messages); `address` must lie in the buffer's view.
  std::uint64_t indexIn(BufferKind kind, std::uint64_t address) const {
    return address - base_[index(kind)];
  }
  /// False for the input of an out-of-place call: the user's input is read-only. In place,
  /// the one buffer is the user's to overwrite.
  bool writable(const Extent& extent) const { return extent.space != 0 || inputWritable_; }

 private:
  static int index(BufferKind kind) { return static_cast<int>(kind); }

  std::uint64_t length_[kSpaceCount] = {};
  int space_[kSpaceCount] = {0, 1, 2};
  std::uint64_t base_[kSpaceCount] = {};
  std::uint64_t spaceSize_[kSpaceCount] = {};
  bool inputWritable_ = false;
};

/// True for the enumerators BufferKind declares (schedules built by hand may hold others).
bool validBuffer(BufferKind kind);
/// True for the enumerators OpCode declares.
bool validOp(OpCode op);

/// The region an op reads its local operand from: send and recvReduce* read src, copy and
/// reduce read src; recv and recvCopySend read none (returns false).
bool usesSrc(OpCode op);
/// True for ops that write dst (all but send).
bool usesDst(OpCode op);
/// The region the step's send half transmits: src for send, dst for the fused steps.
const Region& sentRegion(const Step& step);
/// Elements the step sends (its send half) and receives (its receive half).
std::uint64_t sentCount(const Step& step);
std::uint64_t receivedCount(const Step& step);

/// "out[12..16)".
std::string regionText(const Region& region);
/// "step 5 (recvReduceSend from 2#1 to 4#1, src=in[0..4) dst=out[0..4), finalize)".
std::string stepText(const Schedule& schedule, StepId id);
/// "rank 3 step 5 (...): what" as a kInternal Status.
Status stepError(const Schedule& schedule, StepId id, const std::string& what);

}  // namespace tutti::verify
