// Waiting on a Work runs the communicator's queued calls on the waiting thread when no
// other thread runs them (WorkState::wait, CallQueue::runQueuedUntil): these tests issue
// async calls and wait on them in the ways programs do (the last of many only, from
// threads other than the one that issued them, while the communicator is being destroyed)
// and compare every element of every result with what the calls define. Whether the waiting
// thread or the worker ran a call is up to timing; the results may not depend on it. Ranks
// are threads, over shared memory and over TCP.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "common/threads.h"
#include "tutti/communicator.h"
#include "tutti/deadline.h"

namespace tutti {
namespace {

using test::joinFailures;

constexpr auto kI32 = DataType::kInt32;

// What rank r contributes to element i of call k.
std::int32_t value(int r, int k, std::size_t i) {
  return static_cast<std::int32_t>(r * 100003 + k * 7919 + static_cast<int>(i) * 3 - 77);
}

std::string compare(const std::vector<std::int32_t>& got, const std::vector<std::int32_t>& want,
                    const std::string& what) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      return strFormat("%s: element %zu is %d, expected %d\n", what.c_str(), i, got[i], want[i]);
  return "";
}

// Parameter: "transport/progress" (CommOptions::asyncProgress: the worker takes every call
// at once, or leaves it to waits for a grace period).
class WorkWait : public ::testing::TestWithParam<std::string> {
 protected:
  CommOptions options() const {
    CommOptions o;
    const std::string& p = GetParam();
    o.transport = p.substr(0, p.find('/'));
    o.asyncProgress = p.substr(p.find('/') + 1);
    o.timeout = std::chrono::seconds(60);  // a regression fails, it does not hang CI
    return o;
  }
};

// One async call of a mix (all-reduce, broadcast, all-gather, a ring of point-to-point
// pairs), with its buffers and what they must hold once it has completed.
struct Call {
  std::string what;
  std::vector<std::int32_t> in, out, want;
  std::vector<Work> works;
};

void issue(Communicator& comm, int k, std::size_t count, Call& c) {
  const int n = comm.size(), r = comm.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  c.in.resize(count);
  for (std::size_t i = 0; i < count; ++i) c.in[i] = value(r, k, i);
  c.want.assign(count * static_cast<std::size_t>(k % 4 == 2 ? n : 1), 0);
  c.out.assign(c.want.size(), -1);
  switch (k % 4) {
    case 0:
      c.what = strFormat("allreduce %d", k);
      for (std::size_t i = 0; i < count; ++i)
        for (int q = 0; q < n; ++q) c.want[i] += value(q, k, i);
      c.works.push_back(
          comm.allreduceAsync(c.in.data(), c.out.data(), count, kI32, ReduceOp::kSum));
      break;
    case 1: {
      const int root = k % n;
      c.what = strFormat("broadcast %d from %d", k, root);
      for (std::size_t i = 0; i < count; ++i) c.want[i] = value(root, k, i);
      if (r == root) c.out = c.in;
      c.works.push_back(comm.broadcastAsync(c.out.data(), c.out.data(), count, kI32, root));
      break;
    }
    case 2:
      c.what = strFormat("allgather %d", k);
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < count; ++i)
          c.want[static_cast<std::size_t>(q) * count + i] = value(q, k, i);
      c.works.push_back(comm.allgatherAsync(c.in.data(), c.out.data(), count, kI32));
      break;
    default:
      // Receive from the left before sending to the right: run one at a time, every
      // receive would wait for a send queued behind its peer's own receive.
      c.what = strFormat("ring of sends %d", k);
      for (std::size_t i = 0; i < count; ++i) c.want[i] = value(prev, k, i);
      c.works.push_back(comm.recvAsync(c.out.data(), count, kI32, prev, k));
      c.works.push_back(comm.sendAsync(c.in.data(), count, kI32, next, k));
      break;
  }
}

std::string check(Call& c) {
  for (Work& w : c.works) {
    Status s = w.wait();
    if (!s.ok()) return c.what + ": " + s.toString() + "\n";
  }
  return compare(c.out, c.want, c.what);
}

// Many calls queued, only the last waited for: it runs every call before it, in issue
// order, so all of them have completed when it has.
TEST_P(WorkWait, WaitingOnTheLastOfManyCallsCompletesAllOfThemInOrder) {
  auto failures = test::runRanks(
      3,
      [](int, Communicator& comm) -> std::string {
        std::string out;
        for (std::size_t count : {std::size_t{1}, std::size_t{700}, std::size_t{70001}}) {
          std::vector<Call> calls(13);  // the last, 12, is an all-reduce
          for (int k = 0; k < static_cast<int>(calls.size()); ++k)
            issue(comm, k, count, calls[static_cast<std::size_t>(k)]);
          Status last = calls.back().works.back().wait();
          if (!last.ok()) return "last call: " + last.toString();
          for (Call& c : calls)
            for (Work& w : c.works)
              if (!w.test()) out += c.what + ": not complete once a later call was\n";
          for (Call& c : calls) out += check(c);
        }
        return out;
      },
      options());
  EXPECT_EQ(joinFailures(failures), "");
}

// The thread that issued the calls is not the one that waits: three threads wait on the
// calls from the last to the first, each on every third, all at once.
TEST_P(WorkWait, ThreadsThatDidNotIssueTheCallsWaitOnThem) {
  auto failures = test::runRanks(
      3,
      [](int, Communicator& comm) -> std::string {
        std::string out;
        for (int round = 0; round < 5; ++round) {
          std::vector<Call> calls(12);
          for (int k = 0; k < static_cast<int>(calls.size()); ++k)
            issue(comm, k + round * 12, 300 + static_cast<std::size_t>(round) * 1000,
                  calls[static_cast<std::size_t>(k)]);
          std::vector<std::string> found(3);
          std::vector<std::thread> waiters;
          for (std::size_t t = 0; t < 3; ++t)
            waiters.emplace_back([&, t] {
              for (std::size_t k = calls.size() - 1 - t; k < calls.size(); k -= 3)
                found[t] += check(calls[k]);
            });
          for (std::thread& w : waiters) w.join();
          for (const std::string& f : found) out += f;
        }
        return out;
      },
      options());
  EXPECT_EQ(joinFailures(failures), "");
}

// Every rank receives from the left on one thread and only then, on another, sends to the
// right: a thread running the receive while it waits must take in the send
// issued after it began (as the worker does), or every rank waits for a send that nobody
// starts.
TEST_P(WorkWait, AWaitedReceiveTakesInASendIssuedAfterTheWaitBegan) {
  CommOptions opts = options();
  opts.timeout = std::chrono::seconds(20);
  auto failures = test::runRanks(
      3,
      [](int rank, Communicator& comm) -> std::string {
        const int n = comm.size(), next = (rank + 1) % n, prev = (rank + n - 1) % n;
        constexpr std::size_t kCount = 3000;
        std::string out;
        for (int round = 0; round < 5; ++round) {
          std::vector<std::int32_t> in(kCount, -1), mine(kCount), want(kCount);
          for (std::size_t i = 0; i < kCount; ++i) {
            mine[i] = value(rank, round, i);
            want[i] = value(prev, round, i);
          }
          // The waiting thread issues the receive and waits at once, so that it, not the
          // worker, often runs it.
          std::atomic<bool> waiting{false};
          Status received;
          std::thread waiter([&] {
            Work r = comm.recvAsync(in.data(), kCount, kI32, prev, round);
            waiting.store(true);
            received = r.wait();
          });
          while (!waiting.load()) std::this_thread::yield();
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          Status sent = comm.sendAsync(mine.data(), kCount, kI32, next, round).wait();
          waiter.join();
          if (!sent.ok()) return "send: " + sent.toString();
          if (!received.ok()) return "receive: " + received.toString();
          out += compare(in, want, strFormat("round %d's receive", round));
        }
        return out;
      },
      opts);
  EXPECT_EQ(joinFailures(failures), "");
}

// Rank 0 destroys its communicator while another of its threads waits on its all-reduce,
// which rank 1 joins only later: the destruction waits for the call to end (its deadline
// bounds it), the wait returns its result, and nothing touches the communicator after. The
// thread that waits issues the call and waits at once, as a program does, so that it often
// runs the call itself while the destruction begins; a few rounds, each with new
// communicators.
TEST_P(WorkWait, ACommunicatorDestroyedWhileAThreadWaitsOnItsCall) {
  constexpr std::size_t kCount = 4099;
  const CommOptions opts = options();
  for (int round = 0; round < 4; ++round) {
    auto store = makeMemoryStore();
    std::vector<std::string> failures(2);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        std::string& out = failures[static_cast<std::size_t>(r)];
        auto created = Communicator::create(store, r, 2, opts);
        if (!created.ok()) {
          out = "create: " + created.status().toString();
          return;
        }
        std::optional<Communicator> comm(std::move(created).value());
        std::vector<std::int32_t> in(kCount), got(kCount, -1), want(kCount);
        for (std::size_t i = 0; i < kCount; ++i) {
          in[i] = value(r, round, i);
          want[i] = value(0, round, i) + value(1, round, i);
        }
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          Status s = comm->allreduce(in.data(), got.data(), kCount, kI32, ReduceOp::kSum);
          out = s.ok() ? compare(got, want, "rank 1's all-reduce") : s.toString();
          return;
        }
        Work w;
        std::atomic<bool> issued{false};
        Status waited;
        std::thread waiter([&] {
          w = comm->allreduceAsync(in.data(), got.data(), kCount, kI32, ReduceOp::kSum);
          issued.store(true);
          waited = w.wait();
        });
        while (!issued.load()) std::this_thread::yield();
        comm.reset();
        waiter.join();
        out = waited.ok() ? compare(got, want, "rank 0's async all-reduce") : waited.toString();
        if (!w.test()) out += "the Work is not complete after its wait\n";
      });
    }
    for (std::thread& t : ranks) t.join();
    EXPECT_EQ(joinFailures(failures), "") << "round " << round;
  }
}

// Calls nobody waits on: every rank issues a mix of them and polls test() (which never runs
// a call, but asks the worker to start them) until all have completed, so the worker must
// take them. A bound of 60 s turns a worker that never takes them into a failure, not a
// hang.
TEST_P(WorkWait, CallsNobodyWaitsOnCompleteInTheBackground) {
  auto failures = test::runRanks(
      3,
      [](int, Communicator& comm) -> std::string {
        std::string out;
        for (std::size_t count : {std::size_t{5}, std::size_t{20000}}) {
          std::vector<Call> calls(8);
          for (int k = 0; k < static_cast<int>(calls.size()); ++k)
            issue(comm, k, count, calls[static_cast<std::size_t>(k)]);
          const Deadline bound = Deadline::afterSeconds(60);
          for (Call& c : calls)
            for (Work& w : c.works)
              while (!w.test() && !bound.expired())
                std::this_thread::sleep_for(std::chrono::microseconds(200));
          // Waited for even then: the calls must not outlive their buffers.
          if (bound.expired()) out += "calls nobody waited on did not complete in 60 s\n";
          for (Call& c : calls) out += check(c);
        }
        return out;
      },
      options());
  EXPECT_EQ(joinFailures(failures), "");
}

// After a quiet spell (a worker deferring to waits sleeps after 100 ms without a call, until
// a call wakes it) a call nobody waits on still completes; and a wait with a deadline,
// which never runs a call itself, gets its call run.
TEST_P(WorkWait, CallsAfterAQuietSpellCompleteUnwaitedAndWithADeadline) {
  auto failures = test::runRanks(
      2,
      [](int, Communicator& comm) -> std::string {
        std::string out;
        for (int round = 0; round < 2; ++round) {
          Call first;
          issue(comm, 4 * round, 100, first);  // an all-reduce: starts the worker
          out += check(first);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          Call unwaited;
          issue(comm, 4 * round + 1, 100, unwaited);  // a broadcast
          const Deadline bound = Deadline::afterSeconds(60);
          while (!unwaited.works[0].test() && !bound.expired())
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          if (bound.expired()) out += "a call after a quiet spell did not complete in 60 s\n";
          out += check(unwaited);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          Call timed;
          issue(comm, 4 * round + 2, 100, timed);  // an all-gather
          Status s = timed.works[0].wait(Deadline::afterSeconds(60));
          if (!s.ok()) out += "a wait with a deadline: " + s.toString() + "\n";
          out += check(timed);
        }
        return out;
      },
      options());
  EXPECT_EQ(joinFailures(failures), "");
}

// A call its rank neither waits on nor tests: rank 0 issues an all-reduce and then only
// sleeps, so its worker must run it (with asyncProgress "wait", once its grace has passed);
// rank 1's blocking all-reduce completes only then. Once right after the communicator's
// first call, once after a quiet spell (a worker deferring to waits is asleep then, until
// a call wakes it). Rank 0 waits on its call in the end either way, so a failure cannot
// leave it running.
TEST_P(WorkWait, ACallNobodyTouchesRunsOnTheWorker) {
  for (const bool quiet : {false, true}) {
    std::atomic<bool> peerDone{false};
    auto failures = test::runRanks(
        2,
        [&](int rank, Communicator& comm) -> std::string {
          constexpr std::size_t kCount = 1000;
          std::string out;
          Call first;
          issue(comm, 0, kCount, first);  // an all-reduce, waited for: starts the worker
          out += check(first);
          if (quiet) std::this_thread::sleep_for(std::chrono::milliseconds(300));
          std::vector<std::int32_t> in(kCount), got(kCount, -1), want(kCount);
          for (std::size_t i = 0; i < kCount; ++i) {
            in[i] = value(rank, 4, i);
            want[i] = value(0, 4, i) + value(1, 4, i);
          }
          if (rank == 1) {
            Status s = comm.allreduce(in.data(), got.data(), kCount, kI32, ReduceOp::kSum);
            peerDone.store(true);
            return out + (s.ok() ? compare(got, want, "rank 1's all-reduce") : s.toString());
          }
          Work w = comm.allreduceAsync(in.data(), got.data(), kCount, kI32, ReduceOp::kSum);
          const Deadline bound = Deadline::afterSeconds(60);
          while (!peerDone.load() && !bound.expired())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          if (!peerDone.load()) out += "rank 1's call did not complete in 60 s\n";
          Status s = w.wait();
          return out + (s.ok() ? compare(got, want, "rank 0's async all-reduce") : s.toString());
        },
        options());
    EXPECT_EQ(joinFailures(failures), "") << (quiet ? "after a quiet spell" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(TransportsAndProgress, WorkWait,
                         ::testing::Values("shm/thread", "shm/wait", "tcp/thread", "tcp/wait"));

// A value other than auto, thread or wait is refused by name.
TEST(WorkWaitOptions, AnUnknownAsyncProgressIsRefusedByName) {
  CommOptions o;
  o.asyncProgress = "sometimes";
  auto made = Communicator::create(makeMemoryStore(), 0, 1, o);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("sometimes"), std::string::npos) << made.status().toString();
  EXPECT_NE(made.status().message().find("asyncProgress"), std::string::npos);
}

}  // namespace
}  // namespace tutti
