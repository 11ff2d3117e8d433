// Throughput of the reduction kernels, every kernel set (instruction set) this CPU supports,
// against memcpy of the same size.
//
// Bytes/s counts the bytes of ONE buffer per call (count * element size), like
// nccl-tests' algbw, so "combine at X GB/s" compares directly with "memcpy at Y GB/s" on
// the same row size even though combine touches three buffers (two reads, one write) and
// memcpy two. Sizes: 4 KiB (L1), 256 KiB (L2) and 64 MiB (beyond the last-level cache).
// Buffers are reused across iterations, so the two smaller sizes measure cache-resident
// throughput: the kernels' own speed, not the memory's.
//
// Rows:
//   Memcpy/<bytes>                        the baseline
//   StreamCopy/<isa>/<bytes>              the copy with non-temporal stores (reduce::copy
//                                         uses it from 32 MiB), AVX2 and AVX-512
//   Combine/<isa>/<dtype>/<op>/<bytes>    one kernel set's dst = a op b (dst separate)
//   CombineInPlace/<dtype>/<bytes>        combine() with dst == a (the executor's pattern),
//                                         for float32 and bfloat16 sums
//   Average/<isa>/<dtype>/<bytes>         finalize()'s kAvg division, floating types only
// Kernel sets the CPU lacks get no rows; the program says which on stderr.
//
//   build/bin/tutti-reduce-bench --benchmark_min_time=0.2
//   build/bin/tutti-reduce-bench --benchmark_filter='/(float32|bfloat16)/sum/'

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace tutti::reduce {
namespace {

constexpr std::int64_t kSizes[] = {4 << 10, 256 << 10, 64 << 20};

constexpr DataType kDataTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                                   DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                                   DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                   DataType::kFloat64};

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax};

// Moderate, finite values (small integers in every format), so that no kernel takes a
// special-value path the data of a real reduction would not.
std::vector<std::uint8_t> makeBuffer(DataType dtype, std::size_t count, int seed) {
  const std::size_t es = dataTypeSize(dtype);
  std::vector<std::uint8_t> buf(count * es);
  for (std::size_t i = 0; i < count; ++i) {
    const int v = static_cast<int>((i * 7 + static_cast<std::size_t>(seed)) % 64) - 32;
    std::uint8_t* p = &buf[i * es];
    const auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (dtype) {
      case DataType::kInt8:
      case DataType::kUint8:
        put(static_cast<std::int8_t>(v));
        break;
      case DataType::kInt32:
      case DataType::kUint32:
        put(static_cast<std::int32_t>(v));
        break;
      case DataType::kInt64:
      case DataType::kUint64:
        put(static_cast<std::int64_t>(v));
        break;
      case DataType::kFloat16:
        put(floatToHalf(static_cast<float>(v)));
        break;
      case DataType::kBFloat16:
        put(floatToBfloat16(static_cast<float>(v)));
        break;
      case DataType::kFloat32:
        put(static_cast<float>(v));
        break;
      case DataType::kFloat64:
        put(static_cast<double>(v));
        break;
    }
  }
  return buf;
}

void setBytes(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}

void runCombine(benchmark::State& state, DataType dtype, detail::CombineFn kernel) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / dataTypeSize(dtype);
  const std::vector<std::uint8_t> a = makeBuffer(dtype, count, 1);
  const std::vector<std::uint8_t> b = makeBuffer(dtype, count, 2);
  std::vector<std::uint8_t> dst(bytes);
  for (auto _ : state) {
    kernel(dst.data(), a.data(), b.data(), count, 0);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

// combine() itself, accumulating into `a`.
void runCombineInPlace(benchmark::State& state, DataType dtype) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / dataTypeSize(dtype);
  std::vector<std::uint8_t> acc = makeBuffer(dtype, count, 1);
  const std::vector<std::uint8_t> b = makeBuffer(dtype, count, 2);
  for (auto _ : state) {
    combine(acc.data(), acc.data(), b.data(), count, dtype, ReduceOp::kSum);
    benchmark::DoNotOptimize(acc.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

// Divides by 1 in place so the values stay the same from one iteration to the next (the
// kernels divide whatever the divisor; finalize() skips 1, the kernel does not).
void runAverage(benchmark::State& state, DataType dtype, detail::AverageFn kernel) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / dataTypeSize(dtype);
  std::vector<std::uint8_t> buf = makeBuffer(dtype, count, 1);
  for (auto _ : state) {
    kernel(buf.data(), count, 1);
    benchmark::DoNotOptimize(buf.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

void runMemcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::vector<std::uint8_t> src(bytes, 1);
  std::vector<std::uint8_t> dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

// A streaming copy kernel (reduce::copy's choice for outputs of kCopyStreamingBytes or
// more), run at every size so that its crossing with memcpy shows.
void runStreamCopy(benchmark::State& state, detail::CopyFn kernel) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::vector<std::uint8_t> src(bytes, 1);
  std::vector<std::uint8_t> dst(bytes);
  for (auto _ : state) {
    kernel(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, bytes);
}

void withSizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t s : kSizes) b->Arg(s);
}

bool isFloating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

// Kernel sets with nothing of their own for `dtype` would only repeat the rows of the set
// they fall back to.
bool hasOwnKernels(detail::Isa isa, DataType dtype) {
  if (isa == detail::Isa::kAvxF16c) return dtype == DataType::kFloat16;
  if (isa == detail::Isa::kAvx512Bf16) return dtype == DataType::kBFloat16;
  return true;
}

void registerAll() {
  benchmark::RegisterBenchmark("Memcpy", runMemcpy)->Apply(withSizes);
  for (int i = 0; i < detail::kNumIsas; ++i) {
    const auto isa = static_cast<detail::Isa>(i);
    const std::string isaName = detail::isaName(isa);
    if (!detail::isaSupported(isa)) {
      std::fprintf(stderr, "tutti-reduce-bench: this CPU lacks %s; no rows for it\n",
                   isaName.c_str());
      continue;
    }
    if (isa == detail::Isa::kAvx2 || isa == detail::Isa::kAvx512) {
      benchmark::RegisterBenchmark(("StreamCopy/" + isaName).c_str(), runStreamCopy,
                                   detail::streamCopyKernel(isa))
          ->Apply(withSizes);
    }
    for (DataType dtype : kDataTypes) {
      if (!hasOwnKernels(isa, dtype)) continue;
      for (ReduceOp op : kOps) {
        const std::string name =
            "Combine/" + isaName + "/" + dataTypeName(dtype) + "/" + reduceOpName(op);
        detail::CombineFn fn = detail::combineKernel(dtype, op, isa);
        benchmark::RegisterBenchmark(name.c_str(), runCombine, dtype, fn)->Apply(withSizes);
      }
      if (isFloating(dtype) && isa != detail::Isa::kAvxF16c) {
        const std::string name = "Average/" + isaName + "/" + dataTypeName(dtype);
        benchmark::RegisterBenchmark(name.c_str(), runAverage, dtype,
                                     detail::averageKernel(dtype, isa))
            ->Apply(withSizes);
      }
    }
  }
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    const std::string name = std::string("CombineInPlace/") + dataTypeName(dtype);
    benchmark::RegisterBenchmark(name.c_str(), runCombineInPlace, dtype)->Apply(withSizes);
  }
}

}  // namespace
}  // namespace tutti::reduce

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  tutti::reduce::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
