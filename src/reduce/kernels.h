#pragma once
// Internal interface between reduce.cc (argument checks and the single dispatch point) and
// the kernel files, one per instruction set. Tests include it to run every kernel set this
// CPU supports against the same reference, not only the one combine() would pick.

#include <cstddef>
#include <cstdint>

#include "tutti/types.h"

namespace tutti::reduce::detail {

/// dst[i] = a[i] op b[i] for i < count over one (dtype, op). `dst` may equal `a`, `b` or
/// both; partial overlap is not allowed. Never fails, never blocks. `outputBytes` is the
/// size of the whole output that this call writes a piece of (the bytes of `count` elements,
/// or more when a message is reduced piece by piece): the SIMD kernels write a large output
/// with non-temporal stores (kernels_simd.h), whatever the size of the piece.
using CombineFn = void (*)(void* dst, const void* a, const void* b, std::size_t count,
                           std::size_t outputBytes);

/// buf[i] /= worldSize for i < count over one dtype (the kAvg final step). worldSize > 1.
using AverageFn = void (*)(void* buf, std::size_t count, int worldSize);

/// dst = src over `bytes`, no overlap, with non-temporal stores for the whole lines of
/// dst (the portable kernel is memcpy). Never fails, never blocks.
using CopyFn = void (*)(void* dst, const void* src, std::size_t bytes);

/// cached = src and dst = src over `bytes` in one pass over src, none of the three
/// overlapping: cached with normal stores, the whole lines of dst with non-temporal ones
/// (the portable kernel is two memcpys). Never fails, never blocks.
using CopyTwoFn = void (*)(void* cached, void* dst, const void* src, std::size_t bytes);

/// Instruction sets that have their own kernels, in increasing order: a CPU that supports
/// one usually supports every one before it, and bestIsa() picks the last supported one.
/// kGeneric is portable C++ compiled for the baseline target and auto-vectorised; kAvxF16c
/// covers float16 only and falls back to kGeneric for the rest; kAvx2 and the AVX-512 sets
/// cover every (dtype, op) pair. All of them give bit-identical results (reduce.h).
enum class Isa : std::uint8_t {
  kGeneric = 0,
  kAvxF16c,     ///< AVX + F16C: hardware float16 conversion, 8 lanes (float16 only).
  kAvx2,        ///< AVX2 + F16C: 256-bit kernels for every dtype x op.
  kAvx512,      ///< AVX-512 F+BW+VL+DQ: 512-bit kernels, masked tails.
  kAvx512Bf16,  ///< kAvx512 plus AVX512-BF16's float32 -> bfloat16 rounding instruction.
};
inline constexpr int kNumIsas = 5;

/// Short lower-case name of `isa` ("generic", "avx2", ...), for tests and benchmarks.
const char* isaName(Isa isa);

/// True when this CPU (and OS) can run the kernels of `isa`. Cheap: reads the CPU model
/// libgcc caches at start-up, so it may be called once per combine().
bool isaSupported(Isa isa);

/// The best instruction set this CPU supports.
Isa bestIsa();

/// The one place that maps (dtype, op, isa) to a kernel; reduce.cc and the tests both go
/// through it. Returns nullptr only for an invalid dtype or op. `isa` must be supported.
CombineFn combineKernel(DataType dtype, ReduceOp op, Isa isa);

/// Division kernel for kAvg's final step with `isa`'s instructions (the integer types
/// always use the portable kernel); nullptr for an invalid dtype. `isa` must be supported.
AverageFn averageKernel(DataType dtype, Isa isa);

/// The streaming copy of `isa` (AVX-512 and AVX2 have their own; the others share the
/// portable one). `isa` must be supported.
CopyFn streamCopyKernel(Isa isa);

/// The streaming copy into two destinations of `isa` (the same sets as streamCopyKernel).
CopyTwoFn streamCopyTwoKernel(Isa isa);

// Per-instruction-set tables, each defined in its own file. They return nullptr for the
// pairs they do not implement; callers go through combineKernel() / averageKernel().
CombineFn genericCombineKernel(DataType dtype, ReduceOp op);
AverageFn genericAverageKernel(DataType dtype);
CombineFn f16cCombineKernel(DataType dtype, ReduceOp op);
CombineFn avx2CombineKernel(DataType dtype, ReduceOp op);
AverageFn avx2AverageKernel(DataType dtype);
CombineFn avx512CombineKernel(DataType dtype, ReduceOp op);
AverageFn avx512AverageKernel(DataType dtype);
CopyFn avx2StreamCopyKernel();
CopyFn avx512StreamCopyKernel();
CopyTwoFn avx2StreamCopyTwoKernel();
CopyTwoFn avx512StreamCopyTwoKernel();
// bfloat16 only: every other dtype is served by the kAvx512 tables.
CombineFn avx512Bf16CombineKernel(DataType dtype, ReduceOp op);
AverageFn avx512Bf16AverageKernel(DataType dtype);

}  // namespace tutti::reduce::detail
