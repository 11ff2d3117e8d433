// The hang report with ranks as threads over the real transports: ranks 0 and 1 call an
// all-reduce with a 1 s deadline while rank 2 is elsewhere (not in any call, in a point-to-
// point receive, or arriving after the failure). Every rank's error must say where the
// others were. Rank 2's moves are ordered by the others' progress, and the one deadline that
// expires (1 s) is the one under test; the only assumption is that rank 2, once past the
// warm-up, begins its receive within that second. Last, abort() dumps the flight recorders.

#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <vector>

#include "base/host_props.h"
#include "base/log.h"
#include "common/threads.h"

namespace tutti::test {
namespace {

// Counts ranks that are done; waits are bounded.
class DoneCount {
 public:
  void arrive() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  bool waitFor(int count) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(120), [&] { return count_ >= count; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

std::string expectIn(const Status& s, const std::string& needle) {
  return s.message().find(needle) == std::string::npos
             ? "expected \"" + needle + "\" in: " + s.toString() + "\n"
             : "";
}

// The warm-up barrier (#0) connects everyone; no rank goes on before every rank has left it
// (a rank may leave a barrier before another has), so that the all-reduce's timeout never
// catches a rank still in the barrier.
Status warmUp(Communicator& comm, DoneCount& past) {
  Status s = comm.barrier();
  past.arrive();
  if (s.ok() && !past.waitFor(comm.size()))
    return Status(ErrorCode::kTimeout, "the others never left the barrier");
  return s;
}

// The all-reduce that hangs: #1.
Status hangingAllreduce(Communicator& comm) {
  float x = 1, y = 0;
  CallOptions quick;
  quick.timeout = std::chrono::seconds(1);
  return comm.allreduce(&x, &y, 1, DataType::kFloat32, ReduceOp::kSum, quick);
}

class Hang : public ::testing::TestWithParam<std::string> {};

TEST_P(Hang, ARankOutsideAnyCallIsNamedAsNotReporting) {
  CommOptions options;
  options.transport = GetParam();
  DoneCount done;
  DoneCount past;
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    if (Status s = warmUp(comm, past); !s.ok()) return "barrier: " + s.toString();
    if (rank == 2) {  // busy elsewhere until the others have their errors
      return done.waitFor(2) ? "" : "the others never returned";
    }
    Status s = hangingAllreduce(comm);
    done.arrive();
    if (s.code() != ErrorCode::kTimeout) return "expected a timeout, got " + s.toString();
    std::string out = expectIn(s, "hang report: reached allreduce #1: ranks 0-1 (rank ");
    out += expectIn(s, "; did not report within ");
    out += expectIn(s, " s (stopped, dead, or outside any tutti call): rank 2");
    if (s.peerRank() != 2) out += "blamed rank " + std::to_string(s.peerRank()) + "\n";
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

TEST_P(Hang, ARankInAnotherCallIsNamedWithItsCall) {
  CommOptions options;
  options.transport = GetParam();
  DoneCount past;
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    if (Status s = warmUp(comm, past); !s.ok()) return "barrier: " + s.toString();
    if (rank == 2) {
      // A receive nobody sends to, with a long deadline: the others' timeout ends it. (It
      // begins well within their 1 s; if it did not, it would be refused as late.)
      std::int32_t in[4];
      CallOptions patient;
      patient.timeout = std::chrono::seconds(120);
      Status s = comm.recv(in, 4, DataType::kInt32, 0, /*tag=*/7, patient);
      if (s.code() != ErrorCode::kTimeout) return "expected the relayed timeout, got " + s.toString();
      std::string out = expectIn(s, "hang report: in recv from rank 0 (tag 7, count 4 int32): rank 2");
      out += expectIn(s, "; in allreduce #1 (count 1 float32 sum, ");
      out += expectIn(s, "): ranks 0-1 (rank 0: ");
      return out;
    }
    Status s = hangingAllreduce(comm);
    if (s.code() != ErrorCode::kTimeout) return "expected a timeout, got " + s.toString();
    std::string out = expectIn(s, "hang report: reached allreduce #1: ranks 0-1");
    out += expectIn(s, "; in recv from rank 0 (tag 7, count 4 int32), not yet at allreduce #1: rank 2 "
                       "(rank 2: 0 of 1 steps done, waiting for data from rank 0 (step 0))");
    if (s.message().find("did not report") != std::string::npos) out += "nobody was missing: " + s.message();
    if (s.peerRank() != 2) out += "blamed rank " + std::to_string(s.peerRank()) + "\n";
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

TEST_P(Hang, ARankArrivingAfterTheFailureIsToldWhereTheOthersWere) {
  CommOptions options;
  options.transport = GetParam();
  DoneCount done;
  DoneCount past;
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    if (Status s = warmUp(comm, past); !s.ok()) return "barrier: " + s.toString();
    if (rank == 2 && !done.waitFor(2)) return "the others never returned";
    Status s = hangingAllreduce(comm);
    if (rank != 2) {
      done.arrive();
      return s.code() == ErrorCode::kTimeout ? "" : "expected a timeout, got " + s.toString();
    }
    // Refused, with the others' posts already in the store.
    if (s.code() != ErrorCode::kTimeout) return "expected the refusal, got " + s.toString();
    std::string out = expectIn(s, "refused: communicator 'world' failed earlier: ");
    out += expectIn(s, "hang report: reached allreduce #1 after the communicator had failed: rank 2; "
                       "reached allreduce #1: ranks 0-1 (rank 0: ");
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

// The report counts the steps of the schedule each rank runs, which shows the ring's
// segments: on one host with more than 2 ranks a segment is a share of a ring (16 slots of
// 32 KiB: 256 KiB where the kernel's copy is costly, else 64 KiB, oneHostRingShare),
// elsewhere TUTTI_SEGMENT_BYTES' 512 KiB. A ring all-reduce of 3 chunks of 320 KiB (under
// the 1 MiB from which ranks on one host first agree on their buffers) has 2n - 1 = 5 steps
// per segment: 10 in two segments or 25 in five over shared memory, 5 in one over TCP. The
// ranks are threads of this process: the host's ratio is this process's.
TEST_P(Hang, TheReportCountsTheRingSegmentsOfTheTransport) {
  CommOptions options;
  options.transport = GetParam();
  DoneCount done;
  DoneCount past;
  const std::size_t count = 3 * (std::size_t{320} << 10) / sizeof(float);
  const std::size_t segment = (std::size_t{512} << 10) / oneHostRingShare(kernelCopyRatio());
  const std::size_t shmSegments = ((std::size_t{320} << 10) + segment - 1) / segment;
  const std::string steps =
      " of " + std::to_string(GetParam() == "shm" ? 5 * shmSegments : 5) + " steps done";
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    if (Status s = warmUp(comm, past); !s.ok()) return "barrier: " + s.toString();
    if (rank == 2) return done.waitFor(2) ? "" : "the others never returned";
    std::vector<float> in(count, 1.0f), out(count);
    CallOptions ring;
    ring.algorithm = "ring";
    ring.timeout = std::chrono::seconds(1);
    Status s = comm.allreduce(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum,
                              ring);
    done.arrive();
    if (s.code() != ErrorCode::kTimeout) return "expected a timeout, got " + s.toString();
    return expectIn(s, "rank " + std::to_string(rank) + ": ") + expectIn(s, steps);
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

// abort() logs the aborting rank's flight recorder, and the peers whose call it ends log
// theirs.
TEST_P(Hang, AbortDumpsTheFlightRecorders) {
  const std::string path = "/tmp/tutti-hang-test." + std::to_string(getpid()) + ".log";
  log::configure("WARN", "ALL", path);
  CommOptions options;
  options.transport = GetParam();
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    Status s = comm.barrier();
    if (rank == 0) {
      if (!s.ok()) return "barrier: " + s.toString();
      comm.abort();
      return "";
    }
    // Rank 0 may leave the barrier, and abort, before this rank has left it.
    float x = 1;
    CallOptions patient;
    patient.timeout = std::chrono::seconds(120);
    if (s.ok()) s = comm.allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum, patient);
    return s.code() == ErrorCode::kAborted ? "" : "expected the abort, got " + s.toString();
  }, options);
  log::configure("WARN", "ALL", "");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  EXPECT_EQ(joinFailures(failures), "");
  EXPECT_NE(text.str().find("flight recorder of communicator 'world' rank 0 (abort()): 1 operations "
                            "so far, the last 1 follow"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("flight recorder 'world' rank 0: op 0: barrier #0 issued "), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("flight recorder of communicator 'world' rank 1 (aborted): "), std::string::npos)
      << text.str();
  EXPECT_TRUE(std::regex_search(text.str(), std::regex("flight recorder 'world' rank 1: op [01]: [^\n]* "
                                                       "failed \\(aborted\\) after ")))
      << text.str();
}

INSTANTIATE_TEST_SUITE_P(Transports, Hang, ::testing::Values("shm", "tcp"),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tutti::test
