#include "executor/executor.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/assert.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/strings.h"
#include "executor/slot.h"
#include "reduce/reduce.h"
#include "transport/call_checker.h"

namespace tutti {

ExecutorPool::Slot& ExecutorPool::slot(std::size_t i) { return *slots_[i]; }

namespace {

enum StepState : std::uint8_t { kNotStarted = 0, kRunning = 1, kComplete = 2 };

// One run of one schedule. Kept as a class so each phase is a short method.
class Run {
 public:
  Run(Transport& transport, const Schedule& schedule, const ExecBuffers& buffers,
      const ExecParams& params, ExecutorPool& pool, ExecReport* report)
      : transport_(transport),
        schedule_(schedule),
        buffers_(buffers),
        params_(params),
        pool_(pool),
        report_(report),
        rank_(schedule.rank),
        elemSize_(dataTypeSize(params.dtype)) {}

  Status run();

  // Driven from outside (RunGroup): begin() once, then turn() until it says done or failed;
  // on failure or timeout, abandon() returns what execute() would.
  enum class Turn { kProgressed, kIdle, kDone, kFailed };
  // Sets up the run; false when there is nothing to do (no steps).
  bool begin();
  // Issues what can be issued and advances every slot, without waiting. *failure is set
  // with kFailed.
  Turn turn(Status* failure);
  Status abandon(Status failure);
  // Ends the wait loop when the deadline has passed: the timeout naming what is missing.
  Status timeoutError() const;
  const ExecParams& params() const { return params_; }

 private:
  using Slot = ExecutorPool::Slot;

  char* address(const Region& region) const;
  bool depsComplete(StepId id) const;
  // Sets up `steps` steps' bookkeeping in the pool (reused across runs).
  void prepare(std::size_t steps);
  void start(Slot& slot, StepId id);
  // For a step that receives and sends what it received (or reduced): posts the send now,
  // fed by the receive as its pieces land (TransferRequest::feeds), where the links can.
  void postFedSend(Slot& slot, const Step& step);
  // Whether the send step `id` can carry the copy step after it (the same source, read
  // once by the link: TransferRequest::mirror); if so, that step is taken now.
  bool fuseCopy(Slot& slot, StepId id);
  // Ends a fused copy once its send has: the link wrote it, or it is copied now.
  void finishFusedCopy(Slot& slot);
  // Moves `slot` on if its transfer completed. False, with *failure set, when it failed.
  bool advance(Slot& slot, bool* progressed, Status* failure);
  void computeAfterReceive(const Step& step, const Slot& slot);
  void finishStep(Slot& slot);
  void cancelAll();
  // The error for a receive refused because the peer runs another call: both calls named.
  Status mismatchError(const Step& step, const Slot& slot) const;
  // What the run still waits for; *onlyPeer is that rank when it is a single one, else -1.
  std::string waitingOn(int* onlyPeer) const;
  // Once params_.probeAt has passed: a probe (tag.h) to each peer a busy slot waits for.
  void sendProbes();
  Tag tagFor(std::uint32_t index) const { return params_.tagBase + index; }
  // The link to `peer`; a point-to-point message to this rank itself takes the loopback.
  Link& linkTo(int peer) { return peer == rank_ ? transport_.loopback() : transport_.link(peer); }

  Transport& transport_;
  const Schedule& schedule_;
  const ExecBuffers& buffers_;
  const ExecParams& params_;
  ExecutorPool& pool_;
  ExecReport* const report_;  // null: nobody asks where a failed run stood
  const int rank_;
  const std::size_t elemSize_;
  std::size_t slotCount_ = 0;
  std::size_t outputBytes_ = 0;  // the output the schedule writes: its last byte's end
  std::size_t active_ = 0;
  std::size_t completed_ = 0;
  std::size_t steps_ = 0;
  StepId next_ = 0;     // the next step to issue
  bool begun_ = false;  // registered with the call checker (or nothing to register)
  bool probed_ = false;  // sendProbes() ran
};

char* Run::address(const Region& region) const {
  char* base = nullptr;
  switch (region.buffer) {
    case BufferKind::kInput: base = const_cast<char*>(static_cast<const char*>(buffers_.input)); break;
    case BufferKind::kOutput: base = static_cast<char*>(buffers_.output); break;
    case BufferKind::kScratch: base = static_cast<char*>(buffers_.scratch); break;
  }
  if (region.count == 0) return base;
  TUTTI_ASSERT(base != nullptr);
  return base + region.offset * elemSize_;
}

bool Run::depsComplete(StepId id) const {
  const Step& step = schedule_.steps[id];
  for (std::uint32_t d = 0; d < step.depCount; ++d) {
    if (pool_.stepState()[schedule_.deps[step.depBegin + d]] != kComplete) return false;
  }
  return true;
}

void Run::finishStep(Slot& slot) {
  pool_.stepState()[slot.step] = kComplete;
  slot.busy = false;
  --active_;
  ++completed_;
}

void Run::start(Slot& slot, StepId id) {
  const Step& step = schedule_.steps[id];
  slot.step = id;
  slot.busy = true;
  ++active_;
  pool_.stepState()[id] = kRunning;
  const std::size_t srcBytes = step.src.count * elemSize_;
  const std::size_t dstBytes = step.dst.count * elemSize_;
  slot.fused = false;
  slot.send.mirror = nullptr;
  slot.send.mirrored = false;
  slot.send.fed = false;
  slot.recv.feeds = nullptr;
  slot.recv.feedsOnly = false;
  slot.recv.destinationBytes = step.dst.buffer == BufferKind::kOutput ? outputBytes_ : 0;
  if (opReceives(step.op) && opSends(step.op)) postFedSend(slot, step);
  switch (step.op) {
    case OpCode::kSend:
      slot.receiving = false;
      fuseCopy(slot, id);
      linkTo(step.sendPeer)
          .postSend(&slot.send, tagFor(step.sendIndex), address(step.src), srcBytes);
      return;
    case OpCode::kRecv:
    case OpCode::kRecvCopySend:
      slot.receiving = true;
      slot.recv.combine = nullptr;
      slot.recv.combined = false;
      linkTo(step.recvPeer)
          .postRecv(&slot.recv, tagFor(step.recvIndex), address(step.dst), dstBytes);
      return;
    case OpCode::kRecvReduce:
    case OpCode::kRecvReduceSend:
      slot.receiving = true;
      TUTTI_ASSERT_CMP(slot.staging.size(), >=, srcBytes);
      // The link may reduce the message into dst as it arrives (src and dst are stable
      // from here to the step's end: the schedule declares every hazard on them); if it
      // cannot, the message lands in staging and is reduced on completion.
      slot.sink.set(address(step.dst), address(step.src), dstBytes, elemSize_, params_.dtype,
                    params_.op);
      slot.recv.combine = &slot.sink;
      slot.recv.combined = false;
      linkTo(step.recvPeer)
          .postRecv(&slot.recv, tagFor(step.recvIndex), slot.staging.data(), srcBytes);
      return;
    case OpCode::kCopy: {
      char* dst = address(step.dst);
      const char* src = address(step.src);
      reduce::copy(dst, src, dstBytes);
      break;
    }
    case OpCode::kReduce:
      reduce::combine(address(step.dst), address(step.dst), address(step.src), step.dst.count,
                      params_.dtype, params_.op);
      break;
  }
  if (step.finalize && params_.op == ReduceOp::kAvg)
    reduce::finalize(address(step.dst), step.dst.count, params_.dtype, params_.op, params_.worldSize);
  finishStep(slot);
}

void Run::computeAfterReceive(const Step& step, const Slot& slot) {
  if ((step.op == OpCode::kRecvReduce || step.op == OpCode::kRecvReduceSend) &&
      !slot.recv.combined) {
    reduce::combine(address(step.dst), address(step.src), slot.staging.data(), step.dst.count,
                    params_.dtype, params_.op);
  }
  // Only the average has a finalization (reduce::finalize does nothing for the others).
  if (step.finalize && params_.op == ReduceOp::kAvg)
    reduce::finalize(address(step.dst), step.dst.count, params_.dtype, params_.op, params_.worldSize);
}

void Run::postFedSend(Slot& slot, const Step& step) {
  // The average divides once the whole message is in: its pieces are not final before.
  if (step.finalize && params_.op == ReduceOp::kAvg) return;
  // A reduction whose result is kept (not forwardOnly: the last reduce-scatter step of a
  // ring, every one on 2 ranks) is sent once it is whole. Fed, each piece is reduced into
  // the next ring and copied back into dst, and the ring all-reduce on 2 ranks took
  // 1.4-1.6x as long from 64 KiB to 4 MiB (even from 16 MiB) and 1.05-1.15x on 4 ranks,
  // on 2 AMD vCPUs; intermediate steps, which never store their sums, stay fed.
  if (step.op == OpCode::kRecvReduceSend && !step.forwardOnly) return;
  const std::size_t bytes = step.dst.count * elemSize_;
  const Tag tag = tagFor(step.sendIndex);
  Link& to = linkTo(step.sendPeer);
  if (bytes == 0 ||
      !linkTo(step.recvPeer).canFeed(to, tag, address(step.dst), bytes, params_.preferCopy))
    return;
  // Posted before its receive, so that the receive finds it when the first piece lands.
  slot.send.fed = true;
  slot.send.fedBytes = 0;
  slot.recv.feeds = &slot.send;
  slot.recv.feedsOnly = step.forwardOnly;
  to.postSend(&slot.send, tag, address(step.dst), bytes);
}

bool Run::fuseCopy(Slot& slot, StepId id) {
  // The copy must be next in order and ready now (it would run at once unfused), read
  // exactly what the send reads, and not overlap it; its dependents wait for it either way.
  const StepId copyId = id + 1;
  if (copyId != next_ || copyId >= steps_) return false;
  const Step& send = schedule_.steps[id];
  const Step& copy = schedule_.steps[copyId];
  if (copy.op != OpCode::kCopy || copy.finalize || copy.src.buffer != send.src.buffer ||
      copy.src.offset != send.src.offset || copy.src.count != send.src.count ||
      copy.dst.count != copy.src.count || copy.src.count == 0 || !depsComplete(copyId))
    return false;
  const char* src = address(send.src);
  char* dst = address(copy.dst);
  const std::size_t bytes = copy.src.count * elemSize_;
  if (dst < src + bytes && src < dst + bytes) return false;
  // Fused, the copy completes with the send: only where the send does not wait for its
  // receive (a message its receiver reads in place does), or the copy's dependents could
  // wait on a receive that waits on them, where the schedule alone would not.
  if (!linkTo(send.sendPeer)
           .copiesSend(tagFor(send.sendIndex), src, bytes, params_.preferCopy))
    return false;
  slot.fused = true;
  slot.fusedCopy = copyId;
  slot.send.mirror = dst;
  pool_.stepState()[copyId] = kRunning;
  ++next_;
  return true;
}

void Run::finishFusedCopy(Slot& slot) {
  if (!slot.fused) return;
  const Step& copy = schedule_.steps[slot.fusedCopy];
  if (!slot.send.mirrored)
    reduce::copy(address(copy.dst), address(copy.src), copy.dst.count * elemSize_);
  pool_.stepState()[slot.fusedCopy] = kComplete;
  ++completed_;
  slot.fused = false;
}

bool Run::advance(Slot& slot, bool* progressed, Status* failure) {
  const Step& step = schedule_.steps[slot.step];
  if (slot.receiving) {
    if (!slot.recv.done()) return true;
    if (!slot.recv.status().ok()) {
      if (slot.recv.status().code() == ErrorCode::kMismatch && !slot.recv.peerStamp.empty())
        *failure = mismatchError(step, slot);
      else
        *failure = slot.recv.status();
      return false;
    }
    computeAfterReceive(step, slot);
    *progressed = true;
    if (!opSends(step.op)) {
      finishStep(slot);
      return true;
    }
    slot.receiving = false;
    const std::size_t bytes = step.dst.count * elemSize_;
    if (!slot.send.fed)
      linkTo(step.sendPeer).postSend(&slot.send, tagFor(step.sendIndex), address(step.dst), bytes);
    else if (slot.send.fedBytes < bytes)  // the link did not hand the pieces on as they came
      linkTo(step.sendPeer).feed(&slot.send, bytes);
  }
  if (!slot.send.done()) return true;
  if (!slot.send.status().ok()) {
    *failure = slot.send.status();
    return false;
  }
  *progressed = true;
  finishFusedCopy(slot);
  finishStep(slot);
  return true;
}

Status Run::mismatchError(const Step& step, const Slot& slot) const {
  if (params_.what == nullptr) return slot.recv.status();
  return Status(ErrorCode::kMismatch,
                strFormat("rank %d called %s while rank %d called %s", step.recvPeer,
                          params_.what->describeStamp(slot.recv.peerStamp).c_str(),
                          transport_.rank(), params_.what->describe().c_str()),
                step.recvPeer);
}

void Run::cancelAll() {
  for (std::size_t i = 0; i < slotCount_; ++i) {
    Slot& slot = pool_.slot(i);
    if (!slot.busy) continue;
    const Step& step = schedule_.steps[slot.step];
    if (slot.receiving && opReceives(step.op)) linkTo(step.recvPeer).cancel(&slot.recv);
    // A fed send is pending from the step's start, before its receive is done.
    if (opSends(step.op) && (!slot.receiving || slot.send.fed))
      linkTo(step.sendPeer).cancel(&slot.send);
    slot.busy = false;
  }
  active_ = 0;
}

std::string Run::waitingOn(int* onlyPeer) const {
  std::string out;
  *onlyPeer = -2;  // none yet
  for (std::size_t i = 0; i < slotCount_; ++i) {
    const Slot& slot = pool_.slot(i);
    if (!slot.busy) continue;
    const Step& step = schedule_.steps[slot.step];
    if (!out.empty()) out += ", ";
    int peer = slot.receiving ? step.recvPeer : step.sendPeer;
    *onlyPeer = (*onlyPeer == -2 || *onlyPeer == peer) ? peer : -1;
    if (slot.receiving)
      out += strFormat("data from rank %d (step %u)", step.recvPeer, slot.step);
    else
      out += strFormat("rank %d to accept data (step %u)", step.sendPeer, slot.step);
  }
  return out;
}

void Run::prepare(std::size_t steps) {
  std::size_t staging = 0;
  std::uint64_t outputEnd = 0;
  for (const Step& s : schedule_.steps) {
    if (s.op == OpCode::kRecvReduce || s.op == OpCode::kRecvReduceSend)
      staging = std::max<std::size_t>(staging, s.src.count * elemSize_);
    if (s.dst.buffer == BufferKind::kOutput) outputEnd = std::max(outputEnd, s.dst.offset + s.dst.count);
  }
  outputBytes_ = outputEnd * elemSize_;
  slotCount_ = std::max<std::size_t>(1, std::min(params_.maxInflight, steps));
  pool_.reserve(slotCount_, staging);
  pool_.stepState().assign(steps, kNotStarted);
  for (std::size_t i = 0; i < slotCount_; ++i) {
    Slot& slot = pool_.slot(i);
    slot.busy = false;
    slot.send.stamp = params_.stamp;
    slot.send.preferCopy = params_.preferCopy;
    slot.send.streamPieces = params_.streamPieces;
    slot.recv.stamp = params_.stamp;
    slot.recv.peerStamp = CallStamp{};
  }
}

Status Run::timeoutError() const {
  int onlyPeer = -1;
  std::string waiting = waitingOn(&onlyPeer);
  return Status(ErrorCode::kTimeout,
                strFormat("%s timed out after completing %zu of %zu steps; still waiting for %s",
                          (params_.what != nullptr ? params_.what->describe()
                                                   : std::string("the operation"))
                              .c_str(),
                          completed_, schedule_.steps.size(), waiting.c_str()),
                onlyPeer >= 0 ? onlyPeer : Status::kNoRank);
}

bool Run::begin() {
  steps_ = schedule_.steps.size();
  if (steps_ == 0) return false;
  prepare(steps_);
  next_ = 0;
  begun_ = params_.checker == nullptr || params_.stamp.empty();
  // A collective: what earlier calls left unread is checked now and then
  // (Transport::readStrays).
  if (!params_.stamp.empty() && params_.seq % kStrayCheckCalls == 0)
    transport_.readStrays(params_.seq);
  return true;
}

Run::Turn Run::turn(Status* failure) {
  bool progressed = false;
  // Issue steps in order while their dependencies are met and a slot is free.
  while (next_ < steps_ && active_ < slotCount_ && depsComplete(next_)) {
    std::size_t free = 0;
    while (pool_.slot(free).busy) ++free;  // exists: active_ < slotCount_
    start(pool_.slot(free), next_++);
    progressed = true;
  }
  if (!begun_) {
    // Messages of this call that arrived meanwhile were kept as early; begin() checks them.
    begun_ = true;
    *failure = params_.checker->begin(params_.seq, params_.stamp);
    if (!failure->ok()) return Turn::kFailed;
  }
  for (std::size_t i = 0; i < slotCount_; ++i) {
    if (pool_.slot(i).busy && !advance(pool_.slot(i), &progressed, failure)) return Turn::kFailed;
  }
  if (completed_ == steps_) return Turn::kDone;
  if (progressed) return Turn::kProgressed;
  // Before waiting: a transport failure elsewhere (a peer died) completes no request of
  // this run's, so it is asked for here rather than on every turn.
  *failure = transport_.health();
  return failure->ok() ? Turn::kIdle : Turn::kFailed;
}

Status Run::run() {
  if (!begin()) return Status::Ok();
  WaitSignal& signal = transport_.progressSignal();
  Status failure;
  while (true) {
    const std::uint32_t seen = signal.snapshot();
    const Turn t = turn(&failure);
    if (t == Turn::kDone) return Status::Ok();
    if (t == Turn::kFailed) break;
    if (t == Turn::kProgressed) continue;
    // Until the deadline, or first until the probes are due (a wait ends false only at its
    // deadline: no clock is read for them).
    const Deadline until =
        probed_ ? params_.deadline : Deadline::earliest(params_.deadline, params_.probeAt);
    if (transport_.waitForProgress(seen, until, params_.spinNs)) continue;
    if (params_.deadline.expired()) {
      failure = timeoutError();
      break;
    }
    if (!probed_) sendProbes();
  }
  return abandon(std::move(failure));
}

void Run::sendProbes() {
  probed_ = true;
  if (params_.stamp.empty()) return;  // point to point: nothing to compare
  // A probe is left to complete on its own (the link sends it once it has room: a run
  // does not wait for it, and withdrawing it would cost an error's words). One still
  // pending from an earlier run is not sent again.
  TransferRequest* probes = pool_.probes(static_cast<std::size_t>(transport_.size()));
  const Tag tag = params_.tagBase + kProbeIndex;
  for (std::size_t i = 0; i < slotCount_; ++i) {
    const Slot& slot = pool_.slot(i);
    if (!slot.busy) continue;
    const Step& step = schedule_.steps[slot.step];
    const int peer = slot.receiving ? step.recvPeer : step.sendPeer;
    TransferRequest& probe = probes[peer];
    if (peer == rank_ || probe.tag == tag ||
        probe.state.load(std::memory_order_acquire) == TransferRequest::kPending)
      continue;  // one per peer
    probe.stamp = params_.stamp;
    probe.preferCopy = false;
    probe.mirror = nullptr;
    probe.streamPieces = false;
    probe.fed = false;
    probe.tag = tag;
    linkTo(peer).postSend(&probe, tag, nullptr, 0);
  }
}


Status Run::abandon(Status failure) {
  if (report_ != nullptr) {
    // Before cancelling: afterwards no slot is busy and the run would seem to wait for nothing.
    int onlyPeer = -1;
    report_->completedSteps = completed_;
    report_->totalSteps = steps_;
    report_->waitingOn = waitingOn(&onlyPeer);
  }
  // Fail first, then cancel: cancelling a request a peer may still be reading breaks the
  // transport too, and that symptom must not become the communicator's first failure.
  transport_.fail(failure);
  cancelAll();
  // Report the communicator's first failure: it is the root cause (a dead peer, a peer's
  // abort), where this run's own error may only be a symptom (a broken pipe to a rank that
  // already left because of it).
  Status root = transport_.health();
  return root.ok() ? failure : root;
}

}  // namespace

Status execute(Transport& transport, const Schedule& schedule, const ExecBuffers& buffers,
               const ExecParams& params, ExecutorPool& pool, ExecReport* report) {
  TUTTI_ASSERT_CMP(schedule.size, ==, transport.size());
  TUTTI_ASSERT_CMP(schedule.rank, ==, transport.rank());
  // This thread moves the bytes while it waits (one wake-up per message, not two).
  transport.setDriving(true);
  ScopeExit stopDriving([&] { transport.setDriving(false); });
  Run run(transport, schedule, buffers, params, pool, report);
  return run.run();
}

struct RunGroup::Entry {
  std::optional<Run> run;
  Status* result = nullptr;
  bool* ended = nullptr;
};

RunGroup::RunGroup(Transport& transport) : transport_(transport) {}
RunGroup::~RunGroup() = default;

void RunGroup::begin() {
  TUTTI_ASSERT(active_.empty());
  transport_.setDriving(true);
}

void RunGroup::end() {
  TUTTI_ASSERT(active_.empty());  // the caller turns until every run has ended
  transport_.setDriving(false);
}

void RunGroup::add(const Schedule& schedule, const ExecBuffers& buffers, const ExecParams& params,
                   ExecutorPool& pool, ExecReport* report, Status* result, bool* ended) {
  TUTTI_ASSERT_CMP(schedule.size, ==, transport_.size());
  TUTTI_ASSERT_CMP(schedule.rank, ==, transport_.rank());
  if (spare_.empty()) spare_.push_back(std::make_unique<Entry>());
  std::unique_ptr<Entry> e = std::move(spare_.back());
  spare_.pop_back();
  e->result = result;
  e->ended = ended;
  *ended = false;
  Run& run = e->run.emplace(transport_, schedule, buffers, params, pool, report);
  if (!run.begin()) {
    finish(*e, Status::Ok());
  } else {
    // Its first steps are posted now, behind those of the runs added before it.
    Status failure;
    const Run::Turn t = run.turn(&failure);
    if (t == Run::Turn::kDone) finish(*e, Status::Ok());
    if (t == Run::Turn::kFailed) finish(*e, run.abandon(std::move(failure)));
  }
  if (e->run.has_value())
    active_.push_back(std::move(e));
  else
    spare_.push_back(std::move(e));
}

void RunGroup::finish(Entry& e, Status status) {
  *e.result = std::move(status);
  *e.ended = true;
  e.run.reset();
}

void RunGroup::turn(std::uint32_t seen) {
  bool progressed = false;
  Deadline earliest = Deadline::never();
  std::int64_t spinNs = 0;
  for (const std::unique_ptr<Entry>& e : active_) {
    Status failure;
    switch (e->run->turn(&failure)) {
      case Run::Turn::kDone:
        finish(*e, Status::Ok());
        progressed = true;
        break;
      case Run::Turn::kFailed:
        // The transport fails with it: the other runs end on their next turn.
        finish(*e, e->run->abandon(std::move(failure)));
        progressed = true;
        break;
      case Run::Turn::kProgressed:
        progressed = true;
        break;
      case Run::Turn::kIdle:
        earliest = Deadline::earliest(earliest, e->run->params().deadline);
        spinNs = std::max(spinNs, e->run->params().spinNs);
        break;
    }
  }
  if (!progressed) {
    if (transport_.waitForProgress(seen, earliest, spinNs) || !earliest.expired()) return;
    for (const std::unique_ptr<Entry>& e : active_) {
      if (e->run->params().deadline.expired()) finish(*e, e->run->abandon(e->run->timeoutError()));
    }
  }
  // Ended runs go back to the spares; the others keep their order.
  std::size_t kept = 0;
  for (std::unique_ptr<Entry>& e : active_) {
    if (e->run.has_value())
      active_[kept++] = std::move(e);
    else
      spare_.push_back(std::move(e));
  }
  active_.resize(kept);
}

}  // namespace tutti
