// bfloat16 kernels for CPUs with AVX512-BF16, whose VCVTNE2PS2BF16 rounds two registers of
// float32 to bfloat16 (nearest even) and packs them into one. Every other dtype, and CPUs
// without the extension, use kernels_avx512.cc. Compiled with the AVX-512 flags plus
// -mavx512bf16 (see CMakeLists.txt); reached only after isaSupported(Isa::kAvx512Bf16).
// The loads, the arithmetic and the element layout are kernels_avx512.h's Bf16Format; only
// the rounding differs.
//
// The instruction agrees with floatToBfloat16Bits() on zeros, normal numbers (including the
// carry to infinity), infinities and NaNs (truncated, quiet bit set), but treats a float32
// subnormal as zero, where the portable rounding keeps it (bfloat16 has float32's exponent
// range, so such values are representable). Sums and products of bfloat16 subnormals
// produce them, so a step holding a subnormal is rounded by the shift-based code instead;
// the two agree on every other value, so which lanes take which path does not matter.

#include "reduce/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include "reduce/kernels_avx512.h"

#if !defined(__AVX512BF16__)
#error "kernels_avx512_bf16.cc needs -mavx512bf16 (see CMakeLists.txt)"
#endif

namespace tutti::reduce::detail {
namespace {

// VFPCLASSPS category bit for "denormal".
constexpr int kClassDenormal = 0x20;

// VCVTNE2PS2BF16 puts its second operand's 16 results in the low half and its first's in
// the high half: [lo0 .. lo15 | hi0 .. hi15]. lo holds the even elements and hi the odd
// ones (Bf16Format), so word k of the output is word k / 2 (k even) or 16 + k / 2 (k odd).
// clang-format off
alignas(64) constexpr std::uint16_t kInterleave[32] = {
    0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
    8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
// clang-format on

struct Bf16InstructionPack {
  static __m512i pack(Bf16Lanes::V v) {
    const int subnormals =
        _mm512_fpclass_ps_mask(v.lo, kClassDenormal) | _mm512_fpclass_ps_mask(v.hi, kClassDenormal);
    if (subnormals != 0) return Bf16ShiftPack::pack(v);
    // __m512bh is a 512-bit vector like __m512i; the cast only renames the type.
    const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(v.hi, v.lo);
    return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), halves);
  }
};

using Bf16InstructionFormat = Bf16Format<Bf16InstructionPack>;

}  // namespace

CombineFn avx512Bf16CombineKernel(DataType dtype, ReduceOp op) {
  return dtype == DataType::kBFloat16 ? pickOp<Bf16InstructionFormat>(op) : nullptr;
}

AverageFn avx512Bf16AverageKernel(DataType dtype) {
  return dtype == DataType::kBFloat16 ? &AverageLoop<Bf16InstructionFormat>::run : nullptr;
}

}  // namespace tutti::reduce::detail

#else  // not x86: no AVX512-BF16 kernels; isaSupported(kAvx512Bf16) is false there.

namespace tutti::reduce::detail {
CombineFn avx512Bf16CombineKernel(DataType, ReduceOp) { return nullptr; }
AverageFn avx512Bf16AverageKernel(DataType) { return nullptr; }
}  // namespace tutti::reduce::detail

#endif
