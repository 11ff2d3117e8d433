#pragma once
// Store::set() and add() take no deadline (store.h: a user's store decides how long they may
// take), but the hang report (core/hang_report.h) must post to the store within a few
// seconds even when the store is unreachable, typically because the rank serving it is
// stopped, and communicator creation must fail by its deadline when the store is gone.
// Stores of this layer that can block on a set or an add (the TCP client, and a prefix view
// of a store) also implement BoundedStore; setBefore() and addBefore() use it when the
// store does.

#include <cstdint>
#include <string>
#include <vector>

#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::detail {

/// A store whose set() and add() can be bounded by a deadline.
class BoundedStore {
 public:
  /// Store::set(), returning kTimeout once `deadline` passes without an answer.
  virtual Status setBefore(const std::string& key, const std::vector<std::uint8_t>& value,
                           Deadline deadline) = 0;
  /// Store::add(), returning kTimeout once `deadline` passes without an answer.
  virtual Result<std::int64_t> addBefore(const std::string& key, std::int64_t delta,
                                         Deadline deadline) = 0;

 protected:
  ~BoundedStore() = default;
};

/// `store.set(key, value)`, bounded by `deadline` when the store implements BoundedStore.
/// Other stores are called as they are: the in-memory store never blocks, and a user's
/// store is trusted to return from set() in its own time.
Status setBefore(Store& store, const std::string& key, const std::vector<std::uint8_t>& value,
                 Deadline deadline);

/// `store.add(key, delta)`, bounded by `deadline` when the store implements BoundedStore
/// (called as it is otherwise, like setBefore()).
Result<std::int64_t> addBefore(Store& store, const std::string& key, std::int64_t delta,
                               Deadline deadline);

}  // namespace tutti::detail
