// The flight recorder: what it keeps (the ring wraps, newest last), how records read back
// and print, a snapshot taken while the writer keeps writing (run it under TSan), and the
// process-wide SIGUSR1 machinery: the dump thread answers the signal, leaves a user's
// handler alone, and leaks neither threads nor descriptors across create/destroy cycles.

#include "core/flight_recorder.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/log.h"

namespace tutti::detail {
namespace {

using Clock = FlightRecorder::Clock;

CallSummary allreduce(std::uint64_t seq, std::uint64_t count) {
  CallSummary c;
  c.kind = Collective::kAllReduce;
  c.dtype = DataType::kFloat32;
  c.op = ReduceOp::kSum;
  c.seq = seq;
  c.count = count;
  c.algorithm = "ring";
  return c;
}

TEST(DescribeCall, NamesEveryKindOfCall) {
  EXPECT_EQ(describeCall(allreduce(12, 1000)), "allreduce #12 (count 1000 float32 sum, ring)");
  CallSummary barrier;
  barrier.kind = Collective::kBarrier;
  barrier.seq = 4;
  EXPECT_EQ(describeCall(barrier), "barrier #4");
  CallSummary send;
  send.kind = Collective::kSend;
  send.peer = 2;
  send.tag = 5;
  send.count = 8;
  send.dtype = DataType::kUint8;
  EXPECT_EQ(describeCall(send), "send to rank 2 (tag 5, count 8 uint8)");
  CallSummary bcast = allreduce(3, 16);
  bcast.kind = Collective::kBroadcast;
  bcast.root = 1;
  bcast.algorithm = "binomial";
  EXPECT_EQ(describeCall(bcast), "broadcast #3 (count 16 float32 root 1, binomial)");
  CallSummary gatherv = allreduce(7, 0);
  gatherv.kind = Collective::kGatherV;
  gatherv.perRankCounts = true;
  gatherv.root = 2;
  gatherv.algorithm = "direct";
  EXPECT_EQ(describeCall(gatherv), "gatherv #7 (per-rank counts float32 root 2, direct)");
  // With the hash a stamp carries, as errors name this rank's call beside a peer's.
  EXPECT_EQ(describeCall(gatherv, 0xabcdefULL),
            "gatherv #7 (per-rank counts hashing to 0x0000000000abcdef float32 root 2, direct)");
}

TEST(FlightRecorder, RecordsOperationsInOrderWithTheirOutcome) {
  FlightRecorder recorder("world", 3, 8);
  const Clock::time_point t0 = Clock::now();
  auto a = recorder.begin(allreduce(0, 1024), t0);
  recorder.end(a, ErrorCode::kOk);
  CallSummary recv;
  recv.kind = Collective::kRecv;
  recv.peer = 1;
  recv.tag = 9;
  recv.count = 4;
  recv.dtype = DataType::kInt32;
  recv.seq = 1;
  auto b = recorder.begin(recv, t0);
  recorder.end(b, ErrorCode::kTimeout);
  recorder.begin(allreduce(1, 2), t0);  // still running
  EXPECT_EQ(recorder.recorded(), 3u);

  const auto entries = recorder.snapshot();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].op, 0u);
  EXPECT_EQ(entries[0].outcome, FlightRecorder::Outcome::kOk);
  EXPECT_EQ(entries[0].call.count, 1024u);
  EXPECT_EQ(entries[1].op, 1u);
  EXPECT_EQ(entries[1].outcome, FlightRecorder::Outcome::kFailed);
  EXPECT_EQ(entries[1].code, ErrorCode::kTimeout);
  EXPECT_EQ(entries[1].call.peer, 1);
  EXPECT_EQ(entries[1].call.tag, 9);
  EXPECT_EQ(entries[2].outcome, FlightRecorder::Outcome::kRunning);
  EXPECT_EQ(entries[2].issued, t0);

  const Clock::time_point later = t0 + std::chrono::milliseconds(12345);
  EXPECT_EQ(FlightRecorder::formatEntry(entries[0], later),
            "op 0: allreduce #0 (count 1024 float32 sum, ring) issued 12.345 s ago, ok");
  EXPECT_NE(FlightRecorder::formatEntry(entries[1], later)
                .find("op 1: recv from rank 1 (tag 9, count 4 int32) issued 12.345 s ago, failed (timeout) after "),
            std::string::npos);
  EXPECT_EQ(FlightRecorder::formatEntry(entries[2], later),
            "op 2: allreduce #1 (count 2 float32 sum, ring) issued 12.345 s ago, running");
}

TEST(FlightRecorder, RingKeepsTheNewestOperations) {
  FlightRecorder recorder("world", 0, 4);
  for (std::uint64_t i = 0; i < 10; ++i)
    recorder.end(recorder.begin(allreduce(i, i * 10), Clock::now()), ErrorCode::kOk);
  EXPECT_EQ(recorder.recorded(), 10u);
  const auto entries = recorder.snapshot();
  ASSERT_EQ(entries.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(entries[i].op, 6 + i);
    EXPECT_EQ(entries[i].call.seq, 6 + i);
    EXPECT_EQ(entries[i].call.count, (6 + i) * 10);
  }
}

TEST(FlightRecorder, CapacityZeroRecordsNothing) {
  FlightRecorder recorder("world", 0, 0);
  recorder.end(recorder.begin(allreduce(0, 1), Clock::now()), ErrorCode::kOk);
  EXPECT_EQ(recorder.recorded(), 0u);
  EXPECT_TRUE(recorder.snapshot().empty());
}

// Every field of operation i is a function of i, so a torn read shows as a record whose
// fields disagree. The reader must never see one, whatever the interleaving.
TEST(FlightRecorder, SnapshotsWhileTheWriterWritesAreNeverTorn) {
  constexpr std::uint64_t kOps = 100000;
  FlightRecorder recorder("world", 0, 16);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t i = 0; i < kOps; ++i) {
      CallSummary c = allreduce(i, i * 3 + 1);
      c.root = static_cast<int>(i % 1000);
      c.kind = i % 2 == 0 ? Collective::kBroadcast : Collective::kReduce;
      auto h = recorder.begin(c, Clock::time_point(std::chrono::nanoseconds(i)));
      recorder.end(h, i % 3 == 0 ? ErrorCode::kOk : ErrorCode::kTimeout);
    }
    done.store(true, std::memory_order_release);
  });
  std::uint64_t checked = 0;
  std::string bad;
  while (!done.load(std::memory_order_acquire) && bad.empty()) {
    std::uint64_t previous = 0;
    bool first = true;
    for (const auto& e : recorder.snapshot()) {
      const std::uint64_t i = e.op;
      const bool consistent =
          e.call.seq == i && e.call.count == i * 3 + 1 && e.call.root == static_cast<int>(i % 1000) &&
          e.call.kind == (i % 2 == 0 ? Collective::kBroadcast : Collective::kReduce) &&
          e.issued == Clock::time_point(std::chrono::nanoseconds(i)) &&
          (e.outcome == FlightRecorder::Outcome::kRunning ||
           e.code == (i % 3 == 0 ? ErrorCode::kOk : ErrorCode::kTimeout));
      if (!consistent || (!first && i <= previous)) {
        bad = "torn or out-of-order record for op " + std::to_string(i);
        break;
      }
      previous = i;
      first = false;
      ++checked;
    }
  }
  writer.join();
  EXPECT_EQ(bad, "");
  EXPECT_EQ(recorder.recorded(), kOps);
  const auto last = recorder.snapshot();
  ASSERT_EQ(last.size(), 16u);
  EXPECT_EQ(last.back().op, kOps - 1);
  (void)checked;  // how many records the race exercised varies with scheduling
}

// Captures tutti's log in a file for the scope's duration.
class LogCapture {
 public:
  LogCapture() : path_("/tmp/tutti-flight-recorder-test." + std::to_string(getpid()) + ".log") {
    log::configure("WARN", "ALL", path_);
  }
  ~LogCapture() {
    log::configure("WARN", "ALL", "");
    std::remove(path_.c_str());
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
};

int countOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(FlightRecorder, DumpLogsAHeaderAndTheNewestRecords) {
  LogCapture capture;
  FlightRecorder recorder("grid", 5, 8);
  for (std::uint64_t i = 0; i < 6; ++i)
    recorder.end(recorder.begin(allreduce(i, 1), Clock::now()), ErrorCode::kOk);
  recorder.dump("test", 4);
  const std::string text = capture.text();
  EXPECT_NE(text.find("flight recorder of communicator 'grid' rank 5 (test): 6 operations so far, "
                      "the last 4 follow"),
            std::string::npos)
      << text;
  EXPECT_EQ(countOccurrences(text, "flight recorder 'grid' rank 5: op "), 4) << text;
  EXPECT_NE(text.find("op 5: allreduce #5"), std::string::npos) << text;
  EXPECT_EQ(text.find("op 1: allreduce #1"), std::string::npos) << text;
}

int entriesIn(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    closedir(d);
  }
  return n;
}

// This process's thread count once it is down to `expected`, or after 5 s. The kernel
// wakes pthread_join before it removes the exiting thread from /proc/self/task, so a thread
// just joined can still be listed for a moment; a leaked one stays past the wait.
int threadsSettledTo(int expected) {
  const Deadline deadline = Deadline::afterSeconds(5);
  int n = entriesIn("/proc/self/task");
  while (n > expected && !deadline.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = entriesIn("/proc/self/task");
  }
  return n;
}

TEST(LiveRecorders, SigusrDumpsEveryLiveRecorderAndNothingLeaks) {
  LogCapture capture;
  FlightRecorder a("alpha", 0, 4);
  FlightRecorder b("beta", 1, 4);
  a.begin(allreduce(0, 1), Clock::now());
  // The first cycle creates the handler's eventfd, which lives as long as the process.
  addLiveRecorder(&a, true);
  removeLiveRecorder(&a);
  const int threads = entriesIn("/proc/self/task");
  const int fds = entriesIn("/proc/self/fd");
  for (int i = 0; i < 20; ++i) {
    addLiveRecorder(&a, true);
    addLiveRecorder(&b, true);
    removeLiveRecorder(&b);
    removeLiveRecorder(&a);
  }
  EXPECT_EQ(threadsSettledTo(threads), threads);
  EXPECT_EQ(entriesIn("/proc/self/fd"), fds);

  addLiveRecorder(&a, true);
  addLiveRecorder(&b, true);
  EXPECT_TRUE(flightRecorderSignalHandlerInstalled());
  ASSERT_EQ(::raise(SIGUSR1), 0);
  EXPECT_TRUE(waitForSignalDumps(1, Deadline::afterSeconds(60)));
  removeLiveRecorder(&b);
  removeLiveRecorder(&a);
  const std::string text = capture.text();
  EXPECT_NE(text.find("flight recorder of communicator 'alpha' rank 0 (SIGUSR1)"), std::string::npos) << text;
  EXPECT_NE(text.find("flight recorder 'alpha' rank 0: op 0: allreduce #0 (count 1 float32 sum, ring) "
                      "issued "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("flight recorder of communicator 'beta' rank 1 (SIGUSR1)"), std::string::npos) << text;
  EXPECT_EQ(threadsSettledTo(threads), threads);
}

std::atomic<int> gUserSignals{0};
void userHandler(int) { gUserSignals.fetch_add(1); }

TEST(LiveRecorders, AUsersSigusrHandlerIsLeftAlone) {
  struct sigaction user {};
  struct sigaction previous {};
  user.sa_handler = &userHandler;
  sigemptyset(&user.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &user, &previous), 0);
  FlightRecorder a("alpha", 0, 4);
  addLiveRecorder(&a, true);
  EXPECT_FALSE(flightRecorderSignalHandlerInstalled());
  ASSERT_EQ(::raise(SIGUSR1), 0);  // runs the handler on this thread before raise returns
  EXPECT_EQ(gUserSignals.load(), 1);
  removeLiveRecorder(&a);
  ASSERT_EQ(::sigaction(SIGUSR1, &previous, nullptr), 0);
}

}  // namespace
}  // namespace tutti::detail
