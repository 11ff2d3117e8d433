#include "schedule/verify_progress.h"

#include <algorithm>
#include <deque>

#include "base/assert.h"
#include "base/macros.h"
#include "base/strings.h"
#include "schedule/verify_common.h"

namespace tutti::verify {
namespace {

// A receive half of some rank, keyed by (sender, message index): sorted per rank, they
// turn matching into one binary search per send.
struct Incoming {
  std::uint64_t key;
  StepId step;
  bool operator<(const Incoming& other) const { return key < other.key; }
};

std::uint64_t messageKey(int sender, std::uint32_t index) {
  return (static_cast<std::uint64_t>(sender) << 32) | index;
}

Status pairError(const Schedule& a, StepId i, const Schedule& b, StepId j, const char* what) {
  return Status(ErrorCode::kInternal,
                strFormat("rank %d %s and rank %d %s: %s", a.rank, stepText(a, i).c_str(), b.rank,
                          stepText(b, j).c_str(), what));
}

// Sorted receive halves of every rank; two receives with the same sender and index fail.
Status collectIncoming(const std::vector<Schedule>& schedules,
                       std::vector<std::vector<Incoming>>* incoming) {
  incoming->resize(schedules.size());
  for (const Schedule& s : schedules) {
    auto& list = (*incoming)[static_cast<std::size_t>(s.rank)];
    for (StepId j = 0; j < s.steps.size(); ++j) {
      const Step& step = s.steps[j];
      if (opReceives(step.op)) list.push_back({messageKey(step.recvPeer, step.recvIndex), j});
    }
    std::sort(list.begin(), list.end());
    for (std::size_t k = 1; k < list.size(); ++k) {
      if (list[k].key == list[k - 1].key)
        return pairError(s, list[k - 1].step, s, list[k].step,
                         "both receive the same message (same sender and message index)");
    }
  }
  return Status::Ok();
}

Status unmatchedSend(const Schedule& s, StepId i, const std::vector<Incoming>& list) {
  const Step& step = s.steps[i];
  auto from = std::lower_bound(list.begin(), list.end(), Incoming{messageKey(s.rank, 0), 0});
  auto to = std::lower_bound(list.begin(), list.end(), Incoming{messageKey(s.rank + 1, 0), 0});
  return stepError(s, i,
                   strFormat("rank %d posts no receive of message #%u from rank %d (it "
                             "receives %zu messages from rank %d)",
                             step.sendPeer, step.sendIndex, s.rank,
                             static_cast<std::size_t>(to - from), s.rank));
}

}  // namespace

Status matchMessages(const std::vector<Schedule>& schedules, Matching* m, VerifyStats* stats) {
  const std::size_t n = schedules.size();
  m->base.assign(n + 1, 0);
  for (std::size_t r = 0; r < n; ++r) m->base[r + 1] = m->base[r] + schedules[r].steps.size();
  m->sendPartner.assign(m->base[n], StepRef{});
  m->recvPartner.assign(m->base[n], StepRef{});
  std::vector<std::vector<Incoming>> incoming;
  TUTTI_RETURN_IF_ERROR(collectIncoming(schedules, &incoming));
  for (const Schedule& s : schedules) {
    std::uint64_t elements = 0, messages = 0;
    for (StepId i = 0; i < s.steps.size(); ++i) {
      const Step& step = s.steps[i];
      if (!opSends(step.op)) continue;
      const auto d = static_cast<std::size_t>(step.sendPeer);
      const auto& list = incoming[d];
      auto it = std::lower_bound(list.begin(), list.end(),
                                 Incoming{messageKey(s.rank, step.sendIndex), 0});
      if (it == list.end() || it->key != messageKey(s.rank, step.sendIndex))
        return unmatchedSend(s, i, list);
      const Schedule& peer = schedules[d];
      StepRef& back = m->recvPartner[m->base[d] + it->step];
      if (back.rank >= 0)
        return pairError(s, back.step, s, i,
                         "both send the same message (same receiver and "
                         "message index)");
      if (sentCount(step) != receivedCount(peer.steps[it->step]))
        return pairError(
            s, i, peer, it->step,
            strFormat("the message carries %llu elements but the receive expects "
                      "%llu",
                      static_cast<unsigned long long>(sentCount(step)),
                      static_cast<unsigned long long>(receivedCount(peer.steps[it->step])))
                .c_str());
      back = StepRef{s.rank, i};
      m->sendPartner[m->base[static_cast<std::size_t>(s.rank)] + i] = StepRef{peer.rank, it->step};
      elements += sentCount(step);
      ++messages;
    }
    stats->messages += messages;
    stats->maxElementsSentByRank = std::max(stats->maxElementsSentByRank, elements);
    stats->maxMessagesSentByRank = std::max(stats->maxMessagesSentByRank, messages);
  }
  for (const Schedule& s : schedules) {
    for (const Incoming& in : incoming[static_cast<std::size_t>(s.rank)]) {
      if (m->recvPartner[m->base[static_cast<std::size_t>(s.rank)] + in.step].rank < 0) {
        const Step& step = s.steps[in.step];
        return stepError(s, in.step,
                         strFormat("rank %d never sends message #%u to rank %d", step.recvPeer,
                                   step.recvIndex, s.rank));
      }
    }
  }
  return Status::Ok();
}

namespace {

// One run of simulateProgress(). Two work lists drive it: ranks to revisit (one of their
// steps completed, so a dependency or a slot may have freed up) and fused steps whose send
// half was just posted. Nothing recurses, so forwarding chains across 1,024 ranks cost no
// stack.
class Simulation {
 public:
  Simulation(const std::vector<Schedule>& schedules, const Matching& matching,
             std::size_t maxInflight, const std::vector<StepObserver*>& observers)
      : s_(schedules),
        m_(matching),
        slots_(std::max<std::size_t>(1, maxInflight)),
        observers_(observers),
        state_(matching.base.back(), kNotIssued),
        level_(matching.base.back(), 0),
        ranks_(schedules.size()) {}

  Status run(VerifyStats* stats) {
    for (std::size_t r = 0; r < s_.size(); ++r) enqueue(static_cast<int>(r));
    while (!sends_.empty() || !queue_.empty()) {
      if (!sends_.empty()) {
        StepRef ref = sends_.back();
        sends_.pop_back();
        TUTTI_RETURN_IF_ERROR(trySend(ref));
      } else {
        const int r = queue_.front();
        queue_.pop_front();
        TUTTI_RETURN_IF_ERROR(issueReady(r));
      }
    }
    for (std::size_t r = 0; r < s_.size(); ++r) {
      if (ranks_[r].done < s_[r].steps.size()) return deadlock();
    }
    stats->criticalPathMessages = criticalPath_;
    return Status::Ok();
  }

 private:
  enum State : std::uint8_t { kNotIssued, kRecvPosted, kSendPosted, kDone };
  struct RankState {
    StepId next = 0;           // first step not issued
    std::size_t inflight = 0;  // issued, not complete
    std::size_t done = 0;
    std::uint32_t depCursor = 0;  // dependencies of `next` already seen complete
    bool queued = false;
  };

  std::uint64_t global(const StepRef& ref) const {
    return m_.base[static_cast<std::size_t>(ref.rank)] + ref.step;
  }
  const Step& stepOf(const StepRef& ref) const {
    return s_[static_cast<std::size_t>(ref.rank)].steps[ref.step];
  }

  void enqueue(int r) {
    RankState& k = ranks_[static_cast<std::size_t>(r)];
    if (k.queued) return;
    k.queued = true;
    queue_.push_back(r);
  }

  // True when every dependency of the rank's next step is complete. Dependencies seen
  // complete are skipped next time, so each is examined once per step overall.
  bool headReady(int r, RankState& k) {
    const Schedule& s = s_[static_cast<std::size_t>(r)];
    const Step& step = s.steps[k.next];
    while (k.depCursor < step.depCount) {
      const StepId on = s.deps[step.depBegin + k.depCursor];
      if (state_[m_.base[static_cast<std::size_t>(r)] + on] != kDone) return false;
      ++k.depCursor;
    }
    return true;
  }

  Status issueReady(int r) {
    RankState& k = ranks_[static_cast<std::size_t>(r)];
    const Schedule& s = s_[static_cast<std::size_t>(r)];
    // Completions during this loop must not queue the rank again: the loop sees them.
    while (k.next < s.steps.size() && k.inflight < slots_ && headReady(r, k)) {
      const StepRef ref{r, k.next++};
      k.depCursor = 0;
      TUTTI_RETURN_IF_ERROR(issue(ref));
    }
    k.queued = false;
    return Status::Ok();
  }

  // Posts a step: local steps run and complete at once; a half looks for its partner.
  Status issue(const StepRef& ref) {
    const Schedule& s = s_[static_cast<std::size_t>(ref.rank)];
    const Step& step = s.steps[ref.step];
    std::uint64_t level = 0;
    for (std::uint32_t d = 0; d < step.depCount; ++d)
      level = std::max(
          level, level_[m_.base[static_cast<std::size_t>(ref.rank)] + s.deps[step.depBegin + d]]);
    level_[global(ref)] = level;
    ++ranks_[static_cast<std::size_t>(ref.rank)].inflight;
    for (StepObserver* o : observers_) TUTTI_RETURN_IF_ERROR(o->onIssue(ref.rank, ref.step));
    if (opReceives(step.op)) {
      state_[global(ref)] = kRecvPosted;
      const StepRef& from = m_.recvPartner[global(ref)];
      if (state_[global(from)] == kSendPosted) return deliver(from, ref);
      return Status::Ok();
    }
    if (opSends(step.op)) {
      state_[global(ref)] = kSendPosted;
      return trySend(ref);
    }
    for (StepObserver* o : observers_) TUTTI_RETURN_IF_ERROR(o->onLocal(ref.rank, ref.step));
    complete(ref);
    return Status::Ok();
  }

  // The send half of `ref` is posted: it completes if the receiver is waiting.
  Status trySend(const StepRef& ref) {
    if (state_[global(ref)] != kSendPosted) return Status::Ok();  // already delivered
    const StepRef& to = m_.sendPartner[global(ref)];
    if (state_[global(to)] == kRecvPosted) return deliver(ref, to);
    return Status::Ok();
  }

  // Rendezvous: both halves are posted. The message is one more link in the chain.
  Status deliver(const StepRef& from, const StepRef& to) {
    const std::uint64_t level = std::max(level_[global(from)], level_[global(to)]) + 1;
    for (StepObserver* o : observers_)
      TUTTI_RETURN_IF_ERROR(o->onTransfer(from.rank, from.step, to.rank, to.step));
    level_[global(from)] = level;
    complete(from);
    level_[global(to)] = level;
    if (opSends(stepOf(to).op)) {
      // Posted from the work list rather than here, so long forwarding chains do not
      // recurse.
      state_[global(to)] = kSendPosted;
      sends_.push_back(to);
    } else {
      complete(to);
    }
    return Status::Ok();
  }

  void complete(const StepRef& ref) {
    state_[global(ref)] = kDone;
    RankState& k = ranks_[static_cast<std::size_t>(ref.rank)];
    TUTTI_ASSERT_CMP(k.inflight, >, 0u);
    --k.inflight;
    ++k.done;
    criticalPath_ = std::max(criticalPath_, level_[global(ref)]);
    enqueue(ref.rank);
  }

  std::string partnerText(const StepRef& p) const;
  std::string stuckText(int r) const;
  Status deadlock() const;

  const std::vector<Schedule>& s_;
  const Matching& m_;
  const std::size_t slots_;
  const std::vector<StepObserver*>& observers_;
  std::vector<std::uint8_t> state_;   // per global step
  std::vector<std::uint64_t> level_;  // per global step: messages on the longest chain to it
  std::vector<RankState> ranks_;
  std::deque<int> queue_;       // ranks to revisit
  std::vector<StepRef> sends_;  // fused steps whose send half was just posted
  std::uint64_t criticalPath_ = 0;
};

std::string Simulation::partnerText(const StepRef& p) const {
  const Schedule& s = s_[static_cast<std::size_t>(p.rank)];
  const char* where = "";
  switch (state_[global(p)]) {
    case kNotIssued:
      where = "not issued yet";
      break;
    case kRecvPosted:
      where = "itself still waiting for its receive";
      break;
    case kSendPosted:
      where = "waiting to send";
      break;
    case kDone:
      where = "complete";
      break;
  }
  return strFormat("rank %d %s, %s (rank %d has issued %u of %zu steps)", p.rank,
                   stepText(s, p.step).c_str(), where, p.rank,
                   ranks_[static_cast<std::size_t>(p.rank)].next, s.steps.size());
}

std::string Simulation::stuckText(int r) const {
  const Schedule& s = s_[static_cast<std::size_t>(r)];
  const RankState& k = ranks_[static_cast<std::size_t>(r)];
  std::string text = strFormat("rank %d completed %zu of %zu steps", r, k.done, s.steps.size());
  int shown = 0;
  for (StepId i = 0; i < k.next && shown < 1; ++i) {
    const StepRef ref{r, i};
    const std::uint8_t st = state_[global(ref)];
    if (st == kRecvPosted) {
      text += strFormat("; %s waits for data from %s", stepText(s, i).c_str(),
                        partnerText(m_.recvPartner[global(ref)]).c_str());
      ++shown;
    } else if (st == kSendPosted) {
      text += strFormat("; %s waits to hand its data to %s", stepText(s, i).c_str(),
                        partnerText(m_.sendPartner[global(ref)]).c_str());
      ++shown;
    }
  }
  if (k.next < s.steps.size()) {
    if (k.inflight >= slots_) {
      text += strFormat("; step %u is not issued: %zu steps in flight fill the window", k.next,
                        k.inflight);
    } else {
      const Step& step = s.steps[k.next];
      text += strFormat("; step %u is not issued: it depends on incomplete step %u", k.next,
                        s.deps[step.depBegin + k.depCursor]);
    }
  }
  return text;
}

Status Simulation::deadlock() const {
  std::vector<int> stuck;
  for (std::size_t r = 0; r < s_.size(); ++r) {
    if (ranks_[r].done < s_[r].steps.size()) stuck.push_back(static_cast<int>(r));
  }
  std::string text = strFormat(
      "deadlock: with rendezvous sends and at most %zu steps in flight "
      "per rank, %zu of %zu ranks cannot finish",
      slots_, stuck.size(), s_.size());
  for (std::size_t i = 0; i < stuck.size() && i < 3; ++i) text += ". " + stuckText(stuck[i]);
  if (stuck.size() > 3) text += strFormat(". (%zu more stuck ranks)", stuck.size() - 3);
  return Status(ErrorCode::kInternal, text);
}

}  // namespace

Status simulateProgress(const std::vector<Schedule>& schedules, const Matching& matching,
                        std::size_t maxInflight, const std::vector<StepObserver*>& observers,
                        VerifyStats* stats) {
  Simulation simulation(schedules, matching, maxInflight, observers);
  return simulation.run(stats);
}

}  // namespace tutti::verify
