// What the flight recorder adds to a call: begin() when the call starts and end() when it
// returns, on the thread that runs it, against an 8-byte all-reduce of about 1 us on two
// ranks. A dump reading the ring meanwhile does not slow the writer down (it only loads).
// Run: build/bin/tutti-flight-recorder-bench
#include <benchmark/benchmark.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/flight_recorder.h"

namespace {

using tutti::detail::CallSummary;
using tutti::detail::FlightRecorder;

CallSummary eightByteAllreduce(std::uint64_t seq) {
  CallSummary c;
  c.kind = tutti::Collective::kAllReduce;
  c.dtype = tutti::DataType::kFloat32;
  c.count = 2;
  c.seq = seq;
  c.algorithm = "recursive_doubling";
  return c;
}

// One call's recording, as CommImpl::run does it (the issue time comes from the
// deadline, computed before).
void BM_BeginEnd(benchmark::State& state) {
  FlightRecorder recorder("world", 0, static_cast<std::size_t>(state.range(0)));
  const auto issued = FlightRecorder::Clock::now();
  std::uint64_t seq = 0;
  for (auto _ : state) {
    auto handle = recorder.begin(eightByteAllreduce(seq++), issued);
    recorder.end(handle, tutti::ErrorCode::kOk);
  }
}
BENCHMARK(BM_BeginEnd)->Arg(256)->Arg(0);

// The same while another thread snapshots the ring in a loop (a dump during calls).
void BM_BeginEndWhileDumping(benchmark::State& state) {
  FlightRecorder recorder("world", 0, 256);
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) benchmark::DoNotOptimize(recorder.snapshot());
  });
  const auto issued = FlightRecorder::Clock::now();
  std::uint64_t seq = 0;
  for (auto _ : state) {
    auto handle = recorder.begin(eightByteAllreduce(seq++), issued);
    recorder.end(handle, tutti::ErrorCode::kOk);
  }
  stop.store(true);
  reader.join();
}
BENCHMARK(BM_BeginEndWhileDumping);

// For scale: the clock reads the recorder avoids on a successful call.
void BM_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(BM_SteadyClockNow);

void BM_CoarseClockNow(benchmark::State& state) {
  for (auto _ : state) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_CoarseClockNow);

}  // namespace

BENCHMARK_MAIN();
