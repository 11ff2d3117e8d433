// Composition of schedules (compose.h): concatenation renumbers messages and sequences the
// phases, and a reduce-scatter phase followed by an all-gather phase, each built by hand
// and joined with concatenate(), verifies as an all-reduce.

#include "schedule/compose.h"

#include <gtest/gtest.h>

#include "algorithms/partition.h"
#include "schedule/verifier.h"

namespace tutti {
namespace {

TEST(Concatenate, RenumbersMessagesAndSequencesPhases) {
  ScheduleBuilder a(0, 3);
  StepId s0 = a.send(1, {BufferKind::kInput, 0, 2});
  a.recv(2, {BufferKind::kOutput, 0, 2});
  a.send(1, {BufferKind::kInput, 2, 2}, {s0});
  a.reserveScratch(5);
  Schedule first = std::move(a).build();

  ScheduleBuilder b(0, 3);
  StepId t0 = b.send(1, {BufferKind::kOutput, 0, 2});
  b.recv(2, {BufferKind::kOutput, 2, 2}, {t0});
  b.recv(1, {BufferKind::kScratch, 0, 8});
  b.reserveScratch(8);
  Schedule second = std::move(b).build();

  Schedule joined = concatenate(first, second);
  // Two sinks in the first phase and two roots in the second meet through a join (step 3).
  ASSERT_EQ(joined.steps.size(), 7u);
  EXPECT_EQ(joined.scratchCount, 8u);
  // Messages continue per peer after the first phase's.
  EXPECT_EQ(joined.steps[4].sendIndex, 2u);  // third message to rank 1
  EXPECT_EQ(joined.steps[5].recvIndex, 1u);  // second message from rank 2
  EXPECT_EQ(joined.steps[6].recvIndex, 0u);  // first message from rank 1
  auto depsOf = [&](StepId id) {
    const Step& s = joined.steps[id];
    return std::vector<StepId>(joined.deps.begin() + s.depBegin,
                               joined.deps.begin() + s.depBegin + s.depCount);
  };
  // The join depends on the first phase's sinks (steps 1 and 2; 0 has a dependent), the
  // second phase's roots on the join; its own dependencies move with it.
  EXPECT_EQ(joined.steps[3].op, OpCode::kCopy);
  EXPECT_EQ(joined.steps[3].dst.count, 0u);
  EXPECT_EQ(depsOf(3), (std::vector<StepId>{1, 2}));
  EXPECT_EQ(depsOf(4), (std::vector<StepId>{3}));
  EXPECT_EQ(depsOf(5), (std::vector<StepId>{4}));
  EXPECT_EQ(depsOf(6), (std::vector<StepId>{3}));
  EXPECT_EQ(depsOf(2), (std::vector<StepId>{0}));
}

TEST(Compose, OffsetAndRemapTouchOnlyTheirBuffer) {
  ScheduleBuilder b(0, 2);
  b.copy({BufferKind::kInput, 1, 2}, {BufferKind::kOutput, 3, 2});
  b.send(1, {BufferKind::kScratch, 4, 1});
  Schedule s = std::move(b).build();
  offsetRegions(s, BufferKind::kOutput, 10);
  EXPECT_EQ(s.steps[0].src.offset, 1u);
  EXPECT_EQ(s.steps[0].dst.offset, 13u);
  remapBuffer(s, BufferKind::kScratch, BufferKind::kOutput);
  EXPECT_EQ(s.steps[1].src.buffer, BufferKind::kOutput);
  EXPECT_EQ(s.steps[1].src.offset, 4u);
  EXPECT_EQ(s.steps[0].src.buffer, BufferKind::kInput);
}

Region chunk(BufferKind kind, std::uint64_t count, int n, int c) {
  const auto parts = static_cast<std::uint64_t>(n);
  const auto index = static_cast<std::uint64_t>(((c % n) + n) % n);
  return {kind, partOffset(count, parts, index), partCount(count, parts, index)};
}

// Ring reduce-scatter: rank r ends with chunk r + 1 complete (and finalized) in its output.
Schedule reduceScatterPhase(int r, int n, std::uint64_t count) {
  ScheduleBuilder b(r, n);
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  b.send(next, chunk(BufferKind::kInput, count, n, r));
  for (int t = 1; t < n; ++t) {
    const Region in = chunk(BufferKind::kInput, count, n, r - t);
    const Region out = chunk(BufferKind::kOutput, count, n, r - t);
    if (t < n - 1)
      b.recvReduceSend(prev, next, in, out);
    else
      b.setFinalize(b.recvReduce(prev, in, out));
  }
  return std::move(b).build();
}

// Ring all-gather of the chunks that the reduce-scatter completed.
Schedule allGatherPhase(int r, int n, std::uint64_t count) {
  ScheduleBuilder b(r, n);
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  b.send(next, chunk(BufferKind::kOutput, count, n, r + 1));
  for (int t = 1; t < n; ++t) {
    const Region out = chunk(BufferKind::kOutput, count, n, r + 1 - t);
    if (t < n - 1)
      b.recvCopySend(prev, next, out);
    else
      b.recv(prev, out);
  }
  return std::move(b).build();
}

TEST(Compose, ReduceScatterThenAllGatherVerifiesAsAllreduce) {
  for (int n : {2, 3, 4, 7, 16}) {
    for (std::uint64_t count : {static_cast<std::uint64_t>(n), std::uint64_t{101}}) {
      std::vector<CollectiveSpec> specs;
      std::vector<Schedule> all;
      for (int r = 0; r < n; ++r) {
        CollectiveSpec s;
        s.rank = r;
        s.size = n;
        s.count = count;
        specs.push_back(s);
        all.push_back(concatenate(reduceScatterPhase(r, n, count), allGatherPhase(r, n, count)));
      }
      VerifyStats stats;
      Status st = verifySchedules(specs, all, {}, &stats);
      ASSERT_TRUE(st.ok()) << st.toString();
      EXPECT_EQ(stats.criticalPathMessages, 2u * static_cast<std::uint64_t>(n - 1));
      // The phases alone are not all-reduces: the gather phase sends data nobody wrote.
      std::vector<Schedule> gatherOnly;
      for (int r = 0; r < n; ++r) gatherOnly.push_back(allGatherPhase(r, n, count));
      EXPECT_FALSE(verifySchedules(specs, gatherOnly).ok());
    }
  }
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

TEST(Concatenate, ManySinksAndRootsMeetThroughOneJoin) {
  // 10 independent sends then 10 independent receives: 20 dependencies through a join,
  // not 100 (the phases would otherwise cost sinks x roots).
  ScheduleBuilder a(0, 2), b(0, 2);
  for (int i = 0; i < 10; ++i) a.send(1, {BufferKind::kInput, static_cast<std::uint64_t>(i), 1});
  for (int i = 0; i < 10; ++i) b.recv(1, {BufferKind::kOutput, static_cast<std::uint64_t>(i), 1});
  Schedule joined = concatenate(std::move(a).build(), std::move(b).build());
  ASSERT_EQ(joined.steps.size(), 21u);
  EXPECT_EQ(joined.deps.size(), 20u);
  const Step& join = joined.steps[10];
  EXPECT_EQ(join.op, OpCode::kCopy);
  EXPECT_EQ(join.dst.count, 0u);
  EXPECT_EQ(join.depCount, 10u);
  for (std::size_t i = 11; i < joined.steps.size(); ++i) {
    ASSERT_EQ(joined.steps[i].depCount, 1u);
    EXPECT_EQ(joined.deps[joined.steps[i].depBegin], 10u);
    EXPECT_EQ(joined.steps[i].recvIndex, i - 11);  // numbering continues per peer
  }
}

}  // namespace
}  // namespace tutti
