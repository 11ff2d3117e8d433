// Entry points of the reduce layer: argument checks, CPU feature detection and the one
// place that chooses a kernel for (dtype, op, instruction set). The kernels themselves
// live in kernels_<isa>.cc.

#include "reduce/reduce.h"

#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "base/assert.h"
#include "reduce/half.h"
#include "reduce/kernels.h"

namespace tutti::reduce {
namespace {

// F16C (the half-precision conversions), from CPUID leaf 1: clang's __builtin_cpu_supports
// does not know the feature's name.
bool hasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}

}  // namespace

namespace detail {

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::kGeneric:
      return "generic";
    case Isa::kAvxF16c:
      return "avx_f16c";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Bf16:
      return "avx512_bf16";
  }
  return "?";
}

bool isaSupported(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  // Idempotent and cheap once libgcc's start-up constructor has filled the CPU model;
  // calling it covers use from other static constructors that run earlier. libgcc reports
  // the AVX and AVX-512 features only when the OS saves their register state (XCR0), so
  // these checks also cover OS support.
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kGeneric:
      return true;
    case Isa::kAvxF16c:
      return __builtin_cpu_supports("avx") && hasF16c();
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && hasF16c();
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    case Isa::kAvx512Bf16:
      return isaSupported(Isa::kAvx512) && __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == Isa::kGeneric;
#endif
}

Isa bestIsa() {
  // Asked on every combine: the CPU's features are read once per process (they do not
  // change while it runs), rather than through libgcc's checks on each call.
  static const Isa best = [] {
    for (int i = kNumIsas - 1; i > 0; --i) {
      const auto isa = static_cast<Isa>(i);
      if (isaSupported(isa)) return isa;
    }
    return Isa::kGeneric;
  }();
  return best;
}

CombineFn combineKernel(DataType dtype, ReduceOp op, Isa isa) {
  // Debug-only: combine() has just asked bestIsa(), so checking the CPU again on every call
  // would only repeat that work.
  TUTTI_DASSERT(isaSupported(isa));
  CombineFn fn = nullptr;
  switch (isa) {
    case Isa::kAvx512Bf16:
      // bfloat16 only; the other dtypes take the kAvx512 kernels.
      fn = avx512Bf16CombineKernel(dtype, op);
      if (fn == nullptr) fn = avx512CombineKernel(dtype, op);
      break;
    case Isa::kAvx512:
      fn = avx512CombineKernel(dtype, op);
      break;
    case Isa::kAvx2:
      fn = avx2CombineKernel(dtype, op);
      break;
    case Isa::kAvxF16c:
      fn = f16cCombineKernel(dtype, op);
      break;
    case Isa::kGeneric:
      break;
  }
  // Specialised sets may leave pairs out; the portable kernels cover them all.
  return fn != nullptr ? fn : genericCombineKernel(dtype, op);
}

AverageFn averageKernel(DataType dtype, Isa isa) {
  TUTTI_DASSERT(isaSupported(isa));
  AverageFn fn = nullptr;
  switch (isa) {
    case Isa::kAvx512Bf16:
      fn = avx512Bf16AverageKernel(dtype);
      if (fn == nullptr) fn = avx512AverageKernel(dtype);
      break;
    case Isa::kAvx512:
      fn = avx512AverageKernel(dtype);
      break;
    case Isa::kAvx2:
      fn = avx2AverageKernel(dtype);
      break;
    case Isa::kAvxF16c:  // no division kernels of its own
    case Isa::kGeneric:
      break;
  }
  // The vector sets divide only the floating types; integers stay portable.
  return fn != nullptr ? fn : genericAverageKernel(dtype);
}

CopyFn streamCopyKernel(Isa isa) {
  TUTTI_DASSERT(isaSupported(isa));
  CopyFn fn = nullptr;
  switch (isa) {
    case Isa::kAvx512Bf16:
    case Isa::kAvx512:
      fn = avx512StreamCopyKernel();
      break;
    case Isa::kAvx2:
      fn = avx2StreamCopyKernel();
      break;
    case Isa::kAvxF16c:
    case Isa::kGeneric:
      break;
  }
  return fn != nullptr ? fn : [](void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
  };
}

CopyTwoFn streamCopyTwoKernel(Isa isa) {
  TUTTI_DASSERT(isaSupported(isa));
  CopyTwoFn fn = nullptr;
  switch (isa) {
    case Isa::kAvx512Bf16:
    case Isa::kAvx512:
      fn = avx512StreamCopyTwoKernel();
      break;
    case Isa::kAvx2:
      fn = avx2StreamCopyTwoKernel();
      break;
    case Isa::kAvxF16c:
    case Isa::kGeneric:
      break;
  }
  return fn != nullptr ? fn : [](void* cached, void* dst, const void* src, std::size_t bytes) {
    std::memcpy(cached, src, bytes);
    std::memcpy(dst, src, bytes);
  };
}

}  // namespace detail

namespace {

// True when [p, p + bytes) and [q, q + bytes) share a byte but do not start at the same
// address: the one aliasing the kernels cannot handle.
bool overlapsPartially(const void* p, const void* q, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  const auto y = reinterpret_cast<std::uintptr_t>(q);
  return x != y && x < y + bytes && y < x + bytes;
}

bool overlaps(const void* p, const void* q, std::size_t bytes) {
  return p == q || overlapsPartially(p, q, bytes);
}

}  // namespace

void combine(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
             ReduceOp op, std::size_t outputBytes) {
  // Callers validate user input; an invalid enum here is tutti's own bug.
  TUTTI_ASSERT_CMP(static_cast<int>(dtype), <, kNumDataTypes);
  TUTTI_ASSERT_CMP(static_cast<int>(op), <, kNumReduceOps);
  if (count == 0) return;
  TUTTI_ASSERT(dst != nullptr && a != nullptr && b != nullptr);
  const std::size_t bytes = count * dataTypeSize(dtype);
  TUTTI_ASSERT(!overlapsPartially(dst, a, bytes) && !overlapsPartially(dst, b, bytes));
  const detail::CombineFn fn = detail::combineKernel(dtype, op, detail::bestIsa());
  TUTTI_ASSERT(fn != nullptr);
  fn(dst, a, b, count, std::max(bytes, outputBytes));
}

namespace {
std::atomic<std::size_t> gStreamingFrom{kCopyStreamingBytes};
}  // namespace

std::size_t streamingFrom() { return gStreamingFrom.load(std::memory_order_relaxed); }

void setStreamingFrom(std::size_t bytes) {
  gStreamingFrom.store(bytes, std::memory_order_relaxed);
}

void copy(void* dst, const void* src, std::size_t bytes, std::size_t outputBytes) {
  if (bytes == 0 || dst == src) return;
  TUTTI_ASSERT(dst != nullptr && src != nullptr);
  if (std::max(bytes, outputBytes) < streamingFrom() ||
      overlapsPartially(dst, src, bytes)) {
    std::memmove(dst, src, bytes);
    return;
  }
  static const detail::CopyFn stream = detail::streamCopyKernel(detail::bestIsa());
  stream(dst, src, bytes);
}

void copyTwo(void* cached, void* dst, const void* src, std::size_t bytes,
             std::size_t outputBytes) {
  if (bytes == 0) return;
  TUTTI_ASSERT(cached != nullptr && dst != nullptr && src != nullptr);
  TUTTI_ASSERT(!overlaps(cached, src, bytes) && !overlaps(cached, dst, bytes));
  if (std::max(bytes, outputBytes) < streamingFrom() || overlaps(dst, src, bytes)) {
    std::memcpy(cached, src, bytes);
    copy(dst, src, bytes, outputBytes);
    return;
  }
  static const detail::CopyTwoFn stream = detail::streamCopyTwoKernel(detail::bestIsa());
  stream(cached, dst, src, bytes);
}

void finalize(void* buf, std::size_t count, DataType dtype, ReduceOp op, int worldSize) {
  TUTTI_ASSERT_CMP(static_cast<int>(dtype), <, kNumDataTypes);
  TUTTI_ASSERT_CMP(static_cast<int>(op), <, kNumReduceOps);
  TUTTI_ASSERT_CMP(worldSize, >, 0);
  // Dividing by 1 is exact for every type, so skipping that pass returns the same values
  // (only a signalling NaN differs: it stays signalling instead of being quieted).
  if (op != ReduceOp::kAvg || count == 0 || worldSize == 1) return;
  TUTTI_ASSERT(buf != nullptr);
  const detail::AverageFn fn = detail::averageKernel(dtype, detail::bestIsa());
  TUTTI_ASSERT(fn != nullptr);
  fn(buf, count, worldSize);
}

float halfToFloat(std::uint16_t h) { return detail::halfBitsToFloat(h); }
std::uint16_t floatToHalf(float f) { return detail::floatToHalfBits(f); }
float bfloat16ToFloat(std::uint16_t b) { return detail::bfloat16BitsToFloat(b); }
std::uint16_t floatToBfloat16(float f) { return detail::floatToBfloat16Bits(f); }

}  // namespace tutti::reduce
