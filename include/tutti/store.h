#pragma once
/// \file
/// Store: the key-value rendezvous through which ranks find each other. tutti-run serves a
/// TCP store; tests use an in-memory one; users may bring their own by implementing this
/// interface. All methods are thread-safe and every blocking call takes a deadline.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tutti/deadline.h"
#include "tutti/export.h"
#include "tutti/status.h"

namespace tutti {

class TUTTI_API Store {
 public:
  /// Bounds every implementation enforces (and the TCP protocol validates).
  static constexpr std::size_t kMaxKeyBytes = 4096;
  static constexpr std::size_t kMaxValueBytes = 64u << 20;
  static constexpr std::size_t kMaxKeysPerWait = 65536;

  virtual ~Store();

  /// Sets `key` to `value`, replacing any previous value; wakes waiters on that key.
  /// kInvalidArgument when the key or value exceeds its bound.
  virtual Status set(const std::string& key, const std::vector<std::uint8_t>& value) = 0;

  /// Returns the value of `key`, blocking until it is set or `deadline` passes (kTimeout
  /// naming the key). A key already set is returned even when the deadline has passed.
  virtual Result<std::vector<std::uint8_t>> get(const std::string& key, Deadline deadline) = 0;

  /// Atomically adds `delta` to the integer stored at `key` (absent counts as 0) and returns
  /// the new value. The value is stored as decimal text. kInvalidArgument, leaving the value
  /// unchanged, when the stored value is not a decimal integer or the sum would overflow.
  virtual Result<std::int64_t> add(const std::string& key, std::int64_t delta) = 0;

  /// Blocks until every key in `keys` is set, or `deadline` passes (kTimeout naming the
  /// keys still missing).
  virtual Status wait(const std::vector<std::string>& keys, Deadline deadline) = 0;
};

/// A store held in this process's memory; for tests and for ranks that are threads.
TUTTI_API std::shared_ptr<Store> makeMemoryStore();

/// A view of `base` in which every key is prefixed with `prefix` + "/". The key bound
/// applies to the prefixed key. `base` must not be null.
TUTTI_API std::shared_ptr<Store> makePrefixStore(std::string prefix, std::shared_ptr<Store> base);

}  // namespace tutti
