// ExecutorPool (executor.h): the memory runs reuse, grown on first need.

#include <memory>

#include "base/pool_growth.h"
#include "executor/executor.h"
#include "executor/slot.h"

namespace tutti {

ExecutorPool::ExecutorPool() = default;
ExecutorPool::~ExecutorPool() = default;

void ExecutorPool::reserve(std::size_t slots, std::size_t stagingBytes) {
  if (stagingBytes > stagingBytes_) {
    for (auto& s : slots_) s->staging.resize(stagingBytes);
    stagingBytes_ = stagingBytes;
  }
  while (slots_.size() < slots) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->staging.resize(stagingBytes_);
  }
}


TransferRequest* ExecutorPool::probes(std::size_t ranks) {
  if (probeCount_ < ranks) {
    GrowingPool growing;  // once per pool, on the first call that waits this long
    probes_ = std::make_unique<TransferRequest[]>(ranks);
    probeCount_ = ranks;
  }
  return probes_.get();
}

}  // namespace tutti
