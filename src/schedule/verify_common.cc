#include "schedule/verify_common.h"

#include "base/strings.h"

namespace tutti::verify {

RankBuffers::RankBuffers(const CollectiveSpec& spec, std::uint64_t scratchCount) {
  const BufferLayout layout = bufferLayout(spec);
  length_[0] = layout.inputCount;
  length_[1] = layout.outputCount;
  length_[2] = scratchCount;
  spaceSize_[0] = layout.inputCount;
  spaceSize_[1] = layout.outputCount;
  spaceSize_[2] = scratchCount;
  if (layout.inputInOutputAt) {
    // The input is a window of the output: its regions live in the output's space, and
    // the input space itself is empty.
    space_[0] = 1;
    base_[0] = *layout.inputInOutputAt;
    spaceSize_[0] = 0;
    inputWritable_ = true;
  } else if (layout.outputInInputAt) {
    space_[1] = 0;
    base_[1] = *layout.outputInInputAt;
    spaceSize_[1] = 0;
    inputWritable_ = true;
  }
}

bool RankBuffers::contains(const Region& region) const {
  if (region.count == 0) return true;
  const int i = index(region.buffer);
  const std::uint64_t length = length_[i];
  if (region.count > length || region.offset > length - region.count) return false;
  // A view must also lie inside the buffer it aliases (a displacement past the end of an
  // in-place v-collective's buffer would put it outside).
  const std::uint64_t space = spaceSize_[space_[i]];
  return base_[i] <= space && region.offset + region.count <= space - base_[i];
}

Extent RankBuffers::map(const Region& region) const {
  const int i = index(region.buffer);
  const std::uint64_t lo = base_[i] + region.offset;
  return Extent{space_[i], lo, lo + region.count};
}

bool validBuffer(BufferKind kind) {
  return kind == BufferKind::kInput || kind == BufferKind::kOutput || kind == BufferKind::kScratch;
}

bool validOp(OpCode op) { return static_cast<int>(op) <= static_cast<int>(OpCode::kReduce); }

bool usesSrc(OpCode op) { return op != OpCode::kRecv && op != OpCode::kRecvCopySend; }

bool usesDst(OpCode op) { return op != OpCode::kSend; }

const Region& sentRegion(const Step& step) {
  return step.op == OpCode::kSend ? step.src : step.dst;
}

std::uint64_t sentCount(const Step& step) { return sentRegion(step).count; }

std::uint64_t receivedCount(const Step& step) {
  // recvReduce* receive into staging an operand as long as their local source.
  return step.op == OpCode::kRecvReduce || step.op == OpCode::kRecvReduceSend ? step.src.count
                                                                              : step.dst.count;
}

std::string regionText(const Region& region) {
  static constexpr const char* kNames[] = {"in", "out", "scratch"};
  const char* name = validBuffer(region.buffer) ? kNames[static_cast<int>(region.buffer)] : "?";
  return strFormat("%s[%llu..%llu)", name, static_cast<unsigned long long>(region.offset),
                   static_cast<unsigned long long>(region.offset + region.count));
}

std::string stepText(const Schedule& schedule, StepId id) {
  if (id >= schedule.steps.size()) return strFormat("step %u (past the end)", id);
  const Step& s = schedule.steps[id];
  if (!validOp(s.op)) return strFormat("step %u (unknown op %d)", id, static_cast<int>(s.op));
  std::string text = strFormat("step %u (%s", id, opCodeName(s.op));
  if (opReceives(s.op)) text += strFormat(" from %d#%u", s.recvPeer, s.recvIndex);
  if (opSends(s.op)) text += strFormat(" to %d#%u", s.sendPeer, s.sendIndex);
  text += ",";
  if (usesSrc(s.op)) text += " src=" + regionText(s.src);
  if (usesDst(s.op)) text += " dst=" + regionText(s.dst);
  if (s.finalize) text += ", finalize";
  return text + ")";
}

Status stepError(const Schedule& schedule, StepId id, const std::string& what) {
  return Status(ErrorCode::kInternal, strFormat("rank %d %s: %s", schedule.rank,
                                                stepText(schedule, id).c_str(), what.c_str()));
}

}  // namespace tutti::verify
