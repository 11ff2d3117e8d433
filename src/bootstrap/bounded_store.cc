#include "bootstrap/bounded_store.h"

namespace tutti::detail {

Status setBefore(Store& store, const std::string& key, const std::vector<std::uint8_t>& value,
                 Deadline deadline) {
  if (auto* bounded = dynamic_cast<BoundedSetStore*>(&store))
    return bounded->setBefore(key, value, deadline);
  return store.set(key, value);
}

}  // namespace tutti::detail
