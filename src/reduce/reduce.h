#pragma once
// Reduction kernels: element-wise dtype x op over contiguous arrays. Pure functions with
// no I/O; the executor calls them on received segments. All functions are thread-safe
// (no shared state), never block and never fail: arguments are checked with TUTTI_ASSERT,
// because callers validate user input before it reaches this layer.

#include <cstddef>
#include <cstdint>

#include "tutti/types.h"

namespace tutti::reduce {

/// dst[i] = a[i] op b[i] for i < count. `dst` may alias `a` or `b` exactly (same pointer),
/// but must not partially overlap them. kAvg reduces as kSum; see finalize().
/// Integer sum and product wrap around (two's complement) for signed and unsigned types.
/// float16/bfloat16 are computed in float32 and rounded to nearest-even once per element.
/// Floating-point min/max: if either operand is NaN the result is a (quiet) NaN, and -0 is
/// treated as less than +0, so the result does not depend on operand order (except for
/// which NaN payload survives when both are NaN).
/// The kernel is chosen once per call from the dtype, the op and the CPU's features
/// (AVX-512, AVX2 or F16C when available, else portable code); every choice gives
/// bit-identical results, except for the payload of a NaN computed from two NaNs.
///
/// `outputBytes` is the size of the whole output when this call writes one piece of it (a
/// message reduced as it arrives): a large output is written with non-temporal stores,
/// which skip reading each line before writing it but leave it out of the caches, and the
/// choice must not change with the size of the pieces. 0: the output is these `count`
/// elements.
void combine(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
             ReduceOp op, std::size_t outputBytes = 0);

/// copy() writes outputs of at least this many bytes with non-temporal stores by default
/// (streamingFrom() says from what size they are written so now). Measured on
/// the development machine (2 cores, 260 MiB L3 reported), one thread: memcpy copies 64 MiB
/// at 5.1 GB/s, the AVX-512 streaming copy at 8.3-9.7; from 2 to 32 MiB both run at 12-16
/// GB/s (the copy stays in the caches), the streaming one never slower. The same threshold
/// as the combines' (kernels_simd.h, where the move from 32 MiB to 8 MiB is measured): a
/// result that would fit the caches stays there for its next reader.
inline constexpr std::size_t kCopyStreamingBytes = std::size_t{8} << 20;

/// The size from which copy(), copyTwo() and combine() write their outputs (in a buffer of
/// their own) with non-temporal stores, for the whole process: kCopyStreamingBytes until
/// setStreamingFrom() says otherwise. The threshold was measured on one machine and no
/// property of the host read so far predicts it (docs/host-rules.md), so it is the machine
/// model's streamingStoresFrom, which every communicator sets at creation (the ranks of a
/// host agree on one model; the last communicator created sets it). Any value gives the
/// same results: only where the output lands (the caches or memory) changes.
std::size_t streamingFrom();
void setStreamingFrom(std::size_t bytes);

/// dst = src over `bytes` (memmove's semantics: the ranges may overlap). A large output
/// (max(bytes, outputBytes) >= streamingFrom(), 8 MiB by default) that does not overlap src is
/// written with non-temporal stores where the CPU has them (AVX-512, AVX2): they skip
/// reading each destination line before writing it, about 1.8x memcpy's speed from memory
/// to memory here, and leave the copy out of the caches. `outputBytes` as for combine():
/// the size of the whole output this call writes a piece of, so that the stores do not
/// change with the size of the pieces.
void copy(void* dst, const void* src, std::size_t bytes, std::size_t outputBytes = 0);

/// cached = src and dst = src over `bytes`, reading src once: a piece that goes on to its
/// next reader through `cached` (normal stores: it stays in the caches) and out to `dst`,
/// written as copy(dst, src, bytes, outputBytes) would write it. cached overlaps neither
/// src nor dst; where dst overlaps src, the two copies are made one after the other.
void copyTwo(void* cached, void* dst, const void* src, std::size_t bytes,
             std::size_t outputBytes = 0);

/// Applies the operator's final step in place: for kAvg divides every element by
/// `worldSize` (integer division for integer types; float32 division for float16, bfloat16
/// and float32; float64 for float64). A no-op for the other operators.
/// Integer division applies to the stored (wrapped) sum and truncates toward zero for
/// signed types. worldSize must be >= 1; worldSize == 1 leaves the values unchanged.
void finalize(void* buf, std::size_t count, DataType dtype, ReduceOp op, int worldSize);

/// Conversions with round-to-nearest-even, NaN preserved (quiet), overflow to infinity.
/// float16 subnormals are converted exactly in both directions; widening is always exact.
/// A NaN keeps its sign and top payload bits and gets the quiet bit set.
float halfToFloat(std::uint16_t h);
std::uint16_t floatToHalf(float f);
float bfloat16ToFloat(std::uint16_t b);
std::uint16_t floatToBfloat16(float f);

}  // namespace tutti::reduce
