#include "schedule/compose.h"

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

}  // namespace tutti
