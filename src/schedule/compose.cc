#include "schedule/compose.h"

#include <algorithm>
#include <vector>

#include "base/assert.h"

namespace tutti {

Schedule concatenate(Schedule first, const Schedule& second) {
  TUTTI_ASSERT_CMP(first.rank, ==, second.rank);
  TUTTI_ASSERT_CMP(first.size, ==, second.size);
  const auto n = static_cast<std::size_t>(first.size);
  // Messages already numbered per peer in the first part.
  std::vector<std::uint32_t> sends(n, 0), recvs(n, 0);
  std::vector<bool> hasDependent(first.steps.size(), false);
  for (const Step& s : first.steps) {
    if (opSends(s.op)) sends[static_cast<std::size_t>(s.sendPeer)] = s.sendIndex + 1;
    if (opReceives(s.op)) recvs[static_cast<std::size_t>(s.recvPeer)] = s.recvIndex + 1;
    for (std::uint32_t d = 0; d < s.depCount; ++d) hasDependent[first.deps[s.depBegin + d]] = true;
  }
  std::vector<StepId> sinks;
  for (std::size_t i = 0; i < first.steps.size(); ++i) {
    if (!hasDependent[i]) sinks.push_back(static_cast<StepId>(i));
  }
  // With many sinks and many dependency-free steps in `second`, depending on every sink from
  // every such step costs sinks x roots dependencies (141 million for a 64-rank segmented
  // reduce + broadcast). A join step — a copy of zero elements that depends on every sink —
  // stands between the phases instead: sinks + roots dependencies.
  std::size_t roots = 0;
  for (const Step& s : second.steps) roots += s.depCount == 0 ? 1 : 0;
  if (sinks.size() > 1 && roots > 1) {
    Step join;
    join.op = OpCode::kCopy;
    join.src = join.dst = Region{BufferKind::kOutput, 0, 0};
    join.depBegin = static_cast<std::uint32_t>(first.deps.size());
    join.depCount = static_cast<std::uint32_t>(sinks.size());
    first.deps.insert(first.deps.end(), sinks.begin(), sinks.end());
    first.steps.push_back(join);
    sinks.assign(1, static_cast<StepId>(first.steps.size() - 1));
  }
  const auto base = static_cast<StepId>(first.steps.size());
  for (const Step& original : second.steps) {
    Step s = original;
    if (opSends(s.op)) s.sendIndex += sends[static_cast<std::size_t>(s.sendPeer)];
    if (opReceives(s.op)) s.recvIndex += recvs[static_cast<std::size_t>(s.recvPeer)];
    s.depBegin = static_cast<std::uint32_t>(first.deps.size());
    if (original.depCount == 0) {
      first.deps.insert(first.deps.end(), sinks.begin(), sinks.end());
      s.depCount = static_cast<std::uint32_t>(sinks.size());
    } else {
      for (std::uint32_t d = 0; d < original.depCount; ++d)
        first.deps.push_back(base + second.deps[original.depBegin + d]);
    }
    first.steps.push_back(s);
  }
  first.scratchCount = std::max(first.scratchCount, second.scratchCount);
  return first;
}

void offsetRegions(Schedule& schedule, BufferKind buffer, std::uint64_t offset) {
  for (Step& s : schedule.steps) {
    if (s.src.buffer == buffer) s.src.offset += offset;
    if (s.dst.buffer == buffer) s.dst.offset += offset;
  }
}

void remapBuffer(Schedule& schedule, BufferKind from, BufferKind to) {
  for (Step& s : schedule.steps) {
    if (s.src.buffer == from) s.src.buffer = to;
    if (s.dst.buffer == from) s.dst.buffer = to;
  }
}

Schedule embed(Schedule sub, const std::vector<int>& members, int worldSize) {
  TUTTI_ASSERT_CMP(static_cast<std::size_t>(sub.size), ==, members.size());
  for (Step& s : sub.steps) {
    if (opReceives(s.op)) s.recvPeer = members[static_cast<std::size_t>(s.recvPeer)];
    if (opSends(s.op)) s.sendPeer = members[static_cast<std::size_t>(s.sendPeer)];
  }
  sub.rank = members[static_cast<std::size_t>(sub.rank)];
  sub.size = worldSize;
  return sub;
}

void shiftScratch(Schedule& schedule, std::uint64_t base) {
  offsetRegions(schedule, BufferKind::kScratch, base);
  if (schedule.scratchCount > 0) schedule.scratchCount += base;
}

void clearFinalize(Schedule& schedule) {
  for (Step& s : schedule.steps) s.finalize = false;
}

ScheduleAssembler::ScheduleAssembler(int rank, int size, std::uint64_t sharedScratch)
    : sends_(static_cast<std::size_t>(size), 0),
      recvs_(static_cast<std::size_t>(size), 0),
      shared_(sharedScratch),
      scratchEnd_(sharedScratch) {
  schedule_.rank = rank;
  schedule_.size = size;
}

ScheduleAssembler::PartId ScheduleAssembler::add(Schedule part, const std::vector<PartId>& after) {
  // The part's own scratch, above the shared elements, moves to a range of its own.
  if (part.scratchCount > shared_) {
    const std::uint64_t shift = scratchEnd_ - shared_;
    for (Step& s : part.steps) {
      for (Region* r : {&s.src, &s.dst})
        if (r->buffer == BufferKind::kScratch && r->offset >= shared_) r->offset += shift;
    }
    scratchEnd_ += part.scratchCount - shared_;
  }
  return append(std::move(part), after);
}

ScheduleAssembler::PartId ScheduleAssembler::append(Schedule part,
                                                    const std::vector<PartId>& after) {
  TUTTI_ASSERT_CMP(part.rank, ==, schedule_.rank);
  TUTTI_ASSERT_CMP(part.size, ==, schedule_.size);
  // A part's sinks are its steps no step of the same part depends on (isSink_ is only
  // ever cleared by dependencies inside a part).
  std::vector<StepId> sinks;
  for (PartId id : after) {
    TUTTI_ASSERT_CMP(id, <, parts_.size());
    for (StepId s = parts_[id].begin; s < parts_[id].end; ++s)
      if (isSink_[s]) sinks.push_back(s);
  }
  std::size_t roots = 0;
  for (const Step& s : part.steps) roots += s.depCount == 0 ? 1 : 0;
  if (sinks.size() > 1 && roots > 1) {  // a join, as in concatenate()
    Step join;
    join.op = OpCode::kCopy;
    join.src = join.dst = Region{BufferKind::kOutput, 0, 0};
    join.depBegin = static_cast<std::uint32_t>(schedule_.deps.size());
    join.depCount = static_cast<std::uint32_t>(sinks.size());
    schedule_.deps.insert(schedule_.deps.end(), sinks.begin(), sinks.end());
    schedule_.steps.push_back(join);
    isSink_.push_back(false);  // belongs to no part
    sinks.assign(1, static_cast<StepId>(schedule_.steps.size() - 1));
  }
  const auto base = static_cast<StepId>(schedule_.steps.size());
  // Message indices continue after the parts before, per peer (as in concatenate()).
  std::vector<std::uint32_t> sent = sends_, received = recvs_;
  for (const Step& original : part.steps) {
    Step s = original;
    if (opSends(s.op)) {
      const auto p = static_cast<std::size_t>(s.sendPeer);
      s.sendIndex += sends_[p];
      sent[p] = std::max(sent[p], s.sendIndex + 1);
    }
    if (opReceives(s.op)) {
      const auto p = static_cast<std::size_t>(s.recvPeer);
      s.recvIndex += recvs_[p];
      received[p] = std::max(received[p], s.recvIndex + 1);
    }
    s.depBegin = static_cast<std::uint32_t>(schedule_.deps.size());
    if (original.depCount == 0) {
      schedule_.deps.insert(schedule_.deps.end(), sinks.begin(), sinks.end());
      s.depCount = static_cast<std::uint32_t>(sinks.size());
    } else {
      for (std::uint32_t d = 0; d < original.depCount; ++d) {
        const StepId on = base + part.deps[original.depBegin + d];
        schedule_.deps.push_back(on);
        isSink_[on] = false;
      }
    }
    schedule_.steps.push_back(s);
    isSink_.push_back(true);
  }
  sends_ = std::move(sent);
  recvs_ = std::move(received);
  parts_.push_back({base, static_cast<StepId>(schedule_.steps.size())});
  return parts_.size() - 1;
}

Schedule ScheduleAssembler::build() && {
  schedule_.scratchCount = std::max(schedule_.scratchCount, scratchEnd_);
  return std::move(schedule_);
}

}  // namespace tutti
