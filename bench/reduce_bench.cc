// Throughput of reduce::combine (sum) against memcpy of the same size: the baseline the
// later hand-written SIMD kernels are measured against.
//
// Bytes/s counts the bytes of ONE buffer per call (count * element size), like
// nccl-tests' algbw, so "combine at X GB/s" compares directly with "memcpy at Y GB/s" on
// the same row size even though combine touches three buffers (two reads, one write) and
// memcpy two. Sizes: 4 KiB (L1), 256 KiB (L2) and 64 MiB (DRAM).
//
//   build/bin/tutti-reduce-bench --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace tutti::reduce {
namespace {

constexpr std::int64_t kSizes[] = {4 << 10, 256 << 10, 64 << 20};

// Moderate, finite values (small integers in every format), so that no kernel takes a
// special-value path the data of a real reduction would not.
std::vector<std::uint8_t> makeBuffer(DataType dtype, std::size_t count, int seed) {
  std::vector<std::uint8_t> buf(count * dataTypeSize(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>((i * 7 + static_cast<std::size_t>(seed)) % 64) - 32.0f;
    if (dtype == DataType::kFloat32) {
      std::memcpy(&buf[i * 4], &v, 4);
    } else if (dtype == DataType::kInt32) {
      const auto x = static_cast<std::int32_t>(v);
      std::memcpy(&buf[i * 4], &x, 4);
    } else {
      const std::uint16_t h = dtype == DataType::kFloat16 ? floatToHalf(v) : floatToBfloat16(v);
      std::memcpy(&buf[i * 2], &h, 2);
    }
  }
  return buf;
}

// `inPlace` accumulates into `a` (dst == a), the executor's usual pattern.
void runCombine(benchmark::State& state, DataType dtype, detail::CombineFn kernel, bool inPlace) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / dataTypeSize(dtype);
  std::vector<std::uint8_t> a = makeBuffer(dtype, count, 1);
  const std::vector<std::uint8_t> b = makeBuffer(dtype, count, 2);
  std::vector<std::uint8_t> out(bytes);
  std::uint8_t* dst = inPlace ? a.data() : out.data();
  for (auto _ : state) {
    if (kernel != nullptr) {
      kernel(dst, a.data(), b.data(), count);
    } else {
      combine(dst, a.data(), b.data(), count, dtype, ReduceOp::kSum);
    }
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_CombineSum(benchmark::State& state, DataType dtype) {
  runCombine(state, dtype, nullptr, false);
}

void BM_CombineSumInPlace(benchmark::State& state, DataType dtype) {
  runCombine(state, dtype, nullptr, true);
}

// The portable float16 kernel, which combine() bypasses on CPUs with F16C.
void BM_CombineSumGenericKernel(benchmark::State& state, DataType dtype) {
  runCombine(state, dtype, detail::combineKernel(dtype, ReduceOp::kSum, detail::Isa::kGeneric),
             false);
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::vector<std::uint8_t> src(bytes, 1);
  std::vector<std::uint8_t> dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t s : kSizes) b->Arg(s);
}

BENCHMARK(BM_Memcpy)->Apply(sizes);
BENCHMARK_CAPTURE(BM_CombineSum, float32, DataType::kFloat32)->Apply(sizes);
BENCHMARK_CAPTURE(BM_CombineSum, bfloat16, DataType::kBFloat16)->Apply(sizes);
BENCHMARK_CAPTURE(BM_CombineSum, float16, DataType::kFloat16)->Apply(sizes);
BENCHMARK_CAPTURE(BM_CombineSum, int32, DataType::kInt32)->Apply(sizes);
BENCHMARK_CAPTURE(BM_CombineSumInPlace, float32, DataType::kFloat32)->Apply(sizes);
BENCHMARK_CAPTURE(BM_CombineSumGenericKernel, float16, DataType::kFloat16)->Apply(sizes);

}  // namespace
}  // namespace tutti::reduce

BENCHMARK_MAIN();
