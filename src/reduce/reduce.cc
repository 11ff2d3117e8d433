// Entry points of the reduce layer: argument checks, CPU feature detection and the one
// place that chooses a kernel for (dtype, op, instruction set). The kernels themselves
// live in kernels_<isa>.cc.

#include "reduce/reduce.h"

#include <cstdint>

#include "base/assert.h"
#include "reduce/half.h"
#include "reduce/kernels.h"

namespace tutti::reduce {
namespace detail {

bool isaSupported(Isa isa) {
  switch (isa) {
    case Isa::kGeneric:
      return true;
    case Isa::kAvxF16c:
#if defined(__x86_64__) || defined(__i386__)
      // Idempotent and cheap once libgcc's start-up constructor has filled the CPU model;
      // calling it covers use from other static constructors that run earlier. The "avx"
      // bit also checks that the OS saves the YMM registers (XCR0).
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#else
      return false;
#endif
  }
  return false;
}

Isa bestIsa() { return isaSupported(Isa::kAvxF16c) ? Isa::kAvxF16c : Isa::kGeneric; }

CombineFn combineKernel(DataType dtype, ReduceOp op, Isa isa) {
  // Debug-only: combine() has just asked bestIsa(), so checking the CPU again on every call
  // would only repeat that work.
  TUTTI_DASSERT(isaSupported(isa));
  CombineFn fn = nullptr;
  switch (isa) {
    case Isa::kAvxF16c:
      fn = f16cCombineKernel(dtype, op);
      break;
    case Isa::kGeneric:
      break;
  }
  // Specialised sets cover only some pairs; the portable kernels cover them all.
  return fn != nullptr ? fn : genericCombineKernel(dtype, op);
}

AverageFn averageKernel(DataType dtype) { return genericAverageKernel(dtype); }

}  // namespace detail

namespace {

// True when [p, p + bytes) and [q, q + bytes) share a byte but do not start at the same
// address: the one aliasing the kernels cannot handle.
bool overlapsPartially(const void* p, const void* q, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  const auto y = reinterpret_cast<std::uintptr_t>(q);
  return x != y && x < y + bytes && y < x + bytes;
}

}  // namespace

void combine(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
             ReduceOp op) {
  // Callers validate user input; an invalid enum here is tutti's own bug.
  TUTTI_ASSERT_CMP(static_cast<int>(dtype), <, kNumDataTypes);
  TUTTI_ASSERT_CMP(static_cast<int>(op), <, kNumReduceOps);
  if (count == 0) return;
  TUTTI_ASSERT(dst != nullptr && a != nullptr && b != nullptr);
  const std::size_t bytes = count * dataTypeSize(dtype);
  TUTTI_ASSERT(!overlapsPartially(dst, a, bytes) && !overlapsPartially(dst, b, bytes));
  const detail::CombineFn fn = detail::combineKernel(dtype, op, detail::bestIsa());
  TUTTI_ASSERT(fn != nullptr);
  fn(dst, a, b, count);
}

void finalize(void* buf, std::size_t count, DataType dtype, ReduceOp op, int worldSize) {
  TUTTI_ASSERT_CMP(static_cast<int>(dtype), <, kNumDataTypes);
  TUTTI_ASSERT_CMP(static_cast<int>(op), <, kNumReduceOps);
  TUTTI_ASSERT_CMP(worldSize, >, 0);
  // Dividing by 1 is exact for every type, so skipping that pass returns the same values
  // (only a signalling NaN differs: it stays signalling instead of being quieted).
  if (op != ReduceOp::kAvg || count == 0 || worldSize == 1) return;
  TUTTI_ASSERT(buf != nullptr);
  const detail::AverageFn fn = detail::averageKernel(dtype);
  TUTTI_ASSERT(fn != nullptr);
  fn(buf, count, worldSize);
}

float halfToFloat(std::uint16_t h) { return detail::halfBitsToFloat(h); }
std::uint16_t floatToHalf(float f) { return detail::floatToHalfBits(f); }
float bfloat16ToFloat(std::uint16_t b) { return detail::bfloat16BitsToFloat(b); }
std::uint16_t floatToBfloat16(float f) { return detail::floatToBfloat16Bits(f); }

}  // namespace tutti::reduce
