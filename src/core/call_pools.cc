// The communicator's pools of per-call objects (issue 4: nothing allocated on the path of
// a call once warm): Work states and the v-collectives' arrays.

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/comm_impl.h"
#include "core/work_state.h"

namespace tutti::detail {

std::shared_ptr<WorkState> CommImpl::newWork() {
  // Enough for a pipeline of async calls in flight; past it, states are allocated and
  // freed as before. They are made a few at a time: the state of the call before is often
  // still held for a moment by the thread that completed it, so a loop of call-and-wait
  // needs two, and the second must not wait for the first time that happens.
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not model the fence below (and refuses to build it): under it,
  // every call gets a state of its own, as before the pool.
  return std::make_shared<WorkState>(workSpinNs_, workQueue_);
#else
  constexpr std::size_t kPooledWork = 64;
  constexpr std::size_t kWorkBatch = 4;
  std::lock_guard<std::mutex> lock(workPoolMutex_);
  for (const std::shared_ptr<WorkState>& w : workPool_) {
    if (w.use_count() != 1) continue;
    // Whoever dropped the last other reference (a Work handle, the worker's request) did
    // so after its last use of the state, with a release decrement this acquires.
    std::atomic_thread_fence(std::memory_order_acquire);
    w->reset();
    return w;
  }
  auto w = std::make_shared<WorkState>(workSpinNs_, workQueue_);
  if (workPool_.size() >= kPooledWork) return w;
  workPool_.push_back(w);
  for (std::size_t i = 1; i < kWorkBatch && workPool_.size() < kPooledWork; ++i)
    workPool_.push_back(std::make_shared<WorkState>(workSpinNs_, workQueue_));
  return w;
#endif
}

std::vector<std::uint64_t> CommImpl::arrayOf(std::span<const std::size_t> values) {
  std::vector<std::uint64_t> out;
  if (values.empty()) return out;
  {
    std::lock_guard<std::mutex> lock(arraysMutex_);
    if (!spareArrays_.empty()) {
      out = std::move(spareArrays_.back());
      spareArrays_.pop_back();
    }
  }
  out.assign(values.begin(), values.end());
  return out;
}

void CommImpl::recycleArrays(OpRequest& request) {
  // An alltoallv holds four; a few calls' worth queued covers the async pipelines too.
  constexpr std::size_t kSpareArrays = 16;
  CollectiveSpec& s = request.spec;
  // Every call but the v-collectives' has none: no lock taken for them.
  if (s.counts.capacity() == 0 && s.displs.capacity() == 0 && s.recvCounts.capacity() == 0 &&
      s.recvDispls.capacity() == 0)
    return;
  std::lock_guard<std::mutex> lock(arraysMutex_);
  for (std::vector<std::uint64_t>* v : {&s.counts, &s.displs, &s.recvCounts, &s.recvDispls}) {
    if (v->capacity() == 0 || spareArrays_.size() >= kSpareArrays) continue;
    v->clear();
    spareArrays_.push_back(std::move(*v));
    v->clear();
  }
}

}  // namespace tutti::detail
