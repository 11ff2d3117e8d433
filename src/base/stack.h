#pragma once
// Touching a thread's stack ahead of need (issue 4: no page fault on the path of a call).
//
// A thread's stack is mapped at its full size but its pages arrive on first touch, so the
// first time a call takes a deeper path than any before (a reduction run by the transport's
// thread rather than the caller's, say), it faults a page in, at a moment that timing
// decides. The library's own threads touch a generous depth of their stacks when they
// start, and a communicator's creation touches the creating thread's.

#include <alloca.h>

#include <cstddef>
#include <future>
#include <thread>
#include <utility>

namespace tutti {

/// Depth touched: far more than any of the library's paths uses, far less than a thread's
/// default stack (8 MiB).
inline constexpr std::size_t kPrefaultStackBytes = 256 << 10;

/// Touches the `bytes` of stack below the caller's frame, one write per page.
__attribute__((noinline)) inline void prefaultStack(std::size_t bytes = kPrefaultStackBytes) {
  auto* p = static_cast<volatile char*>(alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 0;
  p[bytes - 1] = 0;
}

/// Starts a library thread running `body` and returns once it runs, its stack touched
/// (prefaultStack): a thread whose first run came later would fault its stack in then, in
/// the middle of whatever call is running at that moment.
template <typename Body>
std::thread startPrefaultedThread(Body body) {
  std::promise<void> started;
  std::future<void> running = started.get_future();
  std::thread thread([started = std::move(started), body = std::move(body)]() mutable {
    prefaultStack();
    started.set_value();
    body();
  });
  running.wait();
  return thread;
}

}  // namespace tutti
