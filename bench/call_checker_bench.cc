// What mismatch detection adds to a call (issue: "its cost at 8 bytes is measured and stays
// within 2%"): the issuing thread's CallChecker::begin() plus one arrival check per message,
// against an 8-byte all-reduce of about 1 us on two ranks. concurrent:1 is the handshake with
// fences (TCP, hybrid: arrivals on the transport's own thread), concurrent:0 the shm case
// (arrivals on the calling thread). Run: build/bin/tutti-call-checker-bench
#include <benchmark/benchmark.h>

#include <string>

#include "transport/call_checker.h"
#include "transport/tag.h"

namespace {

std::string describe(const tutti::CallStamp&, std::uint64_t) { return "call"; }

constexpr tutti::CallStamp kStamp{0x8000000000000009ull, 2};

// One call as two ranks running recursive doubling see it: begin, then one arrival (the
// peer's message, after the call began).
void BM_BeginThenArrival(benchmark::State& state) {
  tutti::CallChecker checker(0, &describe);
  checker.setConcurrentArrivals(state.range(0) != 0);
  std::uint64_t seq = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(checker.begin(seq, kStamp));
    benchmark::DoNotOptimize(checker.onArrival(1, tutti::collectiveTagBase(0, seq), kStamp));
    ++seq;
  }
}
BENCHMARK(BM_BeginThenArrival)->ArgName("concurrent")->Arg(0)->Arg(1);

// What the issuing thread adds to every call when the peers' messages match posted
// receives (they are then checked on match, not by the checker).
void BM_BeginOnly(benchmark::State& state) {
  tutti::CallChecker checker(0, &describe);
  checker.setConcurrentArrivals(state.range(0) != 0);
  std::uint64_t seq = 0;
  for (auto _ : state) benchmark::DoNotOptimize(checker.begin(seq++, kStamp));
}
BENCHMARK(BM_BeginOnly)->ArgName("concurrent")->Arg(0)->Arg(1);

// The peer is ahead: its message arrives before this rank begins the call.
void BM_EarlyArrivalThenBegin(benchmark::State& state) {
  tutti::CallChecker checker(0, &describe);
  checker.setConcurrentArrivals(state.range(0) != 0);
  std::uint64_t seq = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(checker.onArrival(1, tutti::collectiveTagBase(0, seq), kStamp));
    benchmark::DoNotOptimize(checker.begin(seq, kStamp));
    ++seq;
  }
}
BENCHMARK(BM_EarlyArrivalThenBegin)->ArgName("concurrent")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
