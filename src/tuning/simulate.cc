// The simulator: a discrete-event run of the real schedules over the machine model
// (simulate.h says what is modelled). One Run simulates the ranks [0, P) of a communicator
// whose schedules are invariant under a group of relabellings of the ranks that moves
// whole blocks of P: translations by multiples of P (rings), or XOR with multiples of P
// (butterflies; P and n powers of two). P = n is the full run. A message a simulated rank
// sends to rank q stands for the message its image under the relabelling that brings q
// into [0, P) sends to q's image: so every simulated receive meets exactly the send it
// would in the full run, at the same time.
#include "tuning/simulate.h"
#include "tuning/sim_fifo.h"
#include "tuning/sim_machines.h"
#include "tuning/sim_pending.h"
#include "tuning/sim_symmetry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "base/macros.h"
#include "base/host_props.h"
#include "base/strings.h"

namespace tutti::tuning {

namespace {

// The shared-memory transport's single-copy threshold (ShmTransport::Options::cmaBytes).
constexpr std::uint64_t kSingleCopyFrom = 256 << 10;
// A call with a root is priced as one of this many run back to back (Run::laterCall), in
// which the root runs ahead and receivers that fall behind find their messages waiting.
// Call k's messages carry k in their indices from bit kCallShift, apart from the others'.
constexpr int kRootedCalls = 4;
constexpr int kCallShift = 28;

// What a waiting rank pays for a core on a host with more ranks than cores: another rank's
// yield where waits yield (shared memory, and the hybrid transport's waits, which poll its
// sockets as they yield), a wake-up where they sleep (TCP's effective model sets yieldCost
// to switchCost: tuner.h).
double handOver(const MachineModel& model) {
  return model.yieldCost > 0 ? model.yieldCost : model.switchCost;
}

enum StepState : std::uint8_t { kWaiting = 0, kRunning = 1, kComplete = 2 };

// One step as the simulator needs it: a Step without its regions' places, in 24 bytes
// (a 65,536-rank tree keeps tens of millions of them). Its dependencies follow those of
// the steps before it in the rank's list (steps are issued in order, so a cursor finds them).
struct SimStep {
  std::uint32_t elements = 0;  // the message's (or the copy's, the reduction's) elements
  std::int32_t recvPeer = -1;
  std::int32_t sendPeer = -1;
  std::uint32_t recvIndex = 0;
  std::uint32_t sendIndex = 0;
  std::uint16_t depCount = 0;
  OpCode op = OpCode::kCopy;
  std::uint8_t state = kWaiting;
};
static_assert(sizeof(SimStep) == 24);

// What happens to a step at an event's time.
enum class EventKind : std::uint8_t {
  kIssue,       // the rank issues what it can
  kSendPosted,  // the CPU work before a send is done: the message leaves its host
  kArrive,      // the message reaches its receiver's host (the receiver's side of the network)
  kRecvData,    // the message is in: reduce, forward, or done
  kDone,        // the step is complete
};

// Events at one time are taken in an order of their own content (rank, kind, step, ...),
// never of their creation: a rank's images in the fast path then see the same order as
// the rank itself does in the full run.
struct Event {
  double time;
  std::uint32_t slot;  // the rank whose state the event changes (kArrive: the receiver)
  std::uint32_t step;  // its step (kArrive: the sender's)
  EventKind kind;
  // kArrive only: the sender (a simulated rank), its relation to the receiver (the same
  // for a message and its images: Symmetry::relation), the message index. kArrive and
  // kRecvData: when its last byte cleared the sender's side (kArrive) or reached the
  // receiver (kRecvData).
  std::uint32_t sender = 0;
  std::uint32_t offset = 0;
  std::uint32_t index = 0;
  double cleared = 0;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time != b.time) return a.time > b.time;
    if (a.slot != b.slot) return a.slot > b.slot;
    if (a.kind != b.kind) return a.kind > b.kind;
    if (a.step != b.step) return a.step > b.step;
    if (a.offset != b.offset) return a.offset > b.offset;
    return a.index > b.index;
  }
};


class Run {
 public:
  // `calls`: 1, or more for blocking calls back to back (each rank starts the next once it
  // has finished the one before).
  Run(const AlgorithmInfo& algorithm, const CollectiveSpec& spec, const MachineModel& model,
      const Placement& placement, const Network& network, const SimOptions& options, Symmetry symmetry,
      int calls = 1)
      : calls_(calls),
        algorithm_(algorithm),
        spec_(spec),
        model_(model),
        placement_(placement),
        network_(network),
        options_(options),
        n_(placement.size()),
        symmetry_(symmetry),
        period_(symmetry.period),
        elemSize_(dataTypeSize(spec.dtype)) {}

  Status build();
  Status run();
  double finish() const { return finish_; }
  // With calls back to back: the longest a rank took per call over those after its first,
  // from the end of its first.
  double laterCall() const {
    double out = 0;
    for (const Rank& rank : ranks_)
      out = std::max(out, (rank.lastDone - rank.firstDone) / std::max(1, calls_ - 1));
    return out;
  }
  // Where the call runs again right after `previous` (a shaped link's buckets as that call
  // left them, refilling since): called between build() and run().
  void continueAfter(const Run& previous) {
    auto carry = [&](std::vector<Fifo>& ports, const std::vector<Fifo>& before) {
      for (std::size_t i = 0; i < ports.size() && i < before.size(); ++i) {
        ports[i].tokens = before[i].tokens;
        ports[i].tokensAt = before[i].tokensAt - previous.finish();
      }
    };
    carry(machines_.nicOut, previous.machines_.nicOut);
    carry(machines_.nicIn, previous.machines_.nicIn);
  }
  // The time the busiest NIC port needs for what it carried at its rate: what a call can
  // take at least when it is repeated back to back, however much a shaped link's bucket
  // let through faster once.
  double sustained() const {
    double out = 0;
    for (const std::vector<Fifo>* ports : {&machines_.nicOut, &machines_.nicIn})
      for (const Fifo& f : *ports) out = std::max(out, f.carried / f.bandwidth);
    return out;
  }
  std::uint64_t messages() const { return messages_; }

 private:
  // Per simulated rank.
  struct Rank {
    std::vector<SimStep> steps;
    std::vector<std::uint32_t> deps;  // each step's, in step order
    std::uint32_t depCursor = 0;      // where the next step's are
    std::uint32_t count = 0;
    std::uint32_t next = 0;   // the next step to issue
    std::uint32_t active = 0;
    std::uint32_t completed = 0;
    std::uint32_t perCall = 0;  // steps of one call (count, or half of it for two calls)
    double firstDone = 0;       // when the rank finished its first call, and its last
    double lastDone = 0;
    double threadFree = 0;    // the rank's one thread: its CPU work runs one at a time
  };

  void push(double time, std::uint32_t slot, std::uint32_t step, EventKind kind) {
    events_.push(Event{time, slot, step, kind});
  }
  SimStep& step(std::uint32_t slot, std::uint32_t id) { return ranks_[slot].steps[id]; }
  double bytes(const SimStep& s) const { return static_cast<double>(s.elements) * static_cast<double>(elemSize_); }
  bool depsComplete(std::uint32_t slot, std::uint32_t id);
  // Runs `work` seconds of CPU on the rank's thread and one of its host's cores (the one
  // it is bound to, where it is), from `time` or when both are free; returns its end.
  double cpu(std::uint32_t slot, double time, double work);
  void issue(std::uint32_t slot, double time);
  void startStep(std::uint32_t slot, std::uint32_t id, double time);
  // The message of send step `id` leaves at `time` through its sender's side of the path.
  void transmit(std::uint32_t slot, std::uint32_t id, double time);
  // ... and through its receiver's side: its arrival, handed to the receive and the send.
  void arrive(const Event& e);
  // The message of receive `id` is there from `time` (its first slot), and whole at `last`.
  void recvData(std::uint32_t slot, std::uint32_t id, double time, double last);
  void pushData(double time, std::uint32_t slot, std::uint32_t step, double last) {
    Event e{time, slot, step, EventKind::kRecvData};
    e.cleared = last;
    events_.push(e);
  }
  // Receive step `id` is posted at `time` (now or later: posting touches nothing shared,
  // so it is recorded at once): it meets its message, or waits for it.
  void post(std::uint32_t slot, std::uint32_t id, double time);
  void complete(std::uint32_t slot, std::uint32_t id, double time);
  double overhead(int a, int b) const {
    return model_.path(placement_.pathClass(a, b)).overhead + model_.messageOverhead;
  }
  int hostOf(std::uint32_t slot) const { return placement_.place(static_cast<int>(slot)).host; }
  // The machine whose cores and memory the rank's work uses (its host's, Placement::machineOf).
  std::size_t machineOf(std::uint32_t slot) const {
    return static_cast<std::size_t>(placement_.machineOf(hostOf(slot)));
  }
  // What a rank pays to run again for a message it takes at `time`, on a host with more
  // ranks than cores (nothing elsewhere): a hand-over of the core (handOver), or as many as
  // there are waiting ranks per core, since waiting ranks hand the cores round (they yield,
  // or sleep and are woken) and this one runs once the others of its core have had their
  // turn. Charged for every message received, even one that came while the rank still had
  // work: the core's hand-overs between ranks that work are charged nowhere else (not
  // charging those messages priced ring-like schedules at 8 B and 64 KiB on 8 ranks over 2
  // cores at half their time, and the model then chose them). In a loop of calls with a
  // root, not so (the definition says why).
  double wakeCost(std::uint32_t slot, double time) const;
  // Work of `bytes` through the host's memory from `start` to `end` (its CPU time): it ends
  // no earlier than the memory bus, shared by the host's ranks, can carry them.
  double throughMemory(std::uint32_t slot, double start, double end, double bytes);
  // `seconds` of CPU from `time` (cpu()) moving `bytes` through the memory bus meanwhile.
  double work(std::uint32_t slot, double time, double seconds, double bytes) {
    const double end = cpu(slot, time, seconds);
    return bytes > 0 ? throughMemory(slot, end - seconds, end, bytes) : end;
  }
  // A message between two ranks of a host is copied by their CPUs, not carried by a link:
  // the sender writes it into the shared buffers and the receiver reads it out, each at the
  // path's beta (one core's share of memory past the cache); or, on a host whose kernel
  // copies between processes cheaply, the receiver alone copies one past the transport's
  // single-copy threshold. Over TCP on one host the receiver's end may cost less than the
  // sender's (LinkCost::recvBeta).
  bool onHost(int a, int b) const { return placement_.pathClass(a, b) != PathClass::kNetwork; }
  bool singleCopy(double bytes) const {
    return model_.kernelCopyRatio > 0 && model_.kernelCopyRatio <= kCostlyKernelCopyRatio &&
           bytes >= static_cast<double>(kSingleCopyFrom);
  }
  // One end's copy: half the path's beta, which is the time of a message alone copied in by
  // its sender and then out by its receiver (the probe's measure); never below the host's
  // share of memory past the cache.
  double copyBetaOf(int a, int b) const {
    return std::max(model_.path(placement_.pathClass(a, b)).beta / 2, machines_.hostBeta);
  }
  double sendCopy(int self, int peer, double bytes) const {
    return onHost(self, peer) && !singleCopy(bytes) ? bytes * copyBetaOf(self, peer) : 0;
  }
  double recvCopy(int self, int peer, double bytes) const {
    if (!onHost(self, peer)) return 0;
    const double own = model_.path(placement_.pathClass(self, peer)).recvBeta;
    const double beta = own > 0 ? std::max(own, machines_.hostBeta) : copyBetaOf(self, peer);
    return bytes * (singleCopy(bytes) ? std::max(beta, machines_.copyBeta * model_.kernelCopyRatio) : beta);
  }
  // Whether the receiver reduces a message from `peer` only once it is whole: between hosts
  // always (TCP carries those messages whatever the transport on a host, and its links
  // take no combine sink), on a host where the path says so (LinkCost::reducesWhole).
  bool reducesWhole(int self, int peer) const {
    const PathClass path = placement_.pathClass(self, peer);
    return path == PathClass::kNetwork || model_.path(path).reducesWhole;
  }
  int rail(int rank) const { return placement_.place(rank).localIndex % network_.rails; }
  int leaf(int host) const {
    return network_.kind == Network::Kind::kFatTree ? host / network_.hostsPerLeaf : 0;
  }
  Status stuck() const;

  const int calls_;
  const AlgorithmInfo& algorithm_;
  const CollectiveSpec& spec_;
  const MachineModel& model_;
  const Placement& placement_;
  const Network& network_;
  const SimOptions& options_;
  const int n_;
  const Symmetry symmetry_;
  const int period_;
  const std::size_t elemSize_;

  std::vector<Rank> ranks_;  // slot = rank, for ranks [0, period_)
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  PendingTable pending_;
  SimMachines machines_;  // their cores, memory buses and network links (sim_machines.h)
  double finish_ = 0;
  std::uint64_t messages_ = 0;
  bool mismatch_ = false;  // a message of another size than its receive
};

Status Run::build() {
  ranks_.resize(static_cast<std::size_t>(period_));
  CollectiveSpec spec = spec_;
  // What each rank touches of its buffers: as far as its steps reach into each.
  std::vector<double> touched(static_cast<std::size_t>(period_), 0.0);
  for (int r = 0; r < period_; ++r) {
    spec.rank = r;
    const Schedule schedule = algorithm_.build(spec);
    std::array<std::uint64_t, 3> reach{};  // input, output, scratch: elements
    auto extend = [&](const Region& region) {
      const auto kind = static_cast<std::size_t>(region.buffer);
      if (region.count > 0 && kind < reach.size())
        reach[kind] = std::max(reach[kind], region.offset + region.count);
    };
    for (const Step& s : schedule.steps) {
      extend(s.src);
      extend(s.dst);
    }
    touched[static_cast<std::size_t>(r)] =
        static_cast<double>(reach[0] + reach[1] + reach[2]) * static_cast<double>(elemSize_);
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    rank.count = static_cast<std::uint32_t>(schedule.steps.size());
    rank.steps.reserve(schedule.steps.size());
    rank.deps.reserve(schedule.deps.size());
    for (const Step& s : schedule.steps) {
      SimStep c;
      c.op = s.op;
      c.recvPeer = s.recvPeer;
      c.sendPeer = s.sendPeer;
      c.recvIndex = s.recvIndex;
      c.sendIndex = s.sendIndex;
      const bool fromSrc = s.op == OpCode::kSend || s.op == OpCode::kRecvReduce ||
                           s.op == OpCode::kRecvReduceSend;
      const std::uint64_t elements = fromSrc ? s.src.count : s.dst.count;
      const std::uint32_t indices = calls_ > 1 ? (1u << kCallShift) : 0;
      if (elements > std::numeric_limits<std::uint32_t>::max() ||
          s.depCount > std::numeric_limits<std::uint16_t>::max() ||
          (indices > 0 && std::max(s.recvIndex, s.sendIndex) >= indices))
        return Status(ErrorCode::kInvalidArgument,
                      strFormat("%s: a step of rank %d is beyond the simulator (%llu elements, "
                                "%u dependencies, message %u)",
                                algorithm_.name, r, static_cast<unsigned long long>(elements),
                                s.depCount, std::max(s.recvIndex, s.sendIndex)));
      c.elements = static_cast<std::uint32_t>(elements);
      c.depCount = static_cast<std::uint16_t>(s.depCount);
      rank.steps.push_back(c);
      rank.deps.insert(rank.deps.end(), schedule.deps.begin() + s.depBegin,
                       schedule.deps.begin() + s.depBegin + s.depCount);
    }
    rank.perCall = rank.count;
    if (calls_ >= 2) {
      const std::size_t steps = rank.steps.size(), deps = rank.deps.size();
      for (int k = 1; k < calls_; ++k) {
        for (std::size_t i = 0; i < steps; ++i) {
          SimStep c = rank.steps[i];
          c.recvIndex |= static_cast<std::uint32_t>(k) << kCallShift;
          c.sendIndex |= static_cast<std::uint32_t>(k) << kCallShift;
          rank.steps.push_back(c);
        }
        for (std::size_t i = 0; i < deps; ++i) rank.deps.push_back(rank.deps[i] + static_cast<std::uint32_t>(k) * rank.count);
      }
      rank.count *= static_cast<std::uint32_t>(calls_);
    }
  }

  // The resources of the simulated machines (the fast path's hosts are machines of their own).
  machines_ = simMachines(model_, placement_, network_, spec_, period_, touched);
  return Status::Ok();
}

bool Run::depsComplete(std::uint32_t slot, std::uint32_t id) {
  const Rank& rank = ranks_[slot];
  const SimStep& s = rank.steps[id];
  for (std::uint32_t d = 0; d < s.depCount; ++d) {
    if (rank.steps[rank.deps[rank.depCursor + d]].state != kComplete) return false;
  }
  return true;
}

double Run::cpu(std::uint32_t slot, double time, double work) {
  if (work <= 0) return time;
  Rank& rank = ranks_[slot];
  const RankPlace& place = placement_.place(static_cast<int>(slot));
  std::vector<double>& cores = machines_.cores[machineOf(slot)];
  if (machines_.bound[machineOf(slot)]) {
    // Its own core: the other ranks bound there run before or after it, never beside it.
    double& core = cores[static_cast<std::size_t>(place.boundCore)];
    const double start = std::max({time, rank.threadFree, core});
    core = rank.threadFree = start + work;
    return core;
  }
  std::pop_heap(cores.begin(), cores.end(), std::greater<>());
  const double start = std::max({time, rank.threadFree, cores.back()});
  const double end = start + work;
  cores.back() = end;
  std::push_heap(cores.begin(), cores.end(), std::greater<>());
  rank.threadFree = end;
  return end;
}


double Run::wakeCost(std::uint32_t slot, double time) const {
  const std::size_t machine = machineOf(slot);
  if (!machines_.oversubscribed[machine]) return 0;
  // In a loop of calls with a root, a receiver still at work when its message comes takes
  // it at its next step, without giving up its core (receivers fall behind the root and
  // find their messages waiting). In a call whose ranks wait for each other the charge
  // stays, standing in for the core's hand-overs between ranks that work (see the
  // declaration).
  if (calls_ > 1 && ranks_[slot].threadFree >= time) return 0;
  // The other ranks of the machine waiting now: those whose thread has no work left at `time`.
  // Where the fast path runs some of them only, those it runs stand for the rest.
  int waiting = 0, seen = 0;
  const std::vector<int>& ranks = machines_.machineRanks[machine];
  for (const int r : ranks) {
    if (r == static_cast<int>(slot) || r >= period_) continue;
    ++seen;
    const Rank& other = ranks_[static_cast<std::size_t>(r)];
    if (other.completed < other.count && other.threadFree < time) ++waiting;
  }
  const double others = seen > 0 ? waiting * static_cast<double>(ranks.size() - 1) / seen : 0;
  return handOver(model_) * std::max(1.0, others / static_cast<double>(machines_.cores[machine].size()));
}

double Run::throughMemory(std::uint32_t slot, double start, double end, double bytes) {
  // The bus carries the work's bytes from its start (or once it has carried those before),
  // at its rate: work that runs at a core's pace leaves the rest of the bus to the other
  // cores' (a sender's and a receiver's copies of one message run at once).
  Fifo& bus = machines_.memory[machineOf(slot)];
  const double from = std::max(start, bus.free);
  bus.free = from + bus.pass(from, bytes);
  return std::max(end, bus.free);
}

void Run::issue(std::uint32_t slot, double time) {
  Rank& rank = ranks_[slot];
  const std::uint32_t window =
      static_cast<std::uint32_t>(std::max(1, std::min<int>(options_.maxInflight, static_cast<int>(rank.perCall))));
  // In order, as the executor issues them: a step whose dependencies are not complete
  // holds back the ones after it; the next call starts once the one before is complete.
  while (rank.next < rank.count && rank.active < window && depsComplete(slot, rank.next) &&
         rank.completed >= rank.next / rank.perCall * rank.perCall) {
    const std::uint32_t id = rank.next++;
    rank.depCursor += rank.steps[id].depCount;
    ++rank.active;
    step(slot, id).state = kRunning;
    startStep(slot, id, time);
  }
}

void Run::startStep(std::uint32_t slot, std::uint32_t id, double time) {
  const SimStep& s = step(slot, id);
  const int self = static_cast<int>(slot);
  switch (s.op) {
    case OpCode::kSend:
      // The copy into the shared buffers, if any, runs as the message leaves (transmit).
      push(work(slot, time, overhead(self, s.sendPeer), 0), slot, id, EventKind::kSendPosted);
      return;
    case OpCode::kRecv:
    case OpCode::kRecvReduce:
    case OpCode::kRecvReduceSend:
    case OpCode::kRecvCopySend:
      // Posting touches nothing but the rank's own table; the receive's CPU time (the
      // transport's read and matching, the step's completion) comes when its message is
      // there (recvData).
      post(slot, id, time);
      return;
    case OpCode::kCopy:
      push(work(slot, time, machines_.copyBeta * bytes(s), bytes(s)), slot, id, EventKind::kDone);
      return;
    case OpCode::kReduce:
      push(work(slot, time, machines_.gamma * bytes(s), machines_.reduceCopies * bytes(s)), slot, id, EventKind::kDone);
      return;
  }
}

void Run::transmit(std::uint32_t slot, std::uint32_t id, double time) {
  const SimStep& s = step(slot, id);
  const int p = static_cast<int>(slot);
  const int q = s.sendPeer;
  // The image of this message that a simulated rank receives (itself, in the full run).
  const int receiver = q % period_;
  // No faster than the path's own bandwidth: each resource is held that long at least. On
  // a host the ends' CPUs copy the bytes (sendCopy, recvCopy), slot by slot: the receiver
  // may copy out from the first slot, while the sender copies in the rest.
  const PathClass path = placement_.pathClass(p, q);
  const bool network = path == PathClass::kNetwork;
  Passage m{time, time + (network ? bytes(s) * machines_.networkBeta : 0), network ? bytes(s) : 0};
  if (const double copy = sendCopy(p, q, bytes(s)); copy > 0) m.end = work(slot, time, copy, bytes(s));
  const int host = placement_.place(p).host;
  if (network) {
    const std::size_t out = static_cast<std::size_t>(host * network_.rails + rail(p));
    m.through(machines_.nicOut[out]);
    if (network_.kind == Network::Kind::kRail && rail(p) != rail(q) && !machines_.spine.empty())
      m.through(machines_.spine[out]);
    const int fromLeaf = leaf(host);
    if (network_.kind == Network::Kind::kFatTree && fromLeaf != leaf(placement_.place(q).host))
      m.through(machines_.leafUp[static_cast<std::size_t>(fromLeaf)]);
  }
  ++messages_;
  Event e{m.start, static_cast<std::uint32_t>(receiver), id, EventKind::kArrive};
  e.sender = slot;
  e.offset = symmetry_.relation(p, q, n_);
  e.index = s.sendIndex;
  e.cleared = m.end;
  events_.push(e);
}

void Run::arrive(const Event& e) {
  const SimStep& s = step(e.sender, e.step);
  const int r = static_cast<int>(e.slot);
  const int p = symmetry_.sender(r, e.offset, n_);  // the image sender
  const PathClass path = placement_.pathClass(p, r);
  const LinkCost& link = model_.path(path);
  Passage m{e.time, e.cleared, bytes(s)};
  double latency = link.alpha;
  if (path == PathClass::kNetwork) {
    const int host = placement_.place(r).host;
    if (network_.kind == Network::Kind::kRail && rail(p) != rail(r)) latency += 2 * network_.hopLatency;
    if (network_.kind == Network::Kind::kFatTree && leaf(placement_.place(p).host) != leaf(host)) {
      m.through(machines_.leafDown[static_cast<std::size_t>(leaf(host))]);
      latency += 2 * network_.hopLatency;
    }
    m.through(machines_.nicIn[static_cast<std::size_t>(host * network_.rails + rail(r))]);
  }
  // A message on a host (copied by the CPUs, nothing in its way) reaches its receiver as
  // its first slot does; its last byte once its sender has copied it in.
  const bool onHost = path != PathClass::kNetwork;
  const double arrival = (onHost ? m.start : m.end) + latency;
  const double last = m.end + latency;
  // The send is complete once its message is delivered.
  push(last, e.sender, e.step, EventKind::kDone);
  const std::size_t place = pending_.find(MessageKey{e.slot, static_cast<std::uint32_t>(p), e.index});
  Pending& entry = pending_[place];
  if (entry.step < 0) {
    entry.arrival = arrival;
    entry.last = last;
    entry.elements = s.elements;
    return;
  }
  const std::uint32_t recvStep = static_cast<std::uint32_t>(entry.step);
  const std::uint32_t expected = entry.elements;
  const double posted = entry.posted;
  pending_.erase(place);
  if (expected != s.elements) {
    mismatch_ = true;
    return;
  }
  pushData(std::max(arrival, posted), e.slot, recvStep, last);
}

void Run::post(std::uint32_t slot, std::uint32_t id, double time) {
  const SimStep& s = step(slot, id);
  const std::size_t place =
      pending_.find(MessageKey{slot, static_cast<std::uint32_t>(s.recvPeer), s.recvIndex});
  Pending& entry = pending_[place];
  if (entry.arrival < 0) {
    entry.step = static_cast<std::int32_t>(id);
    entry.elements = s.elements;
    entry.posted = time;
    return;
  }
  const double arrival = entry.arrival;
  const double last = entry.last;
  const std::uint32_t sent = entry.elements;
  pending_.erase(place);
  if (sent != s.elements) {
    mismatch_ = true;
    return;
  }
  pushData(std::max(arrival, time), slot, id, last);
}

void Run::recvData(std::uint32_t slot, std::uint32_t id, double time, double last) {
  const SimStep& s = step(slot, id);
  const int self = static_cast<int>(slot);
  const double b = bytes(s);
  const double reduce = machines_.gamma * b;
  // Its wake-up and its own CPU time. Over the hybrid transport too, the waiting thread
  // reads a message from another host itself (HybridTransport's WaitPartner).
  const double wake = wakeCost(slot, time) + overhead(self, s.recvPeer);
  const double in = recvCopy(self, s.recvPeer, b);
  const double inBytes = in > 0 ? b : 0;
  // The receive's CPU work from `time`, which ends no earlier than the message's last byte
  // is there (it copies, and reduces, as the slots come).
  auto received = [&](double seconds, double through) {
    return std::max(work(slot, time, seconds, through), last);
  };
  // A reduction, then `extra` CPU: as the pieces come, or where the path's receiver reduces
  // a message only once it is whole (LinkCost::reducesWhole), after its last byte: its
  // copy out then ends no earlier than that byte (one block of CPU, the copy started late
  // rather than split from the reduction by a wait).
  auto reduced = [&](double extra) {
    const double seconds = wake + in + reduce + extra;
    const double through = inBytes + machines_.reduceCopies * b;
    if (!reducesWhole(self, s.recvPeer)) return received(seconds, through);
    return work(slot, std::max(time, last - (wake + in)), seconds, through);
  };
  switch (s.op) {
    case OpCode::kRecv:
      if (wake + in > 0 || last > time) push(received(wake + in, inBytes), slot, id, EventKind::kDone);
      else complete(slot, id, time);
      return;
    case OpCode::kRecvReduce:
      push(reduced(0), slot, id, EventKind::kDone);
      return;
    case OpCode::kRecvReduceSend:
      push(reduced(overhead(self, s.sendPeer)), slot, id, EventKind::kSendPosted);
      return;
    case OpCode::kRecvCopySend:
      push(received(wake + in + overhead(self, s.sendPeer), inBytes), slot, id, EventKind::kSendPosted);
      return;
    default:
      return;
  }
}

void Run::complete(std::uint32_t slot, std::uint32_t id, double time) {
  Rank& rank = ranks_[slot];
  step(slot, id).state = kComplete;
  --rank.active;
  ++rank.completed;
  finish_ = std::max(finish_, time);
  if (rank.completed == rank.perCall) rank.firstDone = time;
  if (rank.completed == rank.count) rank.lastDone = time;
  issue(slot, time);
}

Status Run::stuck() const {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const Rank& rank = ranks_[r];
    if (rank.completed == rank.count) continue;
    std::string waiting;
    for (std::uint32_t i = 0; i < rank.count; ++i) {
      const SimStep& s = rank.steps[i];
      if (s.state != kRunning) continue;
      waiting = opReceives(s.op)
                    ? strFormat("step %u, a receive of message %u from rank %d", i, s.recvIndex, s.recvPeer)
                    : strFormat("step %u", i);
      break;
    }
    return Status(ErrorCode::kInternal,
                  strFormat("%s: the schedules do not match: rank %zu stopped after %u of %u "
                            "steps%s%s",
                            algorithm_.name, r, rank.completed, rank.count,
                            waiting.empty() ? "" : ", waiting on ", waiting.c_str()));
  }
  return Status::Ok();
}

Status Run::run() {
  for (std::uint32_t slot = 0; slot < ranks_.size(); ++slot) push(0, slot, 0, EventKind::kIssue);
  while (!events_.empty()) {
    const Event e = events_.top();
    events_.pop();
    switch (e.kind) {
      case EventKind::kIssue:
        issue(e.slot, e.time);
        break;
      case EventKind::kSendPosted:
        transmit(e.slot, e.step, e.time);
        break;
      case EventKind::kArrive:
        arrive(e);
        break;
      case EventKind::kRecvData:
        recvData(e.slot, e.step, e.time, e.cleared);
        break;
      case EventKind::kDone:
        complete(e.slot, e.step, e.time);
        break;
    }
  }
  if (mismatch_)
    return Status(ErrorCode::kInternal,
                  strFormat("%s: the schedules do not match: a message and its receive differ "
                            "in size",
                            algorithm_.name));
  return stuck();
}

// The flat exchange's time: one round in which every rank writes its contribution and
// reads every rank's; the reading shares the host's cores.
double flatExchangeTime(const AlgorithmInfo& algorithm, const CollectiveSpec& spec,
                        const MachineModel& model, const Placement& placement) {
  double read = 0;
  for (int r = 0; r < spec.size; ++r)
    read += static_cast<double>(algorithm.flatRankBytes != nullptr ? algorithm.flatRankBytes(spec, r)
                                                                   : algorithm.flatBytes(spec));
  const int cores = placement.cores(0) > 0 ? placement.cores(0) : std::max(1, model.coresPerHost);
  const double share = std::max(1.0, static_cast<double>(spec.size) / cores);
  // With more ranks than cores, a rank sees the others' contributions only once each has
  // run: every turn of the cores (share ranks each) costs share switches, and a rank waits
  // for share turns.
  const double switches = spec.size > cores ? share * share * handOver(model) : 0;
  return model.flatAlpha + model.flatBeta * read * share + switches;
}

}  // namespace

Result<Prediction> predict(const AlgorithmInfo& algorithm, const CollectiveSpec& callSpec,
                           const MachineModel& model, const Placement& placement,
                           const Network& network, const SimOptions& options) {
  if (placement.size() < 1)
    return Status(ErrorCode::kInvalidArgument, "simulate: the placement holds no rank");
  if (options.maxInflight < 1)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("simulate: maxInflight must be >= 1, got %d", options.maxInflight));
  CollectiveSpec spec = callSpec;
  spec.rank = 0;
  spec.size = placement.size();
  spec.hosts = &placement.hosts();
  spec.sharedMemory = placement.hostCount() == 1;
  if (spec.segmentCount < 1) spec.segmentCount = 1;
  if (algorithm.kind != spec.kind)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("simulate: %s is an algorithm of %s, not %s", algorithm.name,
                            collectiveName(algorithm.kind), collectiveName(spec.kind)));
  if (std::string why = algorithm.unsupportedReason(spec); !why.empty())
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("simulate: %s does not apply: %s", algorithm.name, why.c_str()));

  Prediction out;
  if (algorithm.flatBytes != nullptr && options.flatRoom > 0 && spec.sharedMemory &&
      algorithm.flatBytes(spec) <= options.flatRoom) {
    out.seconds = flatExchangeTime(algorithm, spec, model, placement);
    return out;
  }
  const Symmetry symmetry = options.allowFastPath
                               ? findSymmetry(algorithm, spec, placement, network)
                               : Symmetry{placement.size(), false};
  const int period = symmetry.period;
  if (isRooted(spec.kind)) {
    // Nothing makes the root wait for its receivers (nor a reduction's leaves for the
    // root): calls back to back overlap, one rank's next call under another's last. The
    // price is a call's in that steady state: the calls after the first of kRootedCalls run
    // back to back, from each rank's end of the first (a shaped link's buckets as the first
    // left them).
    Run run(algorithm, spec, model, placement, network, options, symmetry, kRootedCalls);
    TUTTI_RETURN_IF_ERROR(run.build());
    TUTTI_RETURN_IF_ERROR(run.run());
    out.seconds = std::max(run.laterCall(), run.sustained() / kRootedCalls);
    out.fastPath = period < placement.size();
    out.messages = run.messages() / kRootedCalls;
    out.ranksRun = period;
    return out;
  }
  Run run(algorithm, spec, model, placement, network, options, symmetry);
  TUTTI_RETURN_IF_ERROR(run.build());
  TUTTI_RETURN_IF_ERROR(run.run());
  out.seconds = std::max(run.finish(), run.sustained());
  if (model.nicBurstBytes > 0) {
    // A shaped link's buckets start full; a call repeated back to back finds them as the
    // one before left them. The second call stands for the steady state.
    Run again(algorithm, spec, model, placement, network, options, symmetry);
    TUTTI_RETURN_IF_ERROR(again.build());
    again.continueAfter(run);
    TUTTI_RETURN_IF_ERROR(again.run());
    out.seconds = std::max(again.finish(), again.sustained());
  }
  out.fastPath = period < placement.size();
  out.messages = run.messages();
  out.ranksRun = period;
  return out;
}

}  // namespace tutti::tuning
