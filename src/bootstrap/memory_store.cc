// MemoryStore: the Store held in this process's memory (tests, ranks that are threads).
// One mutex guards the map; one condition variable is notified on every change, and each
// waiter re-checks its own keys. Waiters are few (one per rank thread), so waking them all
// on each set is cheaper than per-key bookkeeping.

#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/store_checks.h"
#include "tutti/store.h"

namespace tutti {
namespace {

class MemoryStore final : public Store {
 public:
  Status set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    TUTTI_RETURN_IF_ERROR(detail::checkKey(key));
    TUTTI_RETURN_IF_ERROR(detail::checkValue(value));
    {
      std::lock_guard<std::mutex> lock(mu_);
      values_[key] = value;
    }
    changed_.notify_all();
    return Status::Ok();
  }

  Result<std::vector<std::uint8_t>> get(const std::string& key, Deadline deadline) override {
    TUTTI_RETURN_IF_ERROR(detail::checkKey(key));
    std::unique_lock<std::mutex> lock(mu_);
    if (!waitUntil(lock, deadline, [&] { return values_.count(key) != 0; }))
      return Status(ErrorCode::kTimeout,
                    strFormat("timed out waiting for store key '%s' (still missing)", key.c_str()));
    return values_.at(key);
  }

  Result<std::int64_t> add(const std::string& key, std::int64_t delta) override {
    TUTTI_RETURN_IF_ERROR(detail::checkKey(key));
    Result<std::int64_t> sum = Status(ErrorCode::kInternal, "unset");
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = values_.find(key);
      bool present = it != values_.end();
      std::vector<std::uint8_t> stored = present ? it->second : std::vector<std::uint8_t>{};
      sum = detail::addDecimal(key, &stored, present, delta);
      if (!sum.ok()) return sum;
      values_[key] = std::move(stored);
    }
    changed_.notify_all();
    return sum;
  }

  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    TUTTI_RETURN_IF_ERROR(detail::checkWaitKeys(keys));
    std::unique_lock<std::mutex> lock(mu_);
    auto allSet = [&] {
      for (const std::string& key : keys)
        if (values_.count(key) == 0) return false;
      return true;
    };
    if (waitUntil(lock, deadline, allSet)) return Status::Ok();
    std::vector<std::string> missing;
    for (const std::string& key : keys)
      if (values_.count(key) == 0) missing.push_back(key);
    return Status(ErrorCode::kTimeout,
                  strFormat("timed out waiting for store keys; still missing %zu of %zu: %s",
                            missing.size(), keys.size(), detail::describeKeys(missing).c_str()));
  }

 private:
  // Waits until `ready()` holds or `deadline` passes; returns ready(). A never deadline
  // waits on the condition variable without a time, since time_point::max would overflow
  // the conversion to the clock the condition variable sleeps on.
  template <typename Pred>
  bool waitUntil(std::unique_lock<std::mutex>& lock, Deadline deadline, Pred ready) {
    if (deadline.isNever()) {
      changed_.wait(lock, ready);
      return true;
    }
    return changed_.wait_until(lock, deadline.at(), ready);
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::unordered_map<std::string, std::vector<std::uint8_t>> values_;
};

}  // namespace

std::shared_ptr<Store> makeMemoryStore() { return std::make_shared<MemoryStore>(); }

}  // namespace tutti
