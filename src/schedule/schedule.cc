#include "schedule/schedule.h"

#include "base/assert.h"
#include "base/strings.h"

namespace tutti {

const char* opCodeName(OpCode op) {
  switch (op) {
    case OpCode::kSend: return "send";
    case OpCode::kRecv: return "recv";
    case OpCode::kRecvReduce: return "recvReduce";
    case OpCode::kRecvReduceSend: return "recvReduceSend";
    case OpCode::kRecvCopySend: return "recvCopySend";
    case OpCode::kCopy: return "copy";
    case OpCode::kReduce: return "reduce";
  }
  return "?";
}

bool opReceives(OpCode op) {
  return op == OpCode::kRecv || op == OpCode::kRecvReduce || op == OpCode::kRecvReduceSend ||
         op == OpCode::kRecvCopySend;
}

bool opSends(OpCode op) {
  return op == OpCode::kSend || op == OpCode::kRecvReduceSend || op == OpCode::kRecvCopySend;
}

namespace {

std::string regionText(const Region& r) {
  static constexpr const char* kNames[] = {"in", "out", "scratch"};
  return strFormat("%s[%llu+%llu]", kNames[static_cast<int>(r.buffer)],
                   static_cast<unsigned long long>(r.offset),
                   static_cast<unsigned long long>(r.count));
}

}  // namespace

std::string Schedule::toString() const {
  std::string out = strFormat("schedule rank %d/%d, %zu steps\n", rank, size, steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    out += strFormat("  %3zu %-14s", i, opCodeName(s.op));
    if (opReceives(s.op)) out += strFormat(" from %d#%u", s.recvPeer, s.recvIndex);
    if (opSends(s.op)) out += strFormat(" to %d#%u", s.sendPeer, s.sendIndex);
    if (s.op != OpCode::kRecv && s.op != OpCode::kRecvCopySend) out += " src=" + regionText(s.src);
    if (s.op != OpCode::kSend) out += " dst=" + regionText(s.dst);
    if (s.finalize) out += " finalize";
    if (s.forwardOnly) out += " forward-only";
    if (s.depCount > 0) {
      out += " after";
      for (std::uint32_t d = 0; d < s.depCount; ++d) out += strFormat(" %u", deps[s.depBegin + d]);
    }
    out += "\n";
  }
  return out;
}

ScheduleBuilder::ScheduleBuilder(int rank, int size)
    : sendCount_(static_cast<std::size_t>(size), 0), recvCount_(static_cast<std::size_t>(size), 0) {
  TUTTI_ASSERT_CMP(size, >=, 1);
  TUTTI_ASSERT(rank >= 0 && rank < size);
  schedule_.rank = rank;
  schedule_.size = size;
}

StepId ScheduleBuilder::add(Step step, std::initializer_list<StepId> deps) {
  auto id = static_cast<StepId>(schedule_.steps.size());
  if (opReceives(step.op)) {
    TUTTI_ASSERT(step.recvPeer >= 0 && step.recvPeer < schedule_.size);
    TUTTI_ASSERT(allowSelf_ || step.recvPeer != schedule_.rank);
    step.recvIndex = recvCount_[static_cast<std::size_t>(step.recvPeer)]++;
  }
  if (opSends(step.op)) {
    TUTTI_ASSERT(step.sendPeer >= 0 && step.sendPeer < schedule_.size);
    TUTTI_ASSERT(allowSelf_ || step.sendPeer != schedule_.rank);
    step.sendIndex = sendCount_[static_cast<std::size_t>(step.sendPeer)]++;
  }
  schedule_.steps.push_back(step);
  stepDeps_.emplace_back();
  for (StepId d : deps) addDependency(id, d);
  return id;
}

void ScheduleBuilder::addDependency(StepId step, StepId on) {
  TUTTI_ASSERT_CMP(on, <, step);
  TUTTI_ASSERT_CMP(step, <, stepDeps_.size());
  stepDeps_[step].push_back(on);
}

void ScheduleBuilder::setFinalize(StepId step) {
  TUTTI_ASSERT_CMP(step, <, schedule_.steps.size());
  schedule_.steps[step].finalize = true;
}

void ScheduleBuilder::setForwardOnly(StepId step) {
  TUTTI_ASSERT_CMP(step, <, schedule_.steps.size());
  TUTTI_ASSERT(schedule_.steps[step].op == OpCode::kRecvReduceSend);
  schedule_.steps[step].forwardOnly = true;
}

void ScheduleBuilder::reserveScratch(std::uint64_t count) {
  if (count > schedule_.scratchCount) schedule_.scratchCount = count;
}

StepId ScheduleBuilder::send(int peer, Region src, std::initializer_list<StepId> deps) {
  Step s;
  s.op = OpCode::kSend;
  s.sendPeer = peer;
  s.src = src;
  return add(s, deps);
}

StepId ScheduleBuilder::recv(int peer, Region dst, std::initializer_list<StepId> deps) {
  Step s;
  s.op = OpCode::kRecv;
  s.recvPeer = peer;
  s.dst = dst;
  return add(s, deps);
}

StepId ScheduleBuilder::recvReduce(int peer, Region src, Region dst,
                                   std::initializer_list<StepId> deps) {
  TUTTI_ASSERT_CMP(src.count, ==, dst.count);
  Step s;
  s.op = OpCode::kRecvReduce;
  s.recvPeer = peer;
  s.src = src;
  s.dst = dst;
  return add(s, deps);
}

StepId ScheduleBuilder::recvReduceSend(int recvPeer, int sendPeer, Region src, Region dst,
                                       std::initializer_list<StepId> deps) {
  TUTTI_ASSERT_CMP(src.count, ==, dst.count);
  Step s;
  s.op = OpCode::kRecvReduceSend;
  s.recvPeer = recvPeer;
  s.sendPeer = sendPeer;
  s.src = src;
  s.dst = dst;
  return add(s, deps);
}

StepId ScheduleBuilder::recvCopySend(int recvPeer, int sendPeer, Region dst,
                                     std::initializer_list<StepId> deps) {
  Step s;
  s.op = OpCode::kRecvCopySend;
  s.recvPeer = recvPeer;
  s.sendPeer = sendPeer;
  s.dst = dst;
  return add(s, deps);
}

StepId ScheduleBuilder::copy(Region src, Region dst, std::initializer_list<StepId> deps) {
  TUTTI_ASSERT_CMP(src.count, ==, dst.count);
  Step s;
  s.op = OpCode::kCopy;
  s.src = src;
  s.dst = dst;
  return add(s, deps);
}

StepId ScheduleBuilder::reduce(Region src, Region dst, std::initializer_list<StepId> deps) {
  TUTTI_ASSERT_CMP(src.count, ==, dst.count);
  Step s;
  s.op = OpCode::kReduce;
  s.src = src;
  s.dst = dst;
  return add(s, deps);
}

Schedule ScheduleBuilder::build() && {
  schedule_.deps.clear();
  for (std::size_t i = 0; i < schedule_.steps.size(); ++i) {
    schedule_.steps[i].depBegin = static_cast<std::uint32_t>(schedule_.deps.size());
    schedule_.steps[i].depCount = static_cast<std::uint32_t>(stepDeps_[i].size());
    schedule_.deps.insert(schedule_.deps.end(), stepDeps_[i].begin(), stepDeps_[i].end());
  }
  return std::move(schedule_);
}

}  // namespace tutti
