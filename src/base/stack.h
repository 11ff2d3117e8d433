#pragma once
// Touching a thread's stack ahead of need (issue 4: no page fault on the path of a call).
//
// A thread's stack is mapped at its full size but its pages arrive on first touch, so the
// first time a call takes a deeper path than any before (a reduction run by the transport's
// thread rather than the caller's, say), it faults a page in, at a moment that timing
// decides. The library's own threads touch a generous depth of their stacks when they
// start, and a communicator's creation touches the creating thread's.
//
// The same goes for a library thread's first steps (its body's code and data touched for
// the first time): on a loaded machine the scheduler may run them well into the caller's
// next calls. So the thread that starts one waits until it is about to wait for the first
// time (threadSettled()).

#include <alloca.h>

#include <cstddef>
#include <future>
#include <thread>
#include <utility>

namespace tutti {

namespace detail {
// The promise a library thread fulfils when it first waits; null on other threads and after.
inline thread_local std::promise<void>* tSettled = nullptr;
}  // namespace detail

/// Called by a library thread's body just before it first waits (for work, a socket, a
/// signal), and harmless before every wait: the thread that started it goes on. Does
/// nothing on other threads.
inline void threadSettled() {
  std::promise<void>* settled = detail::tSettled;
  if (settled == nullptr) return;
  detail::tSettled = nullptr;
  settled->set_value();
}

/// Depth touched: far more than any of the library's paths uses, far less than a thread's
/// default stack (8 MiB).
inline constexpr std::size_t kPrefaultStackBytes = 256 << 10;

/// Touches the `bytes` of stack below the caller's frame, one write per page.
__attribute__((noinline)) inline void prefaultStack(std::size_t bytes = kPrefaultStackBytes) {
  auto* p = static_cast<volatile char*>(alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 0;
  p[bytes - 1] = 0;
}

/// Starts a library thread running `body` and returns once its stack is touched
/// (prefaultStack) and `body` has reached its first wait: a thread whose first steps came
/// later would fault their pages in then, in the middle of whatever call is running at
/// that moment. `body` must call threadSettled() before it first waits, and must not need
/// anything the caller holds to get there.
template <typename Body>
std::thread startPrefaultedThread(Body body) {
  std::promise<void> settled;
  std::future<void> running = settled.get_future();
  std::thread thread([settled = std::move(settled), body = std::move(body)]() mutable {
    detail::tSettled = &settled;
    prefaultStack();
    body();
    threadSettled();  // a body that ended without waiting
  });
  running.wait();
  return thread;
}

}  // namespace tutti
