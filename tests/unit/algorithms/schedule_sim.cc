#include "unit/algorithms/schedule_sim.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "base/strings.h"

namespace tutti::test {
namespace {

// An element: the sum of the hashes of its contributions, how many there are, whether the
// operator's finalization was applied, and whether anything went wrong on its way.
struct Value {
  std::uint64_t sum = 0;
  std::uint32_t terms = 0;
  std::uint8_t finalized = 0;
  bool bad = false;
  bool operator==(const Value&) const = default;
};

constexpr Value kGarbage{0x5eed5eed5eed5eedull, 0, 0, true};

std::uint64_t hashOf(int rank, std::uint64_t j) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) << 40) ^ j ^ 0x243f6a8885a308d3ull;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Value inputValue(int rank, std::uint64_t j) { return {hashOf(rank, j), 1, 0, false}; }

Value combine(const Value& a, const Value& b) {
  return {a.sum + b.sum, a.terms + b.terms, 0,
          a.bad || b.bad || a.finalized != 0 || b.finalized != 0};
}

// A region resolved to the memory it names: arena 0 input, 1 output, 2 scratch.
struct Span {
  int arena = 0;
  std::uint64_t begin = 0, end = 0;
  bool overlaps(const Span& o) const { return arena == o.arena && begin < o.end && o.begin < end; }
};

// One rank's buffers, with in-place aliasing resolved.
struct Memory {
  std::vector<Value> arena[3];
  int target[3] = {0, 1, 2};  // arena each BufferKind lives in
  std::uint64_t shift[3] = {0, 0, 0};
  std::uint64_t limit[3] = {0, 0, 0};  // elements the BufferKind may address

  Span span(const Region& r) const {
    const auto k = static_cast<std::size_t>(r.buffer);
    return {target[k], r.offset + shift[k], r.offset + shift[k] + r.count};
  }
  Value* at(const Region& r, std::uint64_t i) {
    Span s = span(r);
    return &arena[s.arena][s.begin + i];
  }
};

Memory makeMemory(const CollectiveSpec& spec, const Schedule& schedule) {
  const BufferLayout layout = bufferLayout(spec);
  Memory m;
  m.limit[0] = layout.inputCount;
  m.limit[1] = layout.outputCount;
  m.limit[2] = schedule.scratchCount;
  m.arena[1].assign(layout.outputCount, kGarbage);
  m.arena[2].assign(schedule.scratchCount, kGarbage);
  if (layout.inputInOutputAt) {
    m.target[0] = 1;
    m.shift[0] = *layout.inputInOutputAt;
  } else {
    m.arena[0].resize(layout.inputCount);
  }
  if (layout.outputInInputAt) {
    m.target[1] = 0;
    m.shift[1] = *layout.outputInInputAt;
    m.arena[0].resize(layout.inputCount);
  }
  for (std::uint64_t j = 0; j < layout.inputCount; ++j)
    *m.at({BufferKind::kInput, j, 1}, 0) = inputValue(spec.rank, j);
  return m;
}

struct Footprint {
  std::vector<Span> reads, writes;
};

Footprint footprint(const Memory& m, const Step& s) {
  Footprint f;
  switch (s.op) {
    case OpCode::kSend:
      f.reads = {m.span(s.src)};
      break;
    case OpCode::kRecv:
    case OpCode::kRecvCopySend:
      f.writes = {m.span(s.dst)};
      break;
    case OpCode::kRecvReduce:
    case OpCode::kRecvReduceSend:
    case OpCode::kCopy:
    case OpCode::kReduce:
      f.reads = {m.span(s.src)};
      f.writes = {m.span(s.dst)};
      break;
  }
  auto empty = [](const Span& x) { return x.begin == x.end; };
  f.reads.erase(std::remove_if(f.reads.begin(), f.reads.end(), empty), f.reads.end());
  f.writes.erase(std::remove_if(f.writes.begin(), f.writes.end(), empty), f.writes.end());
  return f;
}

bool conflict(const Footprint& a, const Footprint& b) {
  for (const Span& w : a.writes) {
    for (const Span& x : b.reads)
      if (w.overlaps(x)) return true;
    for (const Span& x : b.writes)
      if (w.overlaps(x)) return true;
  }
  for (const Span& r : a.reads)
    for (const Span& x : b.writes)
      if (r.overlaps(x)) return true;
  return false;
}

// Bounds, self-overlap and unordered conflicting steps of one rank's schedule.
std::string checkStatic(const Schedule& s, const Memory& m) {
  const std::size_t n = s.steps.size();
  std::vector<Footprint> fp(n);
  const std::size_t words = (n + 63) / 64;
  std::vector<std::vector<std::uint64_t>> reach(n, std::vector<std::uint64_t>(words, 0));
  for (std::size_t i = 0; i < n; ++i) {
    const Step& st = s.steps[i];
    for (const Region* r : {&st.src, &st.dst}) {
      const bool used = (r == &st.src) ? st.op != OpCode::kRecv && st.op != OpCode::kRecvCopySend
                                       : st.op != OpCode::kSend;
      if (used && r->count > 0 && r->offset + r->count > m.limit[static_cast<int>(r->buffer)])
        return strFormat(
            "rank %d step %zu: region [%llu, +%llu) of buffer %d past its %llu elements", s.rank, i,
            static_cast<unsigned long long>(r->offset), static_cast<unsigned long long>(r->count),
            static_cast<int>(r->buffer),
            static_cast<unsigned long long>(m.limit[static_cast<int>(r->buffer)]));
    }
    fp[i] = footprint(m, st);
    if (!fp[i].reads.empty() && !fp[i].writes.empty()) {
      const Span a = fp[i].reads[0], b = fp[i].writes[0];
      if (a.overlaps(b) && !(a.begin == b.begin && a.end == b.end))
        return strFormat("rank %d step %zu: source and destination overlap partially", s.rank, i);
    }
    for (std::uint32_t d = 0; d < st.depCount; ++d) {
      const StepId dep = s.deps[st.depBegin + d];
      if (dep >= i) return strFormat("rank %d step %zu depends on later step %u", s.rank, i, dep);
      for (std::size_t w = 0; w < words; ++w) reach[i][w] |= reach[dep][w];
      reach[i][dep / 64] |= std::uint64_t{1} << (dep % 64);
    }
  }
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      if ((reach[j][i / 64] >> (i % 64)) & 1) continue;
      if (conflict(fp[i], fp[j]))
        return strFormat("rank %d: steps %zu (%s) and %zu (%s) conflict but are not ordered",
                         s.rank, i, opCodeName(s.steps[i].op), j, opCodeName(s.steps[j].op));
    }
  }
  return "";
}

// What output element j of `spec.rank` must hold; false when the definition leaves it free.
bool expectedValue(const CollectiveSpec& s, std::uint64_t j, Value* out) {
  switch (s.kind) {
    case Collective::kAllReduce:
    case Collective::kReduce: {
      Value v{0, 0, 1, false};
      for (int r = 0; r < s.size; ++r) v.sum += hashOf(r, j), ++v.terms;
      *out = v;
      return true;
    }
    case Collective::kBroadcast:
      *out = inputValue(s.root, j);
      return true;
    case Collective::kGather:
      *out = inputValue(static_cast<int>(j / s.count), j % s.count);
      return true;
    case Collective::kScatter:
      *out = inputValue(s.root, static_cast<std::uint64_t>(s.rank) * s.count + j);
      return true;
    case Collective::kGatherV:
      for (int b = 0; b < s.size; ++b) {
        const auto i = static_cast<std::size_t>(b);
        if (j >= s.displs[i] && j < s.displs[i] + s.counts[i]) {
          *out = inputValue(b, j - s.displs[i]);
          return true;
        }
      }
      return false;
    case Collective::kScatterV:
      *out = inputValue(s.root, s.displs[static_cast<std::size_t>(s.rank)] + j);
      return true;
    default:
      return false;
  }
}

using Key = std::uint64_t;  // (sender, receiver, message index)
Key keyOf(int from, int to, std::uint32_t index) {
  return (static_cast<Key>(from) << 48) | (static_cast<Key>(to) << 32) | index;
}

enum State : std::uint8_t { kIdle, kReceiving, kSending, kDone };

class Sim {
 public:
  Sim(const std::vector<CollectiveSpec>& specs, const std::vector<Schedule>& schedules,
      std::size_t window, SimStats* stats)
      : specs_(specs), schedules_(schedules), window_(window), stats_(stats) {}
  std::string run();

 private:
  struct Rank {
    Memory mem;
    std::vector<State> state;
    std::size_t next = 0, inflight = 0, done = 0;
  };
  std::string issue(int r, bool* progressed);
  std::string offer(int r, StepId id);
  std::string post(int r, StepId id);
  std::string transfer(int from, StepId sendStep, int to, StepId recvStep);
  void complete(int r, StepId id) {
    ranks_[r].state[id] = kDone;
    --ranks_[r].inflight;
    ++ranks_[r].done;
  }
  std::string checkResults();

  const std::vector<CollectiveSpec>& specs_;
  const std::vector<Schedule>& schedules_;
  std::size_t window_;
  SimStats* stats_;
  std::vector<Rank> ranks_;
  std::unordered_map<Key, StepId> offered_, posted_;
};

std::string Sim::offer(int r, StepId id) {
  const Step& st = schedules_[r].steps[id];
  ranks_[r].state[id] = kSending;
  const Key k = keyOf(r, st.sendPeer, st.sendIndex);
  auto it = posted_.find(k);
  if (it == posted_.end()) {
    if (!offered_.emplace(k, id).second)
      return strFormat("rank %d: two sends to %d with index %u", r, st.sendPeer, st.sendIndex);
    return "";
  }
  StepId recv = it->second;
  posted_.erase(it);
  return transfer(r, id, st.sendPeer, recv);
}

std::string Sim::post(int r, StepId id) {
  const Step& st = schedules_[r].steps[id];
  ranks_[r].state[id] = kReceiving;
  const Key k = keyOf(st.recvPeer, r, st.recvIndex);
  auto it = offered_.find(k);
  if (it == offered_.end()) {
    if (!posted_.emplace(k, id).second)
      return strFormat("rank %d: two receives from %d with index %u", r, st.recvPeer, st.recvIndex);
    return "";
  }
  StepId send = it->second;
  offered_.erase(it);
  return transfer(st.recvPeer, send, r, id);
}

std::string Sim::transfer(int from, StepId sendStep, int to, StepId recvStep) {
  const Step& s = schedules_[from].steps[sendStep];
  const Step& d = schedules_[to].steps[recvStep];
  const Region src = s.op == OpCode::kSend ? s.src : s.dst;
  const bool reduces = d.op == OpCode::kRecvReduce || d.op == OpCode::kRecvReduceSend;
  const std::uint64_t want = reduces ? d.src.count : d.dst.count;
  if (src.count != want || (reduces && d.src.count != d.dst.count))
    return strFormat("rank %d step %u sends %llu elements to rank %d step %u, which takes %llu",
                     from, sendStep, static_cast<unsigned long long>(src.count), to, recvStep,
                     static_cast<unsigned long long>(want));
  if (stats_ != nullptr) {
    ++stats_->messagesSent[static_cast<std::size_t>(from)];
    stats_->elementsSent[static_cast<std::size_t>(from)] += src.count;
  }
  std::vector<Value> data(src.count);
  for (std::uint64_t i = 0; i < src.count; ++i) data[i] = *ranks_[from].mem.at(src, i);
  complete(from, sendStep);
  Memory& m = ranks_[to].mem;
  for (std::uint64_t i = 0; i < want; ++i) {
    Value v = reduces ? combine(*m.at(d.src, i), data[i]) : data[i];
    if (d.finalize) {
      v.bad = v.bad || v.finalized != 0;
      v.finalized = 1;
    }
    *m.at(d.dst, i) = v;
  }
  if (d.op == OpCode::kRecvReduceSend || d.op == OpCode::kRecvCopySend) return offer(to, recvStep);
  complete(to, recvStep);
  return "";
}

std::string Sim::issue(int r, bool* progressed) {
  Rank& rk = ranks_[r];
  const Schedule& s = schedules_[r];
  while (rk.next < s.steps.size() && rk.inflight < window_) {
    const Step& st = s.steps[rk.next];
    for (std::uint32_t d = 0; d < st.depCount; ++d)
      if (rk.state[s.deps[st.depBegin + d]] != kDone) return "";
    const auto id = static_cast<StepId>(rk.next++);
    ++rk.inflight;
    *progressed = true;
    std::string err;
    if (st.op == OpCode::kSend) {
      err = offer(r, id);
    } else if (opReceives(st.op)) {
      err = post(r, id);
    } else {
      for (std::uint64_t i = 0; i < st.dst.count; ++i) {
        Value v = st.op == OpCode::kCopy ? *rk.mem.at(st.src, i)
                                         : combine(*rk.mem.at(st.dst, i), *rk.mem.at(st.src, i));
        if (st.finalize) {
          v.bad = v.bad || v.finalized != 0;
          v.finalized = 1;
        }
        *rk.mem.at(st.dst, i) = v;
      }
      complete(r, id);
    }
    if (!err.empty()) return err;
  }
  return "";
}

std::string Sim::checkResults() {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const CollectiveSpec& spec = specs_[r];
    const std::uint64_t outputs = bufferLayout(spec).outputCount;
    for (std::uint64_t j = 0; j < outputs; ++j) {
      Value want;
      if (!expectedValue(spec, j, &want)) continue;
      const Value got = *ranks_[r].mem.at({BufferKind::kOutput, j, 1}, 0);
      if (!(got == want))
        return strFormat("rank %zu output[%llu]: %u terms%s%s, want %u terms%s", r,
                         static_cast<unsigned long long>(j), got.terms,
                         got.finalized ? " finalized" : "", got.bad ? " (bad)" : "", want.terms,
                         want.finalized ? " finalized" : "");
    }
  }
  return "";
}

std::string Sim::run() {
  const std::size_t n = specs_.size();
  if (schedules_.size() != n) return "one schedule per spec expected";
  if (stats_ != nullptr) {
    stats_->messagesSent.assign(n, 0);
    stats_->elementsSent.assign(n, 0);
  }
  ranks_.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    ranks_[r].mem = makeMemory(specs_[r], schedules_[r]);
    ranks_[r].state.assign(schedules_[r].steps.size(), kIdle);
    std::string err = checkStatic(schedules_[r], ranks_[r].mem);
    if (!err.empty()) return err;
  }
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (std::size_t r = 0; r < n; ++r) {
      std::string err = issue(static_cast<int>(r), &progressed);
      if (!err.empty()) return err;
    }
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (ranks_[r].done != schedules_[r].steps.size())
      return strFormat("deadlock: rank %zu completed %zu of %zu steps (next to issue: %zu)", r,
                       ranks_[r].done, schedules_[r].steps.size(), ranks_[r].next);
  }
  if (!offered_.empty() || !posted_.empty()) return "messages left unmatched";
  return checkResults();
}

}  // namespace

std::string simulateSchedules(const std::vector<CollectiveSpec>& specs,
                              const std::vector<Schedule>& schedules, std::size_t window,
                              SimStats* stats) {
  Sim sim(specs, schedules, window, stats);
  return sim.run();
}

}  // namespace tutti::test
