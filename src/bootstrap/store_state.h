#pragma once
// StoreState: the TCP store server's keys and values, and the requests parked on keys that
// are not set yet (GET, WAIT) with their deadlines. It owns no connection: the server
// (tcp_store_server.cc) hands it each request and delivers the replies it gives back, now
// or, for a parked request, later (takeAnswers).
//
// Parked waiters are indexed by the first key they still miss; setting that key re-checks
// them and either answers them or re-indexes them under their next missing key, so a set
// touches only the waiters that care about it. Each waiter with a timeout is also in an
// ordered timer set; the server sleeps until the earliest (nextDeadline) and expire()
// answers TIMEOUT with the keys still missing.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bootstrap/store_protocol.h"
#include "tutti/deadline.h"

namespace tutti::detail {

class StoreState {
 public:
  /// The reply to a request parked earlier, for the client that made it.
  struct Answer {
    std::uint64_t clientId = 0;
    std::uint64_t waiterId = 0;
    storeproto::Message reply;
  };

  /// Executes request `m` of client `clientId`: its reply, or nullopt when it was parked
  /// (`*waiterId` names it; its answer comes through takeAnswers()). A SET or ADD may
  /// answer parked requests of other clients.
  std::optional<storeproto::Message> serve(std::uint64_t clientId, storeproto::Message&& m,
                                           std::uint64_t* waiterId);
  /// Answers TIMEOUT to every parked request whose deadline has passed.
  void expire();
  /// Forgets the parked request `waiterId` (its client left).
  void cancel(std::uint64_t waiterId);
  /// Forgets every parked request (the server stops).
  void cancelAll();
  /// The earliest deadline of a parked request; never when none has one.
  Deadline nextDeadline() const;
  /// The answers to parked requests given since the last call, in the order given.
  std::vector<Answer> takeAnswers() { return std::exchange(answers_, {}); }

 private:
  struct Waiter {
    std::uint64_t clientId = 0;
    std::uint32_t requestId = 0;
    storeproto::Opcode opcode = storeproto::Opcode::kGet;
    std::vector<std::string> keys;  // GET: its one key
    Deadline deadline = Deadline::never();
    bool indexed = false;  // listed under indexedKey in waitersByKey_
    std::string indexedKey;
  };

  // Parks a GET/WAIT whose keys are not all set; returns its id.
  std::uint64_t park(std::uint64_t clientId, storeproto::Message&& m);
  // Lists waiter `id` under the first key of `w` not set yet; false when all are set.
  bool index(std::uint64_t id, Waiter& w);
  // Answers or re-indexes the waiters listed under `key`, which was just set.
  void wakeWaiters(const std::string& key);
  // Answers a parked request (its value/OK, or TIMEOUT with the keys still missing).
  void finishWaiter(std::uint64_t waiterId, bool timedOut);
  // Unlists a waiter from every index and returns it.
  Waiter removeWaiter(std::uint64_t waiterId);

  std::uint64_t nextWaiterId_ = 1;
  std::unordered_map<std::string, std::vector<std::uint8_t>> values_;
  std::unordered_map<std::uint64_t, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<std::uint64_t>> waitersByKey_;
  std::set<std::pair<Deadline::Clock::time_point, std::uint64_t>> timers_;
  std::vector<Answer> answers_;
};

}  // namespace tutti::detail
