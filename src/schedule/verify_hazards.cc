#include "schedule/verify_hazards.h"

#include <algorithm>
#include <map>
#include <vector>

#include "base/macros.h"
#include "base/strings.h"

namespace tutti::verify {
namespace {

bool combinesOperands(OpCode op) {
  return op == OpCode::kRecvReduce || op == OpCode::kRecvReduceSend || op == OpCode::kCopy ||
         op == OpCode::kReduce;
}

Status checkPeers(const Schedule& s, StepId id) {
  const Step& step = s.steps[id];
  auto bad = [&](int peer) { return peer < 0 || peer >= s.size || peer == s.rank; };
  if (opReceives(step.op) && bad(step.recvPeer))
    return stepError(s, id,
                     strFormat("receives from rank %d, which is not another rank of "
                               "the %d-rank world",
                               step.recvPeer, s.size));
  if (opSends(step.op) && bad(step.sendPeer))
    return stepError(s, id,
                     strFormat("sends to rank %d, which is not another rank of the "
                               "%d-rank world",
                               step.sendPeer, s.size));
  return Status::Ok();
}

Status checkDeps(const Schedule& s, StepId id) {
  const Step& step = s.steps[id];
  if (step.depCount == 0) return Status::Ok();
  if (step.depBegin > s.deps.size() || step.depCount > s.deps.size() - step.depBegin)
    return stepError(s, id,
                     strFormat("its dependencies [%u, +%u) lie outside the schedule's "
                               "%zu dependency entries",
                               step.depBegin, step.depCount, s.deps.size()));
  for (std::uint32_t d = 0; d < step.depCount; ++d) {
    const StepId on = s.deps[step.depBegin + d];
    if (on >= id)
      return stepError(s, id, strFormat("depends on step %u, which is not an earlier step", on));
  }
  return Status::Ok();
}

Status checkRegion(const Schedule& s, StepId id, const char* role, const Region& region,
                   const RankBuffers& buffers) {
  if (!validBuffer(region.buffer))
    return stepError(
        s, id, strFormat("its %s names unknown buffer %d", role, static_cast<int>(region.buffer)));
  if (!buffers.contains(region))
    return stepError(s, id,
                     strFormat("its %s %s lies outside the buffer, which holds %llu "
                               "elements",
                               role, regionText(region).c_str(),
                               static_cast<unsigned long long>(buffers.length(region.buffer))));
  return Status::Ok();
}

Status checkRegions(const Schedule& s, StepId id, const RankBuffers& buffers) {
  const Step& step = s.steps[id];
  if (combinesOperands(step.op) && step.src.count != step.dst.count)
    return stepError(s, id,
                     strFormat("its source has %llu elements but its destination %llu",
                               static_cast<unsigned long long>(step.src.count),
                               static_cast<unsigned long long>(step.dst.count)));
  if (usesSrc(step.op)) TUTTI_RETURN_IF_ERROR(checkRegion(s, id, "source", step.src, buffers));
  if (!usesDst(step.op)) return Status::Ok();
  TUTTI_RETURN_IF_ERROR(checkRegion(s, id, "destination", step.dst, buffers));
  if (step.dst.count == 0) return Status::Ok();
  const Extent dst = buffers.map(step.dst);
  if (!buffers.writable(dst))
    return stepError(s, id,
                     "writes the input buffer, which is the caller's read-only data "
                     "in an out-of-place call");
  if (usesSrc(step.op)) {
    const Extent src = buffers.map(step.src);
    if (src.overlaps(dst) && !(src == dst))
      return stepError(s, id,
                       "its source and destination partially overlap (after in-place "
                       "aliasing); they must be the same elements or disjoint");
  }
  return Status::Ok();
}

// The sweep of checkHazards(): accesses in step order per address space, keeping for each
// run of elements its last writer and the readers since. Checking only those is enough:
// dependencies point backwards, so if every write follows the previous write and the reads
// since it, and every read follows the last write, then by transitivity every conflicting
// pair is ordered, without looking at all pairs.
class HazardSweep {
 public:
  HazardSweep(const Schedule& schedule, const RankBuffers& buffers)
      : s_(schedule),
        buffers_(buffers),
        seenFor_(schedule.steps.size(), 0),
        stamp_(schedule.steps.size(), 0) {
    for (int space = 0; space < kSpaceCount; ++space) {
      if (buffers.spaceSize(space) > 0)
        spaces_[space].emplace(0, Cell{buffers.spaceSize(space), -1, {}});
      hints_[space] = spaces_[space].begin();
    }
  }

  Status run() {
    for (StepId id = 0; id < s_.steps.size(); ++id) {
      const Step& step = s_.steps[id];
      currentStep_ = id;
      needs_.clear();
      // Reads first: an in-place step reads and writes the same elements itself.
      if (usesSrc(step.op) && step.src.count > 0) access(id, step.src, false);
      if (usesDst(step.op) && step.dst.count > 0 && !selfCopy(step)) access(id, step.dst, true);
      TUTTI_RETURN_IF_ERROR(proveOrdered(id));
    }
    return Status::Ok();
  }

 private:
  struct Cell {
    std::uint64_t hi = 0;
    std::int64_t writer = -1;     // last step that wrote these elements
    std::vector<StepId> readers;  // steps that read them since
  };
  using Map = std::map<std::uint64_t, Cell>;
  // An earlier step that the current one must be ordered after, and why.
  struct Need {
    StepId earlier;
    Region where;  // the conflicting elements, in the current step's buffer
    bool laterWrites;
    bool earlierWrites;
  };

  // The cell of space `space` starting at `at`, splitting the one containing it if needed.
  // The cell used last and its neighbours are tried before a tree search (accesses walk
  // the buffers chunk by chunk).
  Map::iterator cellAt(int space, std::uint64_t at) {
    Map& map = spaces_[space];
    Map::iterator& hint = hints_[space];
    auto holds = [&](Map::iterator it) { return it->first <= at && at < it->second.hi; };
    Map::iterator it;
    if (holds(hint))
      it = hint;
    else if (std::next(hint) != map.end() && holds(std::next(hint)))
      it = std::next(hint);
    else if (hint != map.begin() && holds(std::prev(hint)))
      it = std::prev(hint);
    else
      it = std::prev(map.upper_bound(at));  // exists: the cells tile the space
    if (it->first == at) return it;
    Cell right = it->second;
    it->second.hi = at;
    return map.emplace_hint(std::next(it), at, std::move(right));
  }

  void access(StepId id, const Region& region, bool write) {
    const Extent e = buffers_.map(region);
    Map& map = spaces_[e.space];
    const auto first = cellAt(e.space, e.lo);
    hints_[e.space] = first;  // survives: only cells after it are erased below
    auto it = first;
    for (; it != map.end() && it->first < e.hi; ++it) {
      Cell& c = it->second;
      if (c.hi > e.hi) {  // the tail beyond the access keeps its history
        map.emplace_hint(std::next(it), e.hi, c);
        c.hi = e.hi;
      }
      const Region where{region.buffer, buffers_.indexIn(region.buffer, it->first),
                         c.hi - it->first};
      if (c.writer >= 0 && c.writer != id) need(static_cast<StepId>(c.writer), where, write, true);
      if (!write) {
        if (c.readers.empty() || c.readers.back() != id) c.readers.push_back(id);
        continue;
      }
      for (StepId r : c.readers)
        if (r != id) need(r, where, true, false);
    }
    if (!write) return;
    // Every element written now shares one history: one cell, so the map stays as small
    // as the number of distinct access patterns.
    map.erase(std::next(first), it);
    first->second.hi = e.hi;
    first->second.writer = id;
    first->second.readers.clear();
  }

  void need(StepId earlier, const Region& where, bool laterWrites, bool earlierWrites) {
    if (seenFor_[earlier] == currentStep_ + 1) return;
    seenFor_[earlier] = currentStep_ + 1;
    needs_.push_back(Need{earlier, where, laterWrites, earlierWrites});
  }

  bool directlyDepends(StepId later, StepId earlier) const {
    const Step& step = s_.steps[later];
    for (std::uint32_t d = 0; d < step.depCount; ++d)
      if (s_.deps[step.depBegin + d] == earlier) return true;
    return false;
  }

  // Marks (in stamp_) every ancestor of `from` with an index >= floor.
  void markAncestors(StepId from, StepId floor) {
    ++epoch_;
    stack_.assign(1, from);
    while (!stack_.empty()) {
      const Step& step = s_.steps[stack_.back()];
      stack_.pop_back();
      for (std::uint32_t d = 0; d < step.depCount; ++d) {
        const StepId on = s_.deps[step.depBegin + d];
        if (on < floor || stamp_[on] == epoch_) continue;
        stamp_[on] = epoch_;
        stack_.push_back(on);
      }
    }
  }

  // Every step in needs_ must be an ancestor of `id`. Direct dependencies are the common
  // case; otherwise one search of the ancestors, bounded below by the earliest step needed,
  // answers all of them at once.
  Status proveOrdered(StepId id) {
    StepId floor = id;
    bool searched = false;
    for (const Need& n : needs_) {
      if (!directlyDepends(id, n.earlier)) floor = std::min(floor, n.earlier);
    }
    for (const Need& n : needs_) {
      if (directlyDepends(id, n.earlier)) continue;
      if (!searched) markAncestors(id, floor);
      searched = true;
      if (stamp_[n.earlier] == epoch_) continue;
      return Status(
          ErrorCode::kInternal,
          strFormat("rank %d: %s and %s race on %s (the first %s, the second %s it) but neither "
                    "depends on the other, directly or through other steps",
                    s_.rank, stepText(s_, n.earlier).c_str(), stepText(s_, id).c_str(),
                    regionText(n.where).c_str(), n.earlierWrites ? "writes" : "reads",
                    n.laterWrites ? "writes" : "reads"));
    }
    return Status::Ok();
  }

  // A copy onto itself without finalize writes nothing: the executor skips it (it is how
  // algorithms place the input in the output whether or not the call is in place).
  bool selfCopy(const Step& step) const {
    return step.op == OpCode::kCopy && !step.finalize &&
           buffers_.map(step.src) == buffers_.map(step.dst);
  }

  const Schedule& s_;
  const RankBuffers& buffers_;
  Map spaces_[kSpaceCount];
  Map::iterator hints_[kSpaceCount];  // per space, the cell accessed last
  std::vector<Need> needs_;
  StepId currentStep_ = 0;
  std::vector<std::uint32_t> seenFor_;  // seenFor_[e] == id + 1: e already needed by step id
  std::vector<std::uint32_t> stamp_;
  std::uint32_t epoch_ = 0;
  std::vector<StepId> stack_;
};

}  // namespace

Status checkStructure(const Schedule& schedule, const RankBuffers& buffers) {
  for (StepId id = 0; id < schedule.steps.size(); ++id) {
    const Step& step = schedule.steps[id];
    if (!validOp(step.op))
      return stepError(schedule, id, strFormat("unknown op code %d", static_cast<int>(step.op)));
    TUTTI_RETURN_IF_ERROR(checkPeers(schedule, id));
    TUTTI_RETURN_IF_ERROR(checkDeps(schedule, id));
    TUTTI_RETURN_IF_ERROR(checkRegions(schedule, id, buffers));
    if (step.finalize && step.op == OpCode::kSend)
      return stepError(schedule, id, "finalizes, but a send has no destination to finalize");
  }
  return Status::Ok();
}

Status checkHazards(const Schedule& schedule, const RankBuffers& buffers) {
  HazardSweep sweep(schedule, buffers);
  return sweep.run();
}

}  // namespace tutti::verify
