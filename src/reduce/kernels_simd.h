#pragma once
// Scaffolding shared by the hand-vectorised kernel files (kernels_avx2.cc, kernels_avx512.h,
// kernels_avx512.cc, kernels_avx512_bf16.cc): the loops, the operator selectors and the
// (dtype, op) -> kernel tables. Each file supplies only its formats (how a vector of
// elements is loaded, converted and stored) and lane types (the arithmetic on one vector
// register). Include it from those files only.
//
// Those files are compiled with different -m flags, so everything here lives in an unnamed
// namespace. With external linkage, an inline function or template instantiation is emitted
// as a weak symbol by every file that uses it, each copy compiled for that file's
// instruction set, and the linker keeps one copy for all callers: an AVX-512 copy could
// then run on a CPU without AVX-512. For the same reason those files call no
// standard-library template (std::bit_cast, std::min, ...), only intrinsics and builtins;
// the reduce_isa_objects_define_no_weak_symbols test checks their objects.
//
// A format Fmt provides:
//   Storage, Lanes, kLanes            element type in memory, lane type, elements per step
//   load(p), store(p, v)              kLanes elements <-> one Lanes::V (converting if needed)
//   stream(p, v)                      store(p, v) with a non-temporal store; p is aligned to
//                                     the step's width
//   loadN(p, n), storeN(p, v, n)      the same for the n < kLanes elements of a tail; loadN
//                                     zero-fills the missing lanes and reads nothing past n
// and a lane type L provides V and sum, prod, min, max (V, V) -> V; the floating lane types
// also provide div(V, V) and divisor(int worldSize) for kAvg's final step.

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "reduce/kernels.h"
#include "reduce/reduce.h"
#include "tutti/types.h"

namespace tutti::reduce::detail {
namespace {

// ---- operator selectors: Sel::apply<L>(a, b) is L::sum(a, b), L::prod(a, b), ... -------

struct SumSel {
  template <typename L>
  static typename L::V apply(typename L::V a, typename L::V b) {
    return L::sum(a, b);
  }
};

struct ProdSel {
  template <typename L>
  static typename L::V apply(typename L::V a, typename L::V b) {
    return L::prod(a, b);
  }
};

struct MinSel {
  template <typename L>
  static typename L::V apply(typename L::V a, typename L::V b) {
    return L::min(a, b);
  }
};

struct MaxSel {
  template <typename L>
  static typename L::V apply(typename L::V a, typename L::V b) {
    return L::max(a, b);
  }
};

// ---- lane types ---------------------------------------------------------------------------

// Two registers of lane type L used as one, for formats that fill two per step (bfloat16
// splits each 32-bit pair of elements into two float32 registers, see Bf16Format).
template <typename L>
struct PairLanes {
  struct V {
    typename L::V lo;
    typename L::V hi;
  };
  static V sum(V a, V b) { return {L::sum(a.lo, b.lo), L::sum(a.hi, b.hi)}; }
  static V prod(V a, V b) { return {L::prod(a.lo, b.lo), L::prod(a.hi, b.hi)}; }
  static V min(V a, V b) { return {L::min(a.lo, b.lo), L::min(a.hi, b.hi)}; }
  static V max(V a, V b) { return {L::max(a.lo, b.lo), L::max(a.hi, b.hi)}; }
  static V div(V a, V b) { return {L::div(a.lo, b.lo), L::div(a.hi, b.hi)}; }
  static V divisor(int worldSize) { return {L::divisor(worldSize), L::divisor(worldSize)}; }
};

// ---- loops ------------------------------------------------------------------------------

// The number of elements to process before the main loop so that dst starts on a cache
// line. A store that straddles two lines costs about two, and at AVX-512's 64 bytes every
// misaligned store does; AVX2 measured almost twice as fast on L2-resident data with its
// pairs of 32-byte stores on one line (64-byte aligned) than on 32-byte alignment. a and b
// keep their alignment relative to dst, which is the same in the common case of buffers
// at the same offset of a chunked message. Short calls (under 4 lines) skip it, and so do
// elements stored at addresses that are not a multiple of their size.
template <typename S>
std::size_t alignmentHead(const void* dst, std::size_t count) {
  constexpr std::size_t kLine = 64;
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(dst) % kLine;
  if (misalignment == 0 || misalignment % sizeof(S) != 0 || count * sizeof(S) < 4 * kLine) {
    return 0;
  }
  return (kLine - misalignment) / sizeof(S);
}

// Outputs at least this large are written with non-temporal stores when dst is a buffer
// of its own. A normal store first reads the line it writes (read for ownership), so a
// combine into a separate buffer moves four streams to and from memory; streaming stores
// make it three. Measured with AVX-512 float32 sums at 16-64 MiB on the development
// machine (48 MiB shared L3): about 1.35x faster out of place, but about 10% slower in
// place (dst == a, whose line is already in cache), hence only out of place. They also
// take the result out of the caches, which costs the next reader a trip to memory when
// the result would have fit there, hence a threshold. It was 32 MiB (three such buffers
// above most last-level caches); on the Intel VM with 2 vCPUs, whose 105 MiB L3 is shared
// with the host's other guests, 8 MiB for these and the copies (reduce::kCopyStreamingBytes)
// measured faster for the sizes between (scripts/ab_latency.sh -s, 11-15 rounds, time
// against 32 MiB): all-reduce 4 ranks 2 / 4 MiB 0.90 / 0.84, 2 ranks 4 / 16 MiB 0.92 / 0.91;
// reduce-scatter 2 ranks 16 MiB 0.79; 4 and 8 ranks 16 MiB all-reduce and 4 ranks 16 MiB
// all-gather level (their outputs lie past 32 MiB); one cell slower, the all-gather of
// 8 MiB on 2 ranks, 1.05-1.09. That 8 MiB is the default of the machine model's
// streamingStoresFrom, which sets the threshold (reduce::streamingFrom()): the L3 the guest
// reports does not predict it (on the Intel VM 8 MiB beat 32 MiB with a 105 MiB L3, where a
// rule over the L3's size would have chosen tens of MiB).

// True when the main loop of a combine should use streaming stores: a large output (of
// which this call may write a piece) in its own buffer, starting at element `i` on a cache
// line (stream stores must be aligned).
template <typename S>
bool useStreamingStores(const S* d, const S* a, const S* b, std::size_t i, std::size_t count,
                        std::size_t outputBytes) {
  return std::max(count * sizeof(S), outputBytes) >= streamingFrom() && d != a && d != b &&
         reinterpret_cast<std::uintptr_t>(d + i) % 64 == 0;
}

// dst = a op b. Every step loads its elements of a and b before it stores the same
// elements of dst, so dst may equal a, b or both. Partial steps (the alignment head and the
// tail) take the same instructions as full ones on fewer lanes, so every element of a
// call is computed the same way.
template <typename Fmt, typename Sel>
struct CombineLoop {
  using S = typename Fmt::Storage;
  using L = typename Fmt::Lanes;
  static constexpr std::size_t kLanes = Fmt::kLanes;

  static void step(S* d, const S* a, const S* b) {
    Fmt::store(d, Sel::template apply<L>(Fmt::load(a), Fmt::load(b)));
  }
  static void partialStep(S* d, const S* a, const S* b, std::size_t n) {
    Fmt::storeN(d, Sel::template apply<L>(Fmt::loadN(a, n), Fmt::loadN(b, n)), n);
  }

  static void run(void* dst, const void* a, const void* b, std::size_t count,
                  std::size_t outputBytes) {
    auto* d = static_cast<S*>(dst);
    const auto* pa = static_cast<const S*>(a);
    const auto* pb = static_cast<const S*>(b);
    // The head (less than a line) is a partial step and then whole steps.
    const std::size_t head = alignmentHead<S>(d, count);
    std::size_t i = head % kLanes;
    if (i > 0) partialStep(d, pa, pb, i);
    for (; i < head; i += kLanes) step(d + i, pa + i, pb + i);
    if (useStreamingStores(d, pa, pb, i, count, outputBytes)) {
      for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
        const typename L::V r0 = Sel::template apply<L>(Fmt::load(pa + i), Fmt::load(pb + i));
        const typename L::V r1 =
            Sel::template apply<L>(Fmt::load(pa + i + kLanes), Fmt::load(pb + i + kLanes));
        Fmt::stream(d + i, r0);
        Fmt::stream(d + i + kLanes, r1);
      }
      // Non-temporal stores are weakly ordered: make them visible before any later store
      // (the caller's, or another thread's flag saying the data is ready).
      _mm_sfence();
    }
    // Two steps per iteration halve the loop overhead, which matters for the cheap
    // operators on L1-resident data (one load pair, one add and one store per step).
    for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
      const typename L::V r0 = Sel::template apply<L>(Fmt::load(pa + i), Fmt::load(pb + i));
      const typename L::V r1 =
          Sel::template apply<L>(Fmt::load(pa + i + kLanes), Fmt::load(pb + i + kLanes));
      Fmt::store(d + i, r0);
      Fmt::store(d + i + kLanes, r1);
    }
    if (i + kLanes <= count) {
      step(d + i, pa + i, pb + i);
      i += kLanes;
    }
    if (i < count) partialStep(d + i, pa + i, pb + i, count - i);
  }
};

// buf /= worldSize in the format's compute type (float32 for the 16-bit formats), the
// same division the portable kernel does: a true division, not a multiplication by a
// rounded reciprocal. Division is slow enough that loop overhead does not matter.
template <typename Fmt>
struct AverageLoop {
  using S = typename Fmt::Storage;
  using L = typename Fmt::Lanes;
  static constexpr std::size_t kLanes = Fmt::kLanes;

  static void run(void* buf, std::size_t count, int worldSize) {
    auto* p = static_cast<S*>(buf);
    const typename L::V divisor = L::divisor(worldSize);
    const std::size_t head = alignmentHead<S>(p, count);
    std::size_t i = head % kLanes;
    if (i > 0) Fmt::storeN(p, L::div(Fmt::loadN(p, i), divisor), i);
    for (; i + kLanes <= count; i += kLanes) {
      Fmt::store(p + i, L::div(Fmt::load(p + i), divisor));
    }
    if (i < count) {
      const std::size_t n = count - i;
      Fmt::storeN(p + i, L::div(Fmt::loadN(p + i, n), divisor), n);
    }
  }
};

// ---- tables -----------------------------------------------------------------------------

template <typename Fmt>
CombineFn pickOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:  // summed here, divided by finalize()
      return &CombineLoop<Fmt, SumSel>::run;
    case ReduceOp::kProd:
      return &CombineLoop<Fmt, ProdSel>::run;
    case ReduceOp::kMin:
      return &CombineLoop<Fmt, MinSel>::run;
    case ReduceOp::kMax:
      return &CombineLoop<Fmt, MaxSel>::run;
  }
  return nullptr;
}

// dst = src, `bytes` of them, the body written with non-temporal stores (the caller has
// decided the output is large, see reduce::copy); with kCached, cached = src as well, in
// the same pass over src and with normal stores (its next reader finds it in the caches;
// the three ranges do not overlap). L is the instruction set's integer lane type (load,
// store, stream); the bytes before dst's first cache line and after its last whole one are
// copied with memcpy. Four lines per iteration keep the write-combining buffers full.
template <typename L, bool kCached>
void streamCopyLines(char* c, char* d, const char* s, std::size_t bytes) {
  constexpr std::size_t kLine = 64;
  constexpr std::size_t kStep = sizeof(typename L::V);
  std::size_t head = (kLine - reinterpret_cast<std::uintptr_t>(d) % kLine) % kLine;
  if (head > bytes) head = bytes;
  if constexpr (kCached) std::memcpy(c, s, head);
  std::memcpy(d, s, head);
  std::size_t i = head;
  for (; i + 4 * kLine <= bytes; i += 4 * kLine) {
    typename L::V v[4 * kLine / kStep];
    for (std::size_t k = 0; k < 4 * kLine / kStep; ++k) v[k] = L::load(s + i + k * kStep);
    if constexpr (kCached) {
      for (std::size_t k = 0; k < 4 * kLine / kStep; ++k) L::store(c + i + k * kStep, v[k]);
    }
    for (std::size_t k = 0; k < 4 * kLine / kStep; ++k) L::stream(d + i + k * kStep, v[k]);
  }
  // Non-temporal stores are weakly ordered: visible before any later store (a flag).
  _mm_sfence();
  if constexpr (kCached) std::memcpy(c + i, s + i, bytes - i);
  std::memcpy(d + i, s + i, bytes - i);
}

template <typename L>
void streamCopy(void* dst, const void* src, std::size_t bytes) {
  streamCopyLines<L, false>(nullptr, static_cast<char*>(dst), static_cast<const char*>(src),
                            bytes);
}

template <typename L>
void streamCopyTwo(void* cached, void* dst, const void* src, std::size_t bytes) {
  streamCopyLines<L, true>(static_cast<char*>(cached), static_cast<char*>(dst),
                           static_cast<const char*>(src), bytes);
}

// `Formats` names each dtype's format: Formats::Int8, Formats::Uint8, ..., Formats::Float64.
template <typename Formats>
CombineFn pickCombine(DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kInt8:
      return pickOp<typename Formats::Int8>(op);
    case DataType::kUint8:
      return pickOp<typename Formats::Uint8>(op);
    case DataType::kInt32:
      return pickOp<typename Formats::Int32>(op);
    case DataType::kUint32:
      return pickOp<typename Formats::Uint32>(op);
    case DataType::kInt64:
      return pickOp<typename Formats::Int64>(op);
    case DataType::kUint64:
      return pickOp<typename Formats::Uint64>(op);
    case DataType::kFloat16:
      return pickOp<typename Formats::Float16>(op);
    case DataType::kBFloat16:
      return pickOp<typename Formats::BFloat16>(op);
    case DataType::kFloat32:
      return pickOp<typename Formats::Float32>(op);
    case DataType::kFloat64:
      return pickOp<typename Formats::Float64>(op);
  }
  return nullptr;
}

// Only the floating formats get a vector division: x86 has no SIMD integer division, and
// kAvg over integers is rare enough to leave to the portable kernel (nullptr here).
template <typename Formats>
AverageFn pickAverage(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
      return &AverageLoop<typename Formats::Float16>::run;
    case DataType::kBFloat16:
      return &AverageLoop<typename Formats::BFloat16>::run;
    case DataType::kFloat32:
      return &AverageLoop<typename Formats::Float32>::run;
    case DataType::kFloat64:
      return &AverageLoop<typename Formats::Float64>::run;
    default:
      return nullptr;
  }
}

}  // namespace
}  // namespace tutti::reduce::detail
