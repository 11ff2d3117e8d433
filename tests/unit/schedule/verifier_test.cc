// The schedule verifier: the existing algorithms verify over many shapes, and each class
// of bug, planted in a hand-built or mutated schedule, is rejected with a message that
// names the rank and step at fault.

#include "schedule/verifier.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "base/strings.h"

namespace tutti {
namespace {

constexpr std::uint64_t kLargeSegment = std::uint64_t{1} << 40;

std::vector<CollectiveSpec> makeSpecs(Collective kind, int n, std::uint64_t count,
                                      bool inPlace = false, std::uint64_t segment = kLargeSegment) {
  std::vector<CollectiveSpec> specs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    CollectiveSpec& s = specs[static_cast<std::size_t>(r)];
    s.kind = kind;
    s.rank = r;
    s.size = n;
    s.count = count;
    s.inPlace = inPlace;
    s.segmentCount = segment;
    s.op = ReduceOp::kAvg;
  }
  return specs;
}

std::vector<Schedule> buildAll(Schedule (*build)(const CollectiveSpec&),
                               const std::vector<CollectiveSpec>& specs) {
  std::vector<Schedule> all;
  for (const CollectiveSpec& s : specs) all.push_back(build(s));
  return all;
}

// A copy of `s` without step `id`: later steps move down one, dependencies on it vanish.
Schedule dropStep(const Schedule& s, StepId id) {
  Schedule out = s;
  out.steps.clear();
  out.deps.clear();
  for (StepId i = 0; i < s.steps.size(); ++i) {
    if (i == id) continue;
    Step step = s.steps[i];
    step.depBegin = static_cast<std::uint32_t>(out.deps.size());
    step.depCount = 0;
    for (std::uint32_t d = 0; d < s.steps[i].depCount; ++d) {
      StepId on = s.deps[s.steps[i].depBegin + d];
      if (on == id) continue;
      out.deps.push_back(on > id ? on - 1 : on);
      ++step.depCount;
    }
    out.steps.push_back(step);
  }
  return out;
}

// The first step of `s` with op `op` (and, when given, from/to peer).
StepId findStep(const Schedule& s, OpCode op, std::size_t skip = 0) {
  for (StepId i = 0; i < s.steps.size(); ++i) {
    if (s.steps[i].op == op && skip-- == 0) return i;
  }
  ADD_FAILURE() << "no " << opCodeName(op) << " in\n" << s.toString();
  return 0;
}

void expectRejected(const Status& status, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(status.ok()) << "accepted a broken schedule";
  EXPECT_EQ(status.code(), ErrorCode::kInternal) << status.toString();
  for (const std::string& f : fragments)
    EXPECT_NE(status.message().find(f), std::string::npos)
        << "expected \"" << f << "\" in: " << status.message();
}

std::vector<int> worlds() {
  std::vector<int> w;
  for (int n = 1; n <= 17; ++n) w.push_back(n);
  w.push_back(64);
  w.push_back(1024);
  return w;
}

std::vector<std::uint64_t> countsFor(int n) {
  const auto u = static_cast<std::uint64_t>(n);
  if (n == 1024) return {0, 1, u - 1, u + 1};  // every rank at work costs 2M steps already
  return {0, 1, u - 1, u + 1, 10007};
}

// --- The algorithms that exist verify ----------------------------------------------------

TEST(VerifyRing, AllreduceForManyShapes) {
  for (int n : worlds()) {
    for (std::uint64_t count : countsFor(n)) {
      for (bool inPlace : {false, true}) {
        for (std::uint64_t segment : {std::uint64_t{1}, std::uint64_t{7}, kLargeSegment}) {
          // Segments of one element multiply the steps by the count: small counts only;
          // and at 1,024 ranks one shape per count.
          if (segment == 1 && count > static_cast<std::uint64_t>(n) + 1) continue;
          if (n == 1024 && (segment != kLargeSegment || inPlace != (count == 1023))) continue;
          auto specs = makeSpecs(Collective::kAllReduce, n, count, inPlace, segment);
          auto all = buildAll(buildAllreduceRing, specs);
          VerifyStats stats;
          Status st = verifySchedules(specs, all, {}, &stats);
          ASSERT_TRUE(st.ok()) << st.toString();
          if (n > 1 && count >= static_cast<std::uint64_t>(n)) {
            EXPECT_EQ(stats.criticalPathMessages, 2u * static_cast<std::uint64_t>(n - 1));
          }
        }
      }
    }
  }
}

TEST(VerifyRing, StatsMatchTheDocumentedCost) {
  auto specs = makeSpecs(Collective::kAllReduce, 4, 8);
  VerifyStats stats;
  ASSERT_TRUE(verifySchedules(specs, buildAll(buildAllreduceRing, specs), {}, &stats).ok());
  EXPECT_EQ(stats.messages, 4u * 6u);  // 2(n-1) messages per rank
  EXPECT_EQ(stats.maxMessagesSentByRank, 6u);
  EXPECT_EQ(stats.maxElementsSentByRank, 12u);  // 2(n-1) chunks of 8/n elements
  EXPECT_EQ(stats.criticalPathMessages, 6u);
}

TEST(VerifyBarrier, DisseminationForManyWorlds) {
  for (int n : worlds()) {
    auto specs = makeSpecs(Collective::kBarrier, n, 0);
    VerifyStats stats;
    Status st = verifySchedules(specs, buildAll(buildBarrierDissemination, specs), {}, &stats);
    ASSERT_TRUE(st.ok()) << st.toString();
    std::uint64_t rounds = 0;
    for (int d = 1; d < n; d *= 2) ++rounds;
    EXPECT_EQ(stats.criticalPathMessages, rounds) << n;
  }
}

// The old dissemination barrier: round k's send waits for round k-1's receive only. What
// round k-2's receive learnt reaches it only because the executor issues steps in order.
Schedule oldDissemination(const CollectiveSpec& spec) {
  ScheduleBuilder b(spec.rank, spec.size);
  const Region empty{BufferKind::kInput, 0, 0};
  bool first = true;
  StepId previousRecv = 0;
  for (int d = 1; d < spec.size; d *= 2) {
    if (first) b.send((spec.rank + d) % spec.size, empty);
    else b.send((spec.rank + d) % spec.size, empty, {previousRecv});
    previousRecv = b.recv((spec.rank - d % spec.size + spec.size) % spec.size, empty);
    first = false;
  }
  return std::move(b).build();
}

TEST(VerifyBarrier, KnowledgeThroughDependenciesAlone) {
  // The registered barrier holds through its dependencies alone (each send and receive
  // also waits for the previous one), for any issue order.
  VerifyOptions depsOnly;
  depsOnly.inOrderIssue = false;
  for (int n = 1; n <= 70; ++n) {
    auto specs = makeSpecs(Collective::kBarrier, n, 0);
    EXPECT_TRUE(verifySchedules(specs, buildAll(buildBarrierDissemination, specs), depsOnly).ok())
        << n;
  }
  // The old form is right only under in-order issue; through dependencies alone,
  // knowledge skips ranks from 6 ranks on, and the verifier says so.
  for (int n : {2, 3, 4, 5}) {
    auto specs = makeSpecs(Collective::kBarrier, n, 0);
    EXPECT_TRUE(verifySchedules(specs, buildAll(oldDissemination, specs), depsOnly).ok());
  }
  auto specs = makeSpecs(Collective::kBarrier, 6, 0);
  EXPECT_TRUE(verifySchedules(specs, buildAll(oldDissemination, specs)).ok());
  expectRejected(verifySchedules(specs, buildAll(oldDissemination, specs), depsOnly),
                 {"barrier: rank 0 can leave before rank 1 has entered", "5 of 6 ranks"});
}

// Pairs (2i -> 2i+1) when `evenSends`, else the other way; an odd world leaves its last
// rank idle.
std::vector<CollectiveSpec> pairSpecs(int n, std::uint64_t count, bool evenSends) {
  std::vector<CollectiveSpec> specs = makeSpecs(Collective::kSend, n, count);
  for (int r = 0; r < n; ++r) {
    CollectiveSpec& s = specs[static_cast<std::size_t>(r)];
    const int partner = r ^ 1;
    if (partner >= n) {
      s.peer = -1;
      s.count = 0;
      continue;
    }
    s.peer = partner;
    s.kind = ((r % 2 == 0) == evenSends) ? Collective::kSend : Collective::kRecv;
  }
  return specs;
}

std::vector<Schedule> buildPairs(const std::vector<CollectiveSpec>& specs) {
  std::vector<Schedule> all;
  for (const CollectiveSpec& s : specs) {
    if (s.peer < 0)
      all.push_back(std::move(ScheduleBuilder(s.rank, s.size)).build());
    else
      all.push_back(s.kind == Collective::kSend ? buildSendDirect(s) : buildRecvDirect(s));
  }
  return all;
}

TEST(VerifyP2p, SendRecvForManyWorlds) {
  for (int n : worlds()) {
    for (std::uint64_t count : countsFor(n)) {
      for (bool evenSends : {true, false}) {
        auto specs = pairSpecs(n, count, evenSends);
        VerifyStats stats;
        Status st = verifySchedules(specs, buildPairs(specs), {}, &stats);
        ASSERT_TRUE(st.ok()) << st.toString();
        EXPECT_EQ(stats.messages, static_cast<std::uint64_t>(n / 2));
      }
    }
  }
}

// --- Each class of error is rejected, naming the culprit ---------------------------------

TEST(VerifyErrors, DroppedStep) {
  auto specs = makeSpecs(Collective::kAllReduce, 4, 8);
  auto all = buildAll(buildAllreduceRing, specs);
  const StepId victim = findStep(all[2], OpCode::kRecvReduceSend);  // receives from rank 1
  all[2] = dropStep(all[2], victim);
  expectRejected(verifySchedules(specs, all), {"allreduce on 4 ranks", "rank 1 step",
                                               "rank 2 posts no receive of message #0 "
                                               "from rank 1"});
}

TEST(VerifyErrors, RegionShiftedByOneElement) {
  auto specs = makeSpecs(Collective::kAllReduce, 4, 16);
  auto all = buildAll(buildAllreduceRing, specs);
  const StepId victim = findStep(all[1], OpCode::kRecvCopySend);
  all[1].steps[victim].dst.offset += 1;
  expectRejected(verifySchedules(specs, all), {"rank 1", "step " + std::to_string(victim)});
}

TEST(VerifyErrors, ShiftedSourceGivesWrongElements) {
  // Sender and receiver agree on the count, but the sender reads one element further on:
  // the data arrives, but it is the wrong data.
  auto specs = pairSpecs(2, 8, true);
  auto all = buildPairs(specs);
  all[0].steps[0].src = Region{BufferKind::kInput, 1, 7};
  all[1].steps[0].dst.count = 7;
  expectRejected(verifySchedules(specs, all),
                 {"rank 1 out[0..7) holds in_0[j+1], but recv defines in_0[j]"});
}

// Two ranks, count 4: each sends its input to the other and reduces what it receives.
std::vector<Schedule> directAllreduce(bool extraReduce, bool finalizeTwice) {
  std::vector<Schedule> all;
  for (int r = 0; r < 2; ++r) {
    ScheduleBuilder b(r, 2);
    const Region in{BufferKind::kInput, 0, 4}, out{BufferKind::kOutput, 0, 4};
    b.send(1 - r, in);
    StepId got = b.recvReduce(1 - r, in, out);
    if (r == 0 && extraReduce) {
      b.setFinalize(b.reduce(in, out, {got}));
    } else {
      b.setFinalize(got);
      if (r == 0 && finalizeTwice) b.setFinalize(b.copy(out, out, {got}));
    }
    all.push_back(std::move(b).build());
  }
  return all;
}

TEST(VerifyErrors, ReduceAppliedTwice) {
  auto specs = makeSpecs(Collective::kAllReduce, 2, 4);
  ASSERT_TRUE(verifySchedules(specs, directAllreduce(false, false)).ok());
  expectRejected(verifySchedules(specs, directAllreduce(true, false)),
                 {"rank 0 step 2 (reduce", "count rank 0's contribution twice"});
}

TEST(VerifyErrors, DoubleFinalize) {
  auto specs = makeSpecs(Collective::kAllReduce, 2, 4);
  expectRejected(verifySchedules(specs, directAllreduce(false, true)),
                 {"rank 0 step 2 (copy", "finalizes out[0..4) a second time"});
}

TEST(VerifyErrors, LostContribution) {
  // Rank 2 forwards what it receives instead of adding its own input to it.
  auto specs = makeSpecs(Collective::kAllReduce, 4, 8);
  auto all = buildAll(buildAllreduceRing, specs);
  all[2].steps[findStep(all[2], OpCode::kRecvReduceSend)].op = OpCode::kRecvCopySend;
  expectRejected(verifySchedules(specs, all),
                 {"rank 0 out[", "holds in_0..1[j] + in_3[j], finalized, but allreduce defines "
                                 "in_0..3[j], finalized: missing ranks 2"});
}

TEST(VerifyErrors, ForwardOnlyDestinationHoldsNothingOnceSent) {
  // The ring's intermediate reduce-scatter steps leave out[c] unspecified (the all-gather
  // overwrites it); the step that completes rank 1's chunk must not: its out[c] is the
  // result, read by nothing that rewrites it.
  auto specs = makeSpecs(Collective::kAllReduce, 4, 8);
  auto all = buildAll(buildAllreduceRing, specs);
  ASSERT_TRUE(verifySchedules(specs, all).ok());
  int forwardOnly = 0;
  for (const Step& st : all[1].steps) forwardOnly += st.forwardOnly ? 1 : 0;
  EXPECT_EQ(forwardOnly, 2) << "steps t = 1 .. n-2\n" << all[1].toString();
  for (Step& st : all[1].steps)
    if (st.op == OpCode::kRecvReduceSend && st.finalize) st.forwardOnly = true;
  expectRejected(verifySchedules(specs, all), {"rank 1 out[", "never written"});
}

TEST(VerifyErrors, MissingFinalize) {
  auto specs = makeSpecs(Collective::kAllReduce, 5, 11);
  auto all = buildAll(buildAllreduceRing, specs);
  for (Step& s : all[3].steps) s.finalize = false;
  // Rank 3 owned chunk 4 (r + 1): every rank's copy of it lacks the division.
  expectRejected(verifySchedules(specs, all), {"rank 0 out[", "never finalized"});
}

TEST(VerifyErrors, FinalizeOnANonReduction) {
  auto specs = pairSpecs(2, 3, true);
  auto all = buildPairs(specs);
  all[1].steps[0].finalize = true;
  expectRejected(verifySchedules(specs, all),
                 {"rank 1 out[0..3)", "finalized, but this collective does not reduce"});
}

TEST(VerifyErrors, MismatchedCounts) {
  auto specs = pairSpecs(2, 5, true);
  auto all = buildPairs(specs);
  all[1].steps[0].dst.count = 4;
  expectRejected(verifySchedules(specs, all),
                 {"rank 0 step 0 (send to 1#0", "rank 1 step 0 (recv from 0#0",
                  "carries 5 elements but the receive expects 4"});
}

TEST(VerifyErrors, UnmatchedSend) {
  auto specs = pairSpecs(2, 5, true);
  auto all = buildPairs(specs);
  ScheduleBuilder b(0, 2);
  b.send(1, {BufferKind::kInput, 0, 5});
  b.send(1, {BufferKind::kInput, 0, 5});
  all[0] = std::move(b).build();
  expectRejected(verifySchedules(specs, all), {"rank 0 step 1 (send to 1#1",
                                               "rank 1 posts no receive of message #1 from "
                                               "rank 0 (it receives 1 messages from rank 0)"});
}

TEST(VerifyErrors, UnmatchedReceive) {
  auto specs = pairSpecs(2, 5, true);
  auto all = buildPairs(specs);
  all[0] = std::move(ScheduleBuilder(0, 2)).build();
  expectRejected(verifySchedules(specs, all),
                 {"rank 1 step 0 (recv from 0#0", "rank 0 never sends message #0 to rank 1"});
}

// Rank 0 sends its input in two parts to rank 1, which receives them into its output;
// `swap` makes rank 0 send the second part first.
std::vector<Schedule> twoPartSend(std::uint64_t first, std::uint64_t second, bool swap) {
  ScheduleBuilder s(0, 2), r(1, 2);
  const Region a{BufferKind::kInput, 0, first}, b{BufferKind::kInput, first, second};
  s.send(1, swap ? b : a);
  s.send(1, swap ? a : b);
  r.recv(0, {BufferKind::kOutput, 0, first});
  r.recv(0, {BufferKind::kOutput, first, second});
  std::vector<Schedule> all;
  all.push_back(std::move(s).build());
  all.push_back(std::move(r).build());
  return all;
}

TEST(VerifyErrors, SwappedMessageOrder) {
  auto specs = pairSpecs(2, 8, true);
  ASSERT_TRUE(verifySchedules(specs, twoPartSend(3, 5, false)).ok());
  expectRejected(verifySchedules(specs, twoPartSend(3, 5, true)),
                 {"rank 0 step 0 (send to 1#0, src=in[3..8))",
                  "carries 5 elements but the "
                  "receive expects 3"});
  // With equal parts the counts agree, but the halves land in each other's place.
  expectRejected(verifySchedules(specs, twoPartSend(4, 4, true)),
                 {"rank 1 out[0..4) holds in_0[j+4], but recv defines in_0[j]"});
}

// Rank 0 sends k messages; rank 1 posts the receives in the reverse order. Under
// rendezvous, this completes only when each rank can have k - 1 steps in flight (then the
// last k - 2 receives match, freeing rank 0's window for its last send).
std::vector<Schedule> reversedReceives(int k) {
  ScheduleBuilder s(0, 2);
  for (int i = 0; i < k; ++i) s.send(1, {BufferKind::kInput, static_cast<std::uint64_t>(i), 1});
  Schedule sender = std::move(s).build();
  Schedule receiver;
  receiver.rank = 1;
  receiver.size = 2;
  for (int i = k - 1; i >= 0; --i) {
    Step step;
    step.op = OpCode::kRecv;
    step.recvPeer = 0;
    step.recvIndex = static_cast<std::uint32_t>(i);
    step.dst = Region{BufferKind::kOutput, static_cast<std::uint64_t>(i), 1};
    receiver.steps.push_back(step);
  }
  return {sender, receiver};
}

TEST(VerifyProgress, DeadlockDependsOnTheWindow) {
  auto specs = pairSpecs(2, 4, true);
  auto all = reversedReceives(4);
  for (std::size_t window : {1u, 2u}) {
    expectRejected(verifySchedules(specs, all, VerifyOptions{window}),
                   {"deadlock", strFormat("at most %zu steps in flight", window),
                    "rank 0 completed", "waits to hand its data to rank 1 step"});
  }
  EXPECT_TRUE(verifySchedules(specs, all, VerifyOptions{3}).ok());
  EXPECT_TRUE(verifySchedules(specs, all, VerifyOptions{16}).ok());
}

TEST(VerifyProgress, RingNeedsTwoStepsInFlight) {
  auto specs = makeSpecs(Collective::kAllReduce, 3, 6);
  auto all = buildAll(buildAllreduceRing, specs);
  expectRejected(
      verifySchedules(specs, all, VerifyOptions{1}),
      {"deadlock", "3 of 3 ranks cannot finish", "rank 0 completed 0 of", "step 0 (send to 1#0"});
  EXPECT_TRUE(verifySchedules(specs, all, VerifyOptions{2}).ok());
}

TEST(VerifyProgress, DeadlockOnADependencyCycleAcrossRanks) {
  // Each rank receives before it sends: with no buffering at all, nobody starts.
  std::vector<Schedule> all;
  for (int r = 0; r < 2; ++r) {
    ScheduleBuilder b(r, 2);
    StepId got = b.recv(1 - r, {BufferKind::kOutput, 0, 2});
    b.send(1 - r, {BufferKind::kInput, 0, 2}, {got});
    all.push_back(std::move(b).build());
  }
  auto specs = makeSpecs(Collective::kAllReduce, 2, 2);
  expectRejected(verifySchedules(specs, all),
                 {"deadlock", "step 1 is not issued: it depends on incomplete step 0",
                  "waits for data from rank 1 step 1 (send to 0#0"});
}

TEST(VerifyErrors, OutOfBoundsRegion) {
  auto specs = pairSpecs(2, 5, true);
  auto all = buildPairs(specs);
  all[0].steps[0].src.count = 6;
  all[1].steps[0].dst.count = 6;
  expectRejected(verifySchedules(specs, all),
                 {"rank 0 step 0 (send",
                  "source in[0..6) lies outside the buffer, which holds "
                  "5 elements"});
}

TEST(VerifyErrors, WriteToReadOnlyInput) {
  auto specs = makeSpecs(Collective::kAllReduce, 2, 4);
  auto all = directAllreduce(false, false);
  all[1].steps[1].dst.buffer = BufferKind::kInput;
  expectRejected(verifySchedules(specs, all), {"rank 1 step 1 (recvReduce", "read-only"});
}

TEST(VerifyErrors, PartialOverlapOfSourceAndDestination) {
  auto specs = makeSpecs(Collective::kAllReduce, 2, 4, true);
  auto all = directAllreduce(false, false);
  all[0].steps[1].src = Region{BufferKind::kInput, 0, 3};
  all[0].steps[1].dst = Region{BufferKind::kOutput, 1, 3};
  expectRejected(verifySchedules(specs, all), {"rank 0 step 1", "partially overlap"});
}

TEST(VerifyErrors, MissingDependencyMakesARace) {
  // In place, the all-gather overwrites chunks that the reduce-scatter sends from.
  auto specs = makeSpecs(Collective::kAllReduce, 4, 8, true);
  auto all = buildAll(buildAllreduceRing, specs);
  ASSERT_TRUE(verifySchedules(specs, all).ok());
  const StepId gather = findStep(all[2], OpCode::kRecvCopySend);
  ASSERT_EQ(all[2].steps[gather].depCount, 1u);
  const StepId before = all[2].deps[all[2].steps[gather].depBegin];
  all[2].steps[gather].depCount = 0;
  expectRejected(verifySchedules(specs, all),
                 {"rank 2: step " + std::to_string(before), "and step " + std::to_string(gather),
                  "race on out[", "neither depends on the other"});
}

TEST(VerifyErrors, TransitiveDependencyIsEnough) {
  // copy in -> scratch, then scratch -> out, then a receive into the scratch: the receive
  // depends on the second copy only, which depends on the first.
  std::vector<Schedule> all;
  for (int r = 0; r < 2; ++r) {
    ScheduleBuilder b(r, 2);
    b.reserveScratch(4);
    const Region in{BufferKind::kInput, 0, 4}, out{BufferKind::kOutput, 0, 4},
        scratch{BufferKind::kScratch, 0, 4};
    StepId c1 = b.copy(in, scratch);
    StepId c2 = b.copy(scratch, out, {c1});
    StepId s = b.send(1 - r, in);
    StepId got = b.recv(1 - r, scratch, {c2});
    b.setFinalize(b.reduce(scratch, out, {got, s}));
    all.push_back(std::move(b).build());
  }
  auto specs = makeSpecs(Collective::kAllReduce, 2, 4);
  Status st = verifySchedules(specs, all);
  EXPECT_TRUE(st.ok()) << st.toString();
  // Without c2 -> c1 the second copy may read the scratch before the first writes it.
  all[1].steps[1].depCount = 0;
  expectRejected(verifySchedules(specs, all),
                 {"rank 1: step 0", "and step 1", "race on scratch[0..4)"});
}

TEST(VerifyErrors, UninitialisedOperand) {
  std::vector<Schedule> all = directAllreduce(false, false);
  all[0].steps[1].src = Region{BufferKind::kOutput, 0, 4};  // reduces into nothing yet
  all[0].steps[1].dst = Region{BufferKind::kOutput, 0, 4};
  auto specs = makeSpecs(Collective::kAllReduce, 2, 4);
  expectRejected(verifySchedules(specs, all),
                 {"rank 0 step 1 (recvReduce", "the source is uninitialised"});
}

TEST(VerifyErrors, BarrierWhoseSendsIgnoreItsReceives) {
  auto specs = makeSpecs(Collective::kBarrier, 8, 0);
  auto all = buildAll(buildBarrierDissemination, specs);
  ASSERT_TRUE(verifySchedules(specs, all).ok());
  for (Schedule& s : all) {
    for (Step& step : s.steps) step.depCount = 0;
  }
  expectRejected(verifySchedules(specs, all), {"barrier: rank 0 can leave before rank 1 has "
                                               "entered",
                                               "heard from 4 of 8 ranks"});
}

TEST(VerifyErrors, InconsistentSpecsAreInvalidArguments) {
  auto specs = makeSpecs(Collective::kAllReduce, 3, 6);
  auto all = buildAll(buildAllreduceRing, specs);
  specs[2].count = 7;
  Status st = verifySchedules(specs, all);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.toString();
  all.pop_back();
  EXPECT_EQ(verifySchedules(makeSpecs(Collective::kAllReduce, 3, 6), all).code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tutti
