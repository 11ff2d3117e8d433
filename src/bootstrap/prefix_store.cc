// PrefixStore: a namespace inside another store, so that several communicators (or several
// jobs' tests) share one store without their keys colliding. It adds no locking of its own:
// it is thread-safe because the base store is.

#include <string>
#include <utility>
#include <vector>

#include "base/assert.h"
#include "base/macros.h"
#include "bootstrap/bounded_store.h"
#include "bootstrap/store_checks.h"
#include "tutti/store.h"

namespace tutti {
namespace {

class PrefixStore final : public Store, public detail::BoundedStore {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : prefix_(std::move(prefix) + "/"), base_(std::move(base)) {
    TUTTI_ASSERT(base_ != nullptr);
  }

  Status set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    TUTTI_ASSIGN_OR_RETURN(std::string full, prefixed(key));
    return base_->set(full, value);
  }

  Status setBefore(const std::string& key, const std::vector<std::uint8_t>& value,
                   Deadline deadline) override {
    TUTTI_ASSIGN_OR_RETURN(std::string full, prefixed(key));
    return detail::setBefore(*base_, full, value, deadline);
  }

  Result<std::vector<std::uint8_t>> get(const std::string& key, Deadline deadline) override {
    TUTTI_ASSIGN_OR_RETURN(std::string full, prefixed(key));
    return base_->get(full, deadline);
  }

  Result<std::int64_t> add(const std::string& key, std::int64_t delta) override {
    TUTTI_ASSIGN_OR_RETURN(std::string full, prefixed(key));
    return base_->add(full, delta);
  }

  Result<std::int64_t> addBefore(const std::string& key, std::int64_t delta,
                                 Deadline deadline) override {
    TUTTI_ASSIGN_OR_RETURN(std::string full, prefixed(key));
    return detail::addBefore(*base_, full, delta, deadline);
  }

  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    // Check the count before building a prefixed copy of a possibly huge list.
    TUTTI_RETURN_IF_ERROR(detail::checkWaitKeys(keys));
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string& key : keys) {
      TUTTI_ASSIGN_OR_RETURN(std::string one, prefixed(key));
      full.push_back(std::move(one));
    }
    return base_->wait(full, deadline);
  }

 private:
  // The key as the base store sees it; the bound applies to the prefixed key, which is
  // what the base stores (and what crosses the wire for a TCP base).
  Result<std::string> prefixed(const std::string& key) const {
    std::string full = prefix_ + key;
    TUTTI_RETURN_IF_ERROR(detail::checkKey(full));
    return full;
  }

  const std::string prefix_;
  const std::shared_ptr<Store> base_;
};

}  // namespace

std::shared_ptr<Store> makePrefixStore(std::string prefix, std::shared_ptr<Store> base) {
  return std::make_shared<PrefixStore>(std::move(prefix), std::move(base));
}

}  // namespace tutti
