#pragma once
// The simulator's matching of messages with receives (simulate.cc): every message a simulated
// rank is sent waits here for its receive, or every posted receive for its message, keyed by
// (receiver, sender, message index), in an open-addressing table (a node per entry, as
// std::unordered_map has, would cost an allocation per message of a 65,536-rank run).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tutti::tuning {

// A receive waiting for its message, or a message waiting for its receive.
struct MessageKey {
  std::uint32_t receiver;  // slot
  std::uint32_t sender;    // rank
  std::uint32_t index;
  friend bool operator==(const MessageKey&, const MessageKey&) = default;
};
struct MessageKeyHash {
  std::size_t operator()(const MessageKey& k) const {
    std::uint64_t h = (static_cast<std::uint64_t>(k.receiver) << 32) ^ k.sender;
    h ^= static_cast<std::uint64_t>(k.index) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};
struct Pending {
  double arrival = -1;         // the message's arrival (its first byte), once sent
  double last = 0;             // ... and its last byte's
  double posted = 0;           // when the receive is posted (its CPU work done)
  std::int32_t step = -1;      // the receive's step, once posted
  std::uint32_t elements = 0;  // what was sent, or what the receive expects
};

// The messages and receives waiting for each other: open addressing with linear probing
// (a node per entry, as std::unordered_map has, costs an allocation per message).
class PendingTable {
 public:
  PendingTable() { slots_.resize(1024); }
  // The place of `key`'s entry, created empty if there is none (valid until the next call).
  std::size_t find(const MessageKey& key) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = MessageKeyHash{}(key) & (slots_.size() - 1);
    while (slots_[i].used) {
      if (slots_[i].key == key) return i;
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i].used = true;
    slots_[i].key = key;
    slots_[i].value = Pending{};
    ++used_;
    return i;
  }
  Pending& operator[](std::size_t place) { return slots_[place].value; }
  // Removes the entry at `place`, moving later ones of its run back.
  void erase(std::size_t place) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t hole = place;
    slots_[hole].used = false;
    --used_;
    for (std::size_t i = (hole + 1) & mask; slots_[i].used; i = (i + 1) & mask) {
      const std::size_t home = MessageKeyHash{}(slots_[i].key) & mask;
      // Move the entry into the hole unless its home lies cyclically in (hole, i].
      const bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
      if (stays) continue;
      slots_[hole] = slots_[i];
      slots_[i].used = false;
      hole = i;
    }
  }

 private:
  struct Slot {
    MessageKey key{};
    bool used = false;
    Pending value;
  };
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    used_ = 0;
    for (const Slot& slot : old)
      if (slot.used) slots_[find(slot.key)].value = slot.value;
  }
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace tutti::tuning
