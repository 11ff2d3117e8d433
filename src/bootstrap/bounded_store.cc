#include "bootstrap/bounded_store.h"

namespace tutti::detail {

Status setBefore(Store& store, const std::string& key, const std::vector<std::uint8_t>& value,
                 Deadline deadline) {
  if (auto* bounded = dynamic_cast<BoundedStore*>(&store))
    return bounded->setBefore(key, value, deadline);
  return store.set(key, value);
}

Result<std::int64_t> addBefore(Store& store, const std::string& key, std::int64_t delta,
                               Deadline deadline) {
  if (auto* bounded = dynamic_cast<BoundedStore*>(&store))
    return bounded->addBefore(key, delta, deadline);
  return store.add(key, delta);
}

}  // namespace tutti::detail
