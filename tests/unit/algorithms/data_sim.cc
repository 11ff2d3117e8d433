#include "unit/algorithms/data_sim.h"

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "base/strings.h"

namespace tutti::testing {
namespace {

enum class State : std::uint8_t { kWaiting, kPosted, kDone };

// One rank's memory: the input, output and scratch buffers, with in-place aliasing.
struct Memory {
  BufferLayout layout;
  std::vector<std::uint64_t> input, output, scratch;

  std::uint64_t* at(const Region& region, std::string* error) {
    std::vector<std::uint64_t>* buffer = &scratch;
    std::uint64_t offset = region.offset;
    std::uint64_t size = scratch.size();
    if (region.buffer == BufferKind::kInput) {
      buffer = layout.inputInOutputAt ? &output : &input;
      if (layout.inputInOutputAt) offset += *layout.inputInOutputAt;
      size = layout.inputCount + (layout.inputInOutputAt ? *layout.inputInOutputAt : 0);
    } else if (region.buffer == BufferKind::kOutput) {
      buffer = layout.outputInInputAt ? &input : &output;
      if (layout.outputInInputAt) offset += *layout.outputInInputAt;
      size = layout.outputCount + (layout.outputInInputAt ? *layout.outputInInputAt : 0);
    }
    if (region.count == 0) return nullptr;
    if (offset + region.count > size) {
      *error = strFormat("region [%llu, +%llu) of buffer %d is outside its %llu elements",
                         static_cast<unsigned long long>(region.offset),
                         static_cast<unsigned long long>(region.count),
                         static_cast<int>(region.buffer), static_cast<unsigned long long>(size));
      return nullptr;
    }
    return buffer->data() + offset;
  }
};

// A possible next event: issue a step (in order: rank r's next one), run a posted copy, or
// complete a message posted on both sides.
struct Action {
  enum Kind : std::uint8_t { kIssue, kRunCopy, kTransfer } kind;
  int rank = 0;
  StepId step = 0;
  std::tuple<int, int, std::uint32_t> message;  // kTransfer: (sender, receiver, index)
};

class Sim {
 public:
  Sim(const std::vector<CollectiveSpec>& specs, const std::vector<Schedule>& schedules,
      const SimOptions& options, SimResult* result);
  Status run();

 private:
  using Key = std::tuple<int, int, std::uint32_t>;

  void refresh(int r);
  void finish(int r, StepId id);
  Status issue(int r, StepId id);
  Status runCopy(int r, StepId id);
  Status transfer(const Key& key);
  Status fail(int r, std::size_t step, const std::string& what) const;
  std::string describeStuck() const;

  const std::vector<Schedule>& schedules_;
  const SimOptions options_;
  SimResult* result_;
  std::vector<Memory> memory_;
  std::vector<std::vector<State>> state_;
  std::vector<std::vector<std::uint32_t>> pendingDeps_;       // per step: deps not done
  std::vector<std::vector<std::vector<StepId>>> dependents_;  // per step: who waits on it
  std::vector<std::size_t> next_, active_, done_;
  std::vector<bool> hasIssueAction_;  // in order: rank r's next step is among actions_
  std::map<Key, StepId> sends_, recvs_;
  std::vector<Action> actions_;
};

Sim::Sim(const std::vector<CollectiveSpec>& specs, const std::vector<Schedule>& schedules,
         const SimOptions& options, SimResult* result)
    : schedules_(schedules), options_(options), result_(result) {
  const std::size_t n = schedules.size();
  next_.assign(n, 0);
  active_.assign(n, 0);
  done_.assign(n, 0);
  hasIssueAction_.assign(n, false);
  *result = SimResult{};
  result->messagesSent.assign(n, 0);
  result->elementsSent.assign(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    Memory m;
    m.layout = bufferLayout(specs[r]);
    const BufferLayout& l = m.layout;
    m.output.assign(l.outputCount, kGarbage);
    m.input.assign(l.outputInInputAt ? std::max(l.inputCount, *l.outputInInputAt + l.outputCount)
                                     : l.inputCount,
                   kGarbage);
    std::vector<std::uint64_t>& in = l.inputInOutputAt ? m.output : m.input;
    const std::uint64_t base = l.inputInOutputAt ? *l.inputInOutputAt : 0;
    for (std::uint64_t j = 0; j < l.inputCount; ++j)
      in[base + j] = inputLabel(static_cast<int>(r), j);
    m.scratch.assign(schedules[r].scratchCount, kGarbage);
    memory_.push_back(std::move(m));
    const Schedule& s = schedules[r];
    state_.emplace_back(s.steps.size(), State::kWaiting);
    pendingDeps_.emplace_back(s.steps.size(), 0);
    dependents_.emplace_back(s.steps.size());
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
      pendingDeps_[r][i] = s.steps[i].depCount;
      for (std::uint32_t d = 0; d < s.steps[i].depCount; ++d)
        dependents_[r][s.deps[s.steps[i].depBegin + d]].push_back(static_cast<StepId>(i));
    }
  }
}

// In order: offers rank r's next step when its dependencies are done and the window has room.
void Sim::refresh(int r) {
  const auto i = static_cast<std::size_t>(r);
  if (!options_.inOrder || hasIssueAction_[i]) return;
  if (next_[i] >= schedules_[i].steps.size() || active_[i] >= options_.window) return;
  const auto id = static_cast<StepId>(next_[i]);
  if (pendingDeps_[i][id] != 0) return;
  hasIssueAction_[i] = true;
  actions_.push_back({Action::kIssue, r, id, {}});
}

void Sim::finish(int r, StepId id) {
  const auto i = static_cast<std::size_t>(r);
  state_[i][id] = State::kDone;
  --active_[i];
  ++done_[i];
  for (StepId d : dependents_[i][id]) {
    if (--pendingDeps_[i][d] == 0 && !options_.inOrder)
      actions_.push_back({Action::kIssue, r, d, {}});
  }
  refresh(r);
}

Status Sim::fail(int r, std::size_t step, const std::string& what) const {
  return Status(ErrorCode::kInternal,
                strFormat("rank %d step %zu: %s\n%s", r, step, what.c_str(),
                          schedules_[static_cast<std::size_t>(r)].toString().c_str()));
}

Status Sim::issue(int r, StepId id) {
  const auto i = static_cast<std::size_t>(r);
  const Step& step = schedules_[i].steps[id];
  if (options_.inOrder) {
    hasIssueAction_[i] = false;
    ++next_[i];
  }
  state_[i][id] = State::kPosted;
  ++active_[i];
  std::string error;
  switch (step.op) {
    case OpCode::kCopy: actions_.push_back({Action::kRunCopy, r, id, {}}); break;
    case OpCode::kSend: {
      memory_[i].at(step.src, &error);
      const Key key{r, step.sendPeer, step.sendIndex};
      sends_[key] = id;
      if (recvs_.count(key) != 0) actions_.push_back({Action::kTransfer, 0, 0, key});
      break;
    }
    case OpCode::kRecv: {
      memory_[i].at(step.dst, &error);
      const Key key{step.recvPeer, r, step.recvIndex};
      recvs_[key] = id;
      if (sends_.count(key) != 0) actions_.push_back({Action::kTransfer, 0, 0, key});
      break;
    }
    default: return fail(r, id, "this test simulator runs send, recv and copy only");
  }
  if (!error.empty()) return fail(r, id, error);
  refresh(r);
  return Status::Ok();
}

Status Sim::runCopy(int r, StepId id) {
  const auto i = static_cast<std::size_t>(r);
  const Step& step = schedules_[i].steps[id];
  std::string error;
  std::uint64_t* dst = memory_[i].at(step.dst, &error);
  const std::uint64_t* src = memory_[i].at(step.src, &error);
  if (!error.empty()) return fail(r, id, error);
  if (step.src.count != step.dst.count) return fail(r, id, "copy of unequal sizes");
  std::copy(src, src + step.dst.count, dst);  // no step may overlap itself partially
  finish(r, id);
  return Status::Ok();
}

Status Sim::transfer(const Key& key) {
  auto [from, to, index] = key;
  const auto f = static_cast<std::size_t>(from);
  const auto t = static_cast<std::size_t>(to);
  const StepId sendId = sends_[key];
  const StepId recvId = recvs_[key];
  const Step& send = schedules_[f].steps[sendId];
  const Step& recv = schedules_[t].steps[recvId];
  if (send.src.count != recv.dst.count)
    return fail(to, recvId,
                strFormat("receives %llu elements, rank %d step %u sends %llu",
                          static_cast<unsigned long long>(recv.dst.count), from, sendId,
                          static_cast<unsigned long long>(send.src.count)));
  std::string error;
  const std::uint64_t* src = memory_[f].at(send.src, &error);
  std::uint64_t* dst = memory_[t].at(recv.dst, &error);
  std::copy(src, src + recv.dst.count, dst);
  result_->messagesSent[f] += 1;
  result_->elementsSent[f] += send.src.count;
  sends_.erase(key);
  recvs_.erase(key);
  finish(from, sendId);
  finish(to, recvId);
  return Status::Ok();
}

std::string Sim::describeStuck() const {
  std::string out;
  for (std::size_t r = 0; r < schedules_.size(); ++r) {
    if (done_[r] == schedules_[r].steps.size()) continue;
    out += strFormat("rank %zu: %zu/%zu done, next %zu, %zu in flight\n", r, done_[r],
                     schedules_[r].steps.size(), next_[r], active_[r]);
  }
  return out;
}

Status Sim::run() {
  for (std::size_t r = 0; r < schedules_.size(); ++r) {
    if (options_.inOrder) {
      refresh(static_cast<int>(r));
      continue;
    }
    for (std::size_t i = 0; i < schedules_[r].steps.size(); ++i) {
      if (pendingDeps_[r][i] == 0)
        actions_.push_back({Action::kIssue, static_cast<int>(r), static_cast<StepId>(i), {}});
    }
  }
  std::mt19937_64 random(options_.seed);
  while (!actions_.empty()) {
    const std::size_t pick =
        std::uniform_int_distribution<std::size_t>(0, actions_.size() - 1)(random);
    const Action action = actions_[pick];
    actions_[pick] = actions_.back();
    actions_.pop_back();
    Status status;
    switch (action.kind) {
      case Action::kIssue: status = issue(action.rank, action.step); break;
      case Action::kRunCopy: status = runCopy(action.rank, action.step); break;
      case Action::kTransfer: status = transfer(action.message); break;
    }
    if (!status.ok()) return status;
  }
  for (std::size_t r = 0; r < schedules_.size(); ++r) {
    if (done_[r] != schedules_[r].steps.size())
      return Status(ErrorCode::kInternal, "deadlock:\n" + describeStuck());
  }
  for (std::size_t r = 0; r < schedules_.size(); ++r) {
    const Memory& m = memory_[r];
    if (m.layout.outputInInputAt) {
      auto begin = m.input.begin() + static_cast<std::ptrdiff_t>(*m.layout.outputInInputAt);
      result_->outputs.emplace_back(begin,
                                    begin + static_cast<std::ptrdiff_t>(m.layout.outputCount));
    } else {
      result_->outputs.push_back(m.output);
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<CollectiveSpec> uniformSpecs(Collective kind, int n, std::uint64_t count,
                                         bool inPlace, DataType dtype, ReduceOp op) {
  std::vector<CollectiveSpec> specs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    CollectiveSpec& s = specs[static_cast<std::size_t>(r)];
    s.kind = kind;
    s.rank = r;
    s.size = n;
    s.count = count;
    s.inPlace = inPlace;
    s.dtype = dtype;
    s.op = op;
  }
  return specs;
}

Status simulateData(const std::vector<CollectiveSpec>& specs,
                    const std::vector<Schedule>& schedules, const SimOptions& options,
                    SimResult* result) {
  Sim sim(specs, schedules, options, result);
  return sim.run();
}

}  // namespace tutti::testing
