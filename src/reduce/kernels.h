#pragma once
// Internal interface between reduce.cc (argument checks and the single dispatch point) and
// the kernel files, one per instruction set. Tests include it to run every kernel set this
// CPU supports against the same reference, not only the one combine() would pick.

#include <cstddef>
#include <cstdint>

#include "tutti/types.h"

namespace tutti::reduce::detail {

/// dst[i] = a[i] op b[i] for i < count over one (dtype, op). `dst` may equal `a`, `b` or
/// both; partial overlap is not allowed. Never fails, never blocks.
using CombineFn = void (*)(void* dst, const void* a, const void* b, std::size_t count);

/// buf[i] /= worldSize for i < count over one dtype (the kAvg final step). worldSize > 1.
using AverageFn = void (*)(void* buf, std::size_t count, int worldSize);

/// Instruction sets that have their own kernels. kGeneric is portable C++ compiled for the
/// baseline target and auto-vectorised; the others cover only some (dtype, op) pairs and
/// fall back to kGeneric for the rest.
enum class Isa : std::uint8_t {
  kGeneric = 0,
  kAvxF16c,  ///< AVX + F16C: hardware float16 conversion, 8 lanes (float16 only).
};
inline constexpr int kNumIsas = 2;

/// True when this CPU (and OS) can run the kernels of `isa`. Cheap: reads the CPU model
/// libgcc caches at start-up, so it may be called once per combine().
bool isaSupported(Isa isa);

/// The best instruction set this CPU supports.
Isa bestIsa();

/// The one place that maps (dtype, op, isa) to a kernel; reduce.cc and the tests both go
/// through it. Returns nullptr only for an invalid dtype or op. `isa` must be supported.
CombineFn combineKernel(DataType dtype, ReduceOp op, Isa isa);

/// Division kernel for kAvg's final step; nullptr for an invalid dtype.
AverageFn averageKernel(DataType dtype);

// Per-instruction-set tables, each defined in its own file. They return nullptr for the
// pairs they do not implement; callers go through combineKernel() instead.
CombineFn genericCombineKernel(DataType dtype, ReduceOp op);
AverageFn genericAverageKernel(DataType dtype);
CombineFn f16cCombineKernel(DataType dtype, ReduceOp op);

}  // namespace tutti::reduce::detail
