#pragma once
// SparePool: finished unexpected-message records kept with their buffers, so that a warm
// link buffers an early message without allocating or faulting in fresh pages (issue 4:
// nothing allocated on the path of a call). `Record` has a std::vector<char> `data` and is
// otherwise reset to a default-constructed one when taken again.
//
// How many messages arrive before their receives, and so how many buffers a link holds at
// once, is a matter of timing; the pool grows to the most it ever needed and stays there.
// Each growth (a record, a larger buffer, a longer list) is marked (base/pool_growth.h).

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/pool_growth.h"

namespace tutti {

/// Appends `value` to `queue` (a link's list of early messages), marking its growth.
template <typename Queue, typename Value>
void pushEarly(Queue& queue, Value value) {
  if (queue.size() == queue.capacity()) {
    GrowingPool growing;
    queue.push_back(std::move(value));
  } else {
    queue.push_back(std::move(value));
  }
}

template <typename Record>
class SparePool {
 public:
  /// The spare record with the smallest buffer that holds `bytes`, else any (its buffer
  /// grows), else a new one; every field reset but its buffer, which holds at least
  /// `bytes` bytes (the caller keeps the message's length). A buffer never shrinks: its
  /// size is the most it ever held, so every page of it has been touched, and growing it
  /// is the only time it faults pages in.
  std::unique_ptr<Record> take(std::uint64_t bytes) {
    std::unique_ptr<Record> record = takeAny(bytes);
    if (record->data.size() < bytes) {
      GrowingPool growing;
      record->data.resize(bytes);
    }
    return record;
  }

  /// Keeps `record` while the spare buffers stay within `budget` bytes (the link's cap on
  /// unexpected bytes: what it may hold buffered at once anyway); else frees it.
  void give(std::unique_ptr<Record> record, std::uint64_t budget) {
    if (bytes_ + record->data.size() > budget) return;
    bytes_ += record->data.size();
    if (spare_.size() == spare_.capacity()) {
      GrowingPool growing;
      spare_.push_back(std::move(record));
    } else {
      spare_.push_back(std::move(record));
    }
  }

 private:
  std::unique_ptr<Record> takeAny(std::uint64_t bytes) {
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it) {
      const std::size_t held = (*it)->data.size();
      if (held >= bytes && (best == spare_.end() || held < (*best)->data.size())) best = it;
    }
    if (best == spare_.end() && !spare_.empty()) best = spare_.begin();
    if (best == spare_.end()) {
      GrowingPool growing;
      return std::make_unique<Record>();
    }
    std::unique_ptr<Record> record = std::move(*best);
    *best = std::move(spare_.back());
    spare_.pop_back();
    bytes_ -= record->data.size();
    std::vector<char> keep = std::move(record->data);
    *record = Record{};
    record->data = std::move(keep);
    return record;
  }

  std::vector<std::unique_ptr<Record>> spare_;
  std::uint64_t bytes_ = 0;
};

}  // namespace tutti
