// tuttiCommAbort from one thread while another thread of the same rank is blocked in a call
// on the same handle (tutti.h allows it): the blocked call must return tuttiAborted, and
// the handle must be freed only after it has returned (under the asan preset, a call
// returning into a freed handle is a use-after-free report). Ranks are threads here; the
// handles wrap communicators made over the in-memory store, as tuttiCommInit* would.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "base/strings.h"
#include "capi/handles.h"
#include "common/threads.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// Returns once a call on another thread holds the handle (its shared lock on inUse), or
// false when `deadline` passes first. try_lock() succeeds only while no call holds it.
bool waitUntilInCall(tuttiComm* handle, Deadline deadline) {
  while (handle->inUse.try_lock()) {
    handle->inUse.unlock();
    if (deadline.expired()) return false;
    std::this_thread::yield();
  }
  return true;
}

class AbortRace : public ::testing::TestWithParam<std::string> {};

TEST_P(AbortRace, AbortFromAnotherThreadFreesTheHandleAfterTheBlockedCallReturns) {
  CommOptions options;
  options.transport = GetParam();
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    auto* handle = new tuttiComm(std::move(comm));
    if (tuttiSetTimeout(handle, 120) != tuttiSuccess) return "tuttiSetTimeout failed";
    if (rank == 0) {
      // Waits in a barrier rank 1 never enters, until rank 1's abort reaches it.
      tuttiResult_t r = tuttiBarrier(handle);
      std::string last = tuttiCommGetLastError(handle);
      tuttiCommDestroy(handle);
      if (r != tuttiAborted || last.find("aborted by rank 1") == std::string::npos)
        return strFormat("rank 0's barrier: %s (%s)", tuttiGetErrorString(r), last.c_str());
      return "";
    }
    float value = 0;
    tuttiResult_t blocked = tuttiSuccess;
    std::thread caller([&] { blocked = tuttiRecv(&value, 1, tuttiFloat, 0, handle); });
    const bool inCall = waitUntilInCall(handle, Deadline::afterSeconds(60));
    // Frees the handle; the caller's tuttiRecv must have returned by then.
    tuttiResult_t aborted = tuttiCommAbort(handle);
    caller.join();
    if (!inCall) return "the receiving thread never entered its call";
    if (aborted != tuttiSuccess) return strFormat("tuttiCommAbort: %s", tuttiGetErrorString(aborted));
    if (blocked != tuttiAborted)
      return strFormat("the blocked receive gave %s", tuttiGetErrorString(blocked));
    return "";
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, AbortRace, ::testing::Values("shm", "tcp"),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tutti::test
