#include "bootstrap/store_state.h"

#include <algorithm>

#include "base/assert.h"
#include "bootstrap/store_checks.h"

namespace tutti::detail {

using storeproto::Message;
using storeproto::Opcode;

std::optional<Message> StoreState::serve(std::uint64_t clientId, Message&& m,
                                         std::uint64_t* waiterId) {
  switch (m.opcode) {
    case Opcode::kSet: {
      values_[m.key] = std::move(m.value);
      Message reply = Message::ok(m.requestId);
      wakeWaiters(m.key);
      return reply;
    }
    case Opcode::kGet: {
      auto it = values_.find(m.key);
      if (it == values_.end()) break;
      return Message::valueReply(m.requestId, it->second);
    }
    case Opcode::kAdd: {
      // In place, as in MemoryStore: only a present key can fail, and it is left unchanged.
      auto [it, inserted] = values_.try_emplace(m.key);
      Result<std::int64_t> sum = addDecimal(m.key, &it->second, !inserted, m.integer);
      if (!sum.ok())
        return Message::errorReply(m.requestId, sum.status().code(), sum.status().message());
      Message reply = Message::intReply(m.requestId, *sum);
      wakeWaiters(m.key);
      return reply;
    }
    case Opcode::kWait:
      if (std::all_of(m.keys.begin(), m.keys.end(),
                      [&](const std::string& key) { return values_.count(key) != 0; }))
        return Message::ok(m.requestId);
      break;
    default:
      // The server admits requests only.
      TUTTI_ASSERT(storeproto::isRequest(m.opcode));
      return std::nullopt;
  }
  *waiterId = park(clientId, std::move(m));
  return std::nullopt;
}

std::uint64_t StoreState::park(std::uint64_t clientId, Message&& m) {
  std::uint64_t id = nextWaiterId_++;
  Waiter w;
  w.clientId = clientId;
  w.requestId = m.requestId;
  w.opcode = m.opcode;
  if (m.opcode == Opcode::kGet)
    w.keys.push_back(std::move(m.key));
  else
    w.keys = std::move(m.keys);
  if (m.timeoutMs != storeproto::kNoTimeout) {
    w.deadline = Deadline::after(std::chrono::milliseconds(m.timeoutMs));
    timers_.emplace(w.deadline.at(), id);
  }
  const bool missing = index(id, w);
  TUTTI_ASSERT(missing);  // serve() parks only requests with a missing key
  waiters_.emplace(id, std::move(w));
  return id;
}

bool StoreState::index(std::uint64_t id, Waiter& w) {
  w.indexed = false;
  for (const std::string& key : w.keys) {
    if (values_.count(key) != 0) continue;
    w.indexed = true;
    w.indexedKey = key;
    waitersByKey_[key].push_back(id);
    break;
  }
  return w.indexed;
}

void StoreState::wakeWaiters(const std::string& key) {
  auto it = waitersByKey_.find(key);
  if (it == waitersByKey_.end()) return;
  std::vector<std::uint64_t> ids = std::move(it->second);
  waitersByKey_.erase(it);
  for (std::uint64_t id : ids) {
    auto w = waiters_.find(id);
    TUTTI_ASSERT(w != waiters_.end());  // removal always unlists a waiter
    if (!index(id, w->second)) finishWaiter(id, false);
  }
}

StoreState::Waiter StoreState::removeWaiter(std::uint64_t waiterId) {
  auto it = waiters_.find(waiterId);
  TUTTI_ASSERT(it != waiters_.end());
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  if (w.indexed) {
    auto list = waitersByKey_.find(w.indexedKey);
    TUTTI_ASSERT(list != waitersByKey_.end());
    std::erase(list->second, waiterId);
    if (list->second.empty()) waitersByKey_.erase(list);
  }
  if (!w.deadline.isNever()) timers_.erase({w.deadline.at(), waiterId});
  return w;
}

void StoreState::finishWaiter(std::uint64_t waiterId, bool timedOut) {
  Waiter w = removeWaiter(waiterId);
  Answer answer{w.clientId, waiterId, Message::ok(w.requestId)};
  if (timedOut) {
    std::vector<std::string> missing;
    for (std::string& key : w.keys)
      if (values_.count(key) == 0) missing.push_back(std::move(key));
    answer.reply = Message::timeoutReply(w.requestId, std::move(missing));
  } else if (w.opcode == Opcode::kGet) {
    answer.reply = Message::valueReply(w.requestId, values_.at(w.keys[0]));
  }
  answers_.push_back(std::move(answer));
}

void StoreState::expire() {
  auto now = Deadline::Clock::now();
  while (!timers_.empty() && timers_.begin()->first <= now)
    finishWaiter(timers_.begin()->second, true);
}

void StoreState::cancel(std::uint64_t waiterId) { (void)removeWaiter(waiterId); }

void StoreState::cancelAll() {
  waiters_.clear();
  waitersByKey_.clear();
  timers_.clear();
}

Deadline StoreState::nextDeadline() const {
  if (timers_.empty()) return Deadline::never();
  return Deadline::after(timers_.begin()->first - Deadline::Clock::now());
}

}  // namespace tutti::detail
