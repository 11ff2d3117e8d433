#pragma once
// Store::set() takes no deadline (store.h: a user's store decides how long a set may take),
// but the hang report (core/hang_report.h) must post to the store within a few seconds even
// when the store is unreachable, typically because the rank serving it is stopped. Stores
// of this layer that can block on a set (the TCP client, and a prefix view of a store) also
// implement BoundedSetStore; setBefore() uses it when the store does.

#include <cstdint>
#include <string>
#include <vector>

#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::detail {

/// A store whose set() can be bounded by a deadline.
class BoundedSetStore {
 public:
  /// Store::set(), returning kTimeout once `deadline` passes without an answer.
  virtual Status setBefore(const std::string& key, const std::vector<std::uint8_t>& value,
                           Deadline deadline) = 0;

 protected:
  ~BoundedSetStore() = default;
};

/// `store.set(key, value)`, bounded by `deadline` when the store implements BoundedSetStore.
/// Other stores are called as they are: the in-memory store never blocks, and a user's
/// store is trusted to return from set() in its own time.
Status setBefore(Store& store, const std::string& key, const std::vector<std::uint8_t>& value,
                 Deadline deadline);

}  // namespace tutti::detail
