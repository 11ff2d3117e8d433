#include "unit/algorithms/schedule_sim.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <tuple>

#include "base/strings.h"

namespace tutti::testing {
namespace {

// One element, symbolically.
struct Value {
  bool defined = false;
  bool finalized = false;
  std::uint64_t position = 0;  // index in the input the contributions come from
  std::uint64_t ranks = 0;     // bitmask of contributing ranks
  std::uint64_t tree = 0;      // hash of the ordered expression tree
};

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Value leaf(int rank, std::uint64_t position) {
  return {true, false, position, std::uint64_t{1} << rank,
          mix(static_cast<std::uint64_t>(rank) + 1)};
}

// Buffers as memory: the input and output of an in-place call are one buffer.
enum PhysBuffer : int { kPhysIn = 0, kPhysOut = 1, kPhysScratch = 2 };
struct PhysRegion {
  int buffer = 0;
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

bool overlaps(const PhysRegion& a, const PhysRegion& b) {
  return a.buffer == b.buffer && a.count > 0 && b.count > 0 && a.offset < b.offset + b.count &&
         b.offset < a.offset + a.count;
}

bool reducesOnReceive(OpCode op) {
  return op == OpCode::kRecvReduce || op == OpCode::kRecvReduceSend;
}

enum StepState : std::uint8_t { kIdle, kReceiving, kSending, kDone };

struct RankRun {
  const CollectiveSpec* spec = nullptr;
  const Schedule* schedule = nullptr;
  BufferLayout layout;
  std::array<std::vector<Value>, 3> memory;
  std::vector<std::uint8_t> state;
  std::vector<std::uint64_t> depth;
  std::size_t next = 0;
  std::size_t active = 0;
  std::size_t done = 0;
  std::uint64_t elementsSent = 0;
  std::uint64_t messagesSent = 0;
};

using Key = std::tuple<int, int, std::uint32_t>;  // sender, receiver, message index

class Simulator {
 public:
  Simulator(const std::vector<CollectiveSpec>& specs, const std::vector<Schedule>& schedules,
            const SimOptions& options)
      : options_(options), runs_(specs.size()) {
    for (std::size_t r = 0; r < specs.size(); ++r) {
      RankRun& run = runs_[r];
      run.spec = &specs[r];
      run.schedule = &schedules[r];
      run.layout = bufferLayout(specs[r]);
    }
  }

  std::string run(SimStats* stats);

 private:
  PhysRegion phys(const RankRun& run, const Region& region) const;
  std::string checkStatic(int rank);
  std::string checkHazards(int rank);
  std::string issue(int rank, bool* progressed);
  std::string start(int rank, StepId id);
  std::string post(std::map<Key, std::pair<int, StepId>>& mine,
                   const std::map<Key, std::pair<int, StepId>>& theirs, Key key, int rank,
                   StepId id);
  std::string deliver(const Key& key);
  void complete(RankRun& run);
  std::vector<Value> read(const RankRun& run, const Region& region) const;
  void write(RankRun& run, const Region& region, const std::vector<Value>& values);
  std::string combine(const Value& a, const Value& b, Value* out) const;
  std::string finalize(RankRun& run, const Region& region);
  std::string checkResults() const;
  std::string describeStuck() const;

  SimOptions options_;
  std::vector<RankRun> runs_;
  std::map<Key, std::pair<int, StepId>> offers_, wants_;
  std::deque<Key> ready_;
  std::uint64_t messages_ = 0;
};

PhysRegion Simulator::phys(const RankRun& run, const Region& region) const {
  switch (region.buffer) {
    case BufferKind::kInput:
      if (run.layout.inputInOutputAt)
        return {kPhysOut, region.offset + *run.layout.inputInOutputAt, region.count};
      return {kPhysIn, region.offset, region.count};
    case BufferKind::kOutput:
      if (run.layout.outputInInputAt)
        return {kPhysIn, region.offset + *run.layout.outputInInputAt, region.count};
      return {kPhysOut, region.offset, region.count};
    case BufferKind::kScratch:
      return {kPhysScratch, region.offset, region.count};
  }
  return {};
}

std::vector<Value> Simulator::read(const RankRun& run, const Region& region) const {
  const PhysRegion p = phys(run, region);
  const auto& mem = run.memory[static_cast<std::size_t>(p.buffer)];
  return {mem.begin() + static_cast<std::ptrdiff_t>(p.offset),
          mem.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count)};
}

void Simulator::write(RankRun& run, const Region& region, const std::vector<Value>& values) {
  const PhysRegion p = phys(run, region);
  auto& mem = run.memory[static_cast<std::size_t>(p.buffer)];
  std::copy(values.begin(), values.end(), mem.begin() + static_cast<std::ptrdiff_t>(p.offset));
}

std::string Simulator::combine(const Value& a, const Value& b, Value* out) const {
  if (!a.defined || !b.defined) return "reduces an undefined element";
  if (a.position != b.position)
    return strFormat("reduces element %llu with element %llu",
                     static_cast<unsigned long long>(a.position),
                     static_cast<unsigned long long>(b.position));
  if (a.finalized || b.finalized) return "reduces an element already finalized";
  if ((a.ranks & b.ranks) != 0)
    return strFormat("counts contributions twice (ranks mask %llx)",
                     static_cast<unsigned long long>(a.ranks & b.ranks));
  *out = {true, false, a.position, a.ranks | b.ranks, mix(a.tree * 31 + mix(b.tree) + 7)};
  return {};
}

std::string Simulator::finalize(RankRun& run, const Region& region) {
  const PhysRegion p = phys(run, region);
  auto& mem = run.memory[static_cast<std::size_t>(p.buffer)];
  for (std::uint64_t j = 0; j < p.count; ++j) {
    Value& v = mem[p.offset + j];
    if (!v.defined) return "finalizes an undefined element";
    if (v.finalized) return "finalizes an element twice";
    v.finalized = true;
  }
  return {};
}

// Bounds, self-overlap and, optionally, hazards.
std::string Simulator::checkStatic(int rank) {
  RankRun& run = runs_[static_cast<std::size_t>(rank)];
  const Schedule& s = *run.schedule;
  if (s.rank != rank || s.size != static_cast<int>(runs_.size()))
    return strFormat("schedule says rank %d of %d", s.rank, s.size);
  auto inBounds = [&](const Region& region) {
    std::uint64_t size = region.buffer == BufferKind::kInput    ? run.layout.inputCount
                         : region.buffer == BufferKind::kOutput ? run.layout.outputCount
                                                                : s.scratchCount;
    return region.count == 0 || region.offset + region.count <= size;
  };
  for (StepId i = 0; i < s.steps.size(); ++i) {
    const Step& step = s.steps[i];
    for (std::uint32_t d = 0; d < step.depCount; ++d) {
      if (s.deps[step.depBegin + d] >= i) return strFormat("step %u depends on a later step", i);
    }
    const bool hasSrc = step.op != OpCode::kRecv && step.op != OpCode::kRecvCopySend;
    const bool hasDst = step.op != OpCode::kSend;
    if ((hasSrc && !inBounds(step.src)) || (hasDst && !inBounds(step.dst)))
      return strFormat("step %u (%s) addresses outside its buffer", i, opCodeName(step.op));
    if (hasSrc && hasDst) {
      PhysRegion a = phys(run, step.src), b = phys(run, step.dst);
      if (overlaps(a, b) && (a.offset != b.offset || a.count != b.count))
        return strFormat("step %u (%s) partially overlaps its source and destination", i,
                         opCodeName(step.op));
    }
    auto badPeer = [&](int peer) { return peer < 0 || peer >= s.size || peer == rank; };
    if ((opSends(step.op) && badPeer(step.sendPeer)) ||
        (opReceives(step.op) && badPeer(step.recvPeer)))
      return strFormat("step %u (%s) names a bad peer", i, opCodeName(step.op));
  }
  return options_.checkHazards ? checkHazards(rank) : std::string();
}

std::string Simulator::checkHazards(int rank) {
  const RankRun& run = runs_[static_cast<std::size_t>(rank)];
  const Schedule& s = *run.schedule;
  const std::size_t n = s.steps.size();
  const std::size_t words = (n + 63) / 64;
  std::vector<std::uint64_t> ancestors(n * words, 0);  // step i's transitive dependencies
  std::vector<PhysRegion> reads(n), writes(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Step& step = s.steps[i];
    std::uint64_t* mine = &ancestors[i * words];
    for (std::uint32_t d = 0; d < step.depCount; ++d) {
      const StepId dep = s.deps[step.depBegin + d];
      const std::uint64_t* theirs = &ancestors[dep * words];
      for (std::size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[dep / 64] |= std::uint64_t{1} << (dep % 64);
    }
    if (step.op != OpCode::kRecv && step.op != OpCode::kRecvCopySend)
      reads[i] = phys(run, step.src);
    if (step.op != OpCode::kSend) writes[i] = phys(run, step.dst);
    // A copy of a region onto itself (in place, NCCL-style) changes nothing.
    const bool selfCopy = step.op == OpCode::kCopy && !step.finalize &&
                          reads[i].buffer == writes[i].buffer &&
                          reads[i].offset == writes[i].offset;
    if (selfCopy) writes[i] = {};
  }
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      const bool conflict = overlaps(writes[i], reads[j]) || overlaps(writes[i], writes[j]) ||
                            overlaps(reads[i], writes[j]);
      if (conflict && (ancestors[j * words + i / 64] & (std::uint64_t{1} << (i % 64))) == 0)
        return strFormat("steps %zu (%s) and %zu (%s) conflict but are not ordered", i,
                         opCodeName(s.steps[i].op), j, opCodeName(s.steps[j].op));
    }
  }
  return {};
}

std::string Simulator::post(std::map<Key, std::pair<int, StepId>>& mine,
                            const std::map<Key, std::pair<int, StepId>>& theirs, Key key, int rank,
                            StepId id) {
  if (!mine.emplace(key, std::make_pair(rank, id)).second)
    return strFormat("rank %d step %u: message index used twice", rank, id);
  if (theirs.count(key) != 0) ready_.push_back(key);
  return {};
}

void Simulator::complete(RankRun& run) {
  --run.active;
  ++run.done;
}

std::string Simulator::start(int rank, StepId id) {
  RankRun& run = runs_[static_cast<std::size_t>(rank)];
  const Schedule& s = *run.schedule;
  const Step& step = s.steps[id];
  std::uint64_t depth = 0;
  for (std::uint32_t d = 0; d < step.depCount; ++d)
    depth = std::max(depth, run.depth[s.deps[step.depBegin + d]]);
  run.depth[id] = depth;
  ++run.active;
  std::string err;
  switch (step.op) {
    case OpCode::kSend:
      run.state[id] = kSending;
      return post(offers_, wants_, {rank, step.sendPeer, step.sendIndex}, rank, id);
    case OpCode::kRecv:
    case OpCode::kRecvReduce:
    case OpCode::kRecvReduceSend:
    case OpCode::kRecvCopySend:
      run.state[id] = kReceiving;
      return post(wants_, offers_, {step.recvPeer, rank, step.recvIndex}, rank, id);
    case OpCode::kCopy:
      if (step.src.count != step.dst.count)
        return strFormat("rank %d step %u: copy sizes differ", rank, id);
      write(run, step.dst, read(run, step.src));
      break;
    case OpCode::kReduce: {
      if (step.src.count != step.dst.count)
        return strFormat("rank %d step %u: reduce sizes differ", rank, id);
      std::vector<Value> src = read(run, step.src), dst = read(run, step.dst);
      for (std::size_t j = 0; j < dst.size() && err.empty(); ++j)
        err = combine(dst[j], src[j], &dst[j]);
      write(run, step.dst, dst);
      break;
    }
  }
  if (err.empty() && step.finalize) err = finalize(run, step.dst);
  if (!err.empty())
    return strFormat("rank %d step %u (%s): %s", rank, id, opCodeName(step.op), err.c_str());
  run.state[id] = kDone;
  complete(run);
  return {};
}

std::string Simulator::deliver(const Key& key) {
  const auto [sender, sendStep] = offers_.at(key);
  const auto [receiver, recvStep] = wants_.at(key);
  offers_.erase(key);
  wants_.erase(key);
  RankRun& from = runs_[static_cast<std::size_t>(sender)];
  RankRun& to = runs_[static_cast<std::size_t>(receiver)];
  const Step& ss = from.schedule->steps[sendStep];
  const Step& rs = to.schedule->steps[recvStep];
  const Region sent = ss.op == OpCode::kSend ? ss.src : ss.dst;
  const std::uint64_t expected = reducesOnReceive(rs.op) ? rs.src.count : rs.dst.count;
  if (sent.count != expected || (reducesOnReceive(rs.op) && rs.src.count != rs.dst.count))
    return strFormat("message %d -> %d #%u: %llu elements sent (step %u), %llu expected (step %u)",
                     sender, receiver, std::get<2>(key),
                     static_cast<unsigned long long>(sent.count),
                     sendStep, static_cast<unsigned long long>(expected), recvStep);
  std::vector<Value> data = read(from, sent);
  ++messages_;
  from.elementsSent += sent.count;
  ++from.messagesSent;
  from.state[sendStep] = kDone;
  complete(from);
  to.depth[recvStep] = std::max(to.depth[recvStep], from.depth[sendStep] + 1);

  std::string err;
  if (reducesOnReceive(rs.op)) {
    std::vector<Value> src = read(to, rs.src);
    for (std::size_t j = 0; j < data.size() && err.empty(); ++j)
      err = combine(src[j], data[j], &data[j]);
  }
  write(to, rs.dst, data);
  if (err.empty() && rs.finalize) err = finalize(to, rs.dst);
  if (!err.empty())
    return strFormat("rank %d step %u (%s from %d): %s", receiver, recvStep, opCodeName(rs.op),
                     sender, err.c_str());
  if (opSends(rs.op)) {
    to.state[recvStep] = kSending;
    return post(offers_, wants_, {receiver, rs.sendPeer, rs.sendIndex}, receiver, recvStep);
  }
  to.state[recvStep] = kDone;
  complete(to);
  return {};
}

std::string Simulator::issue(int rank, bool* progressed) {
  RankRun& run = runs_[static_cast<std::size_t>(rank)];
  const Schedule& s = *run.schedule;
  while (run.next < s.steps.size() && run.active < options_.window) {
    const Step& step = s.steps[run.next];
    bool ready = true;
    for (std::uint32_t d = 0; d < step.depCount && ready; ++d)
      ready = run.state[s.deps[step.depBegin + d]] == kDone;
    if (!ready) break;
    std::string err = start(rank, static_cast<StepId>(run.next++));
    if (!err.empty()) return err;
    *progressed = true;
  }
  return {};
}

std::string Simulator::describeStuck() const {
  std::string out = "deadlock:";
  for (std::size_t r = 0; r < runs_.size(); ++r) {
    const RankRun& run = runs_[r];
    if (run.done == run.schedule->steps.size()) continue;
    out += strFormat(" [rank %zu: %zu/%zu done, next %zu; in flight:", r, run.done,
                     run.schedule->steps.size(), run.next);
    int shown = 0;
    for (std::size_t i = 0; i < run.next && shown < 4; ++i) {
      const Step& st = run.schedule->steps[i];
      if (run.state[i] == kReceiving) {
        out += strFormat(" %zu recv<-%d#%u", i, st.recvPeer, st.recvIndex);
        ++shown;
      } else if (run.state[i] == kSending) {
        out += strFormat(" %zu send->%d#%u", i, st.sendPeer, st.sendIndex);
        ++shown;
      }
    }
    out += "]";
  }
  return out;
}

std::string Simulator::checkResults() const {
  const int n = static_cast<int>(runs_.size());
  const std::uint64_t all = n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
  for (int q = 0; q < n; ++q) {
    const RankRun& run = runs_[static_cast<std::size_t>(q)];
    const CollectiveSpec& spec = *run.spec;
    auto check = [&](std::uint64_t at, std::uint64_t position, std::uint64_t ranks, bool finalized,
                     const Value* same) -> std::string {
      const Value v = read(run, {BufferKind::kOutput, at, 1})[0];
      // Over one rank kAvg divides by 1: finalizing is optional there (as for the verifier).
      const bool finalizedRight = v.finalized == finalized || (n == 1 && finalized);
      if (!v.defined || v.position != position || v.ranks != ranks || !finalizedRight ||
          (same != nullptr && same->tree != v.tree))
        return strFormat(
            "rank %d output[%llu]: holds position %llu ranks %llx%s%s, expected position %llu "
            "ranks %llx%s%s",
            q, static_cast<unsigned long long>(at), static_cast<unsigned long long>(v.position),
            static_cast<unsigned long long>(v.ranks), v.defined ? "" : " (undefined)",
            v.finalized ? " finalized" : "", static_cast<unsigned long long>(position),
            static_cast<unsigned long long>(ranks), finalized ? " finalized" : "",
            same != nullptr && same->tree != v.tree ? " (reduced in another order than rank 0)"
                                                    : "");
      return {};
    };
    std::string err;
    switch (spec.kind) {
      case Collective::kAllReduce:
        for (std::uint64_t j = 0; j < spec.count && err.empty(); ++j) {
          const Value first = read(runs_[0], {BufferKind::kOutput, j, 1})[0];
          err = check(j, j, all, true, &first);
        }
        break;
      case Collective::kAllGather:
      case Collective::kAllGatherV:
        for (int b = 0; b < n && err.empty(); ++b) {
          const auto i = static_cast<std::size_t>(b);
          const bool v = spec.kind == Collective::kAllGatherV;
          const std::uint64_t offset = v ? spec.displs[i] : i * spec.count;
          const std::uint64_t count = v ? spec.counts[i] : spec.count;
          for (std::uint64_t j = 0; j < count && err.empty(); ++j)
            err = check(offset + j, j, std::uint64_t{1} << b, false, nullptr);
        }
        break;
      case Collective::kReduceScatter:
      case Collective::kReduceScatterV: {
        const bool v = spec.kind == Collective::kReduceScatterV;
        std::uint64_t offset = 0;
        for (int b = 0; b < q; ++b)
          offset += v ? spec.counts[static_cast<std::size_t>(b)] : spec.count;
        const std::uint64_t count = v ? spec.counts[static_cast<std::size_t>(q)] : spec.count;
        for (std::uint64_t j = 0; j < count && err.empty(); ++j)
          err = check(j, offset + j, all, true, nullptr);
        break;
      }
      default:
        return "the simulator does not check this collective";
    }
    if (!err.empty()) return err;
  }
  return {};
}

std::string Simulator::run(SimStats* stats) {
  const int n = static_cast<int>(runs_.size());
  if (n > 64) return "the simulator handles at most 64 ranks";
  for (int r = 0; r < n; ++r) {
    RankRun& run = runs_[static_cast<std::size_t>(r)];
    std::string err = checkStatic(r);
    if (!err.empty()) return strFormat("rank %d: %s", r, err.c_str());
    run.memory[kPhysIn].assign(run.layout.inputInOutputAt ? 0 : run.layout.inputCount, Value{});
    run.memory[kPhysOut].assign(run.layout.outputInInputAt ? 0 : run.layout.outputCount, Value{});
    run.memory[kPhysScratch].assign(run.schedule->scratchCount, Value{});
    std::vector<Value> input(run.layout.inputCount);
    for (std::uint64_t j = 0; j < input.size(); ++j) input[j] = leaf(r, j);
    write(run, {BufferKind::kInput, 0, run.layout.inputCount}, input);
    run.state.assign(run.schedule->steps.size(), kIdle);
    run.depth.assign(run.schedule->steps.size(), 0);
  }
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int r = 0; r < n; ++r) {
      std::string err = issue(r, &progressed);
      if (!err.empty()) return err;
    }
    while (!ready_.empty()) {
      const Key key = ready_.front();
      ready_.pop_front();
      std::string err = deliver(key);
      if (!err.empty()) return err;
      progressed = true;
    }
  }
  for (const RankRun& run : runs_) {
    if (run.done != run.schedule->steps.size()) return describeStuck();
  }
  if (stats != nullptr) {
    *stats = {};
    stats->messages = messages_;
    for (const RankRun& run : runs_) {
      stats->maxElementsSentByRank = std::max(stats->maxElementsSentByRank, run.elementsSent);
      stats->maxMessagesSentByRank = std::max(stats->maxMessagesSentByRank, run.messagesSent);
      stats->maxStepsByRank =
          std::max<std::uint64_t>(stats->maxStepsByRank, run.schedule->steps.size());
      stats->maxScratch = std::max(stats->maxScratch, run.schedule->scratchCount);
      for (std::uint64_t d : run.depth)
        stats->criticalPathMessages = std::max(stats->criticalPathMessages, d);
    }
  }
  return checkResults();
}

}  // namespace

std::string simulate(const std::vector<CollectiveSpec>& specs,
                     const std::vector<Schedule>& schedules, const SimOptions& options,
                     SimStats* stats) {
  if (specs.size() != schedules.size() || specs.empty())
    return "specs and schedules differ in number";
  Simulator sim(specs, schedules, options);
  return sim.run(stats);
}

std::string buildAndSimulate(const CollectiveSpec& spec, Schedule (*build)(const CollectiveSpec&),
                             const SimOptions& options, SimStats* stats) {
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  for (int r = 0; r < spec.size; ++r) {
    specs.push_back(spec);
    specs.back().rank = r;
    schedules.push_back(build(specs.back()));
  }
  return simulate(specs, schedules, options, stats);
}

}  // namespace tutti::testing
