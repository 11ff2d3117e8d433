// float16 kernels using the F16C conversion instructions (VCVTPH2PS / VCVTPS2PH) on 8
// lanes of AVX. The portable float16 path converts with integer bit manipulation and is
// several times slower; this one is only reached after isaSupported(Isa::kAvxF16c) said
// yes at run time (see reduce.cc), so the file is built for the baseline target and only
// the functions below carry target("avx,f16c"). That keeps AVX instructions out of any
// inline function the linker might share with other files.
//
// Results are bit-identical to the portable path: both round to nearest-even once, keep
// float16 subnormals, and quiet NaNs the same way (reduce/half.h). Min and max follow the
// same NaN and signed-zero rules as kernels_generic.cc. The only freedom left is which
// payload survives when both operands are NaN: the compiler may commute an add, in either
// file.

#include <cstdint>
#include <cstring>

#include "reduce/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace tutti::reduce::detail {
namespace {

struct SumV {
  __attribute__((target("avx,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    return _mm256_add_ps(a, b);
  }
};

struct ProdV {
  __attribute__((target("avx,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    return _mm256_mul_ps(a, b);
  }
};

// Selects, lane by lane: the ordered pick, then the signed-zero fix for equal operands
// (`tied`), then a quiet NaN when either operand is NaN.
__attribute__((target("avx,f16c"))) inline __m256 minMaxSelect(__m256 a, __m256 b, __m256 ordered,
                                                               __m256 tied) {
  const __m256 eq = _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
  const __m256 unordered = _mm256_cmp_ps(a, b, _CMP_UNORD_Q);
  const __m256 r = _mm256_blendv_ps(ordered, tied, eq);
  return _mm256_blendv_ps(r, _mm256_add_ps(a, b), unordered);
}

struct MinV {
  __attribute__((target("avx,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    const __m256 ordered = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
    return minMaxSelect(a, b, ordered, _mm256_or_ps(a, b));
  }
};

struct MaxV {
  __attribute__((target("avx,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    const __m256 ordered = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, _CMP_GT_OQ));
    return minMaxSelect(a, b, ordered, _mm256_and_ps(a, b));
  }
};

template <typename Op>
__attribute__((target("avx,f16c"))) inline __m128i step(const std::uint16_t* a,
                                                        const std::uint16_t* b) {
  const __m256 va = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
  const __m256 vb = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  return _mm256_cvtps_ph(Op::apply(va, vb), _MM_FROUND_TO_NEAREST_INT);
}

// Each step loads its 8 elements of a and b before storing 8 elements of dst at the same
// index, so dst may equal a or b. The tail goes through zero-padded stack copies rather
// than a scalar loop, so that every element takes the same instructions.
template <typename Op>
__attribute__((target("avx,f16c"))) void combineF16c(void* dst, const void* a, const void* b,
                                                     std::size_t count,
                                                     std::size_t /*outputBytes: cached stores*/) {
  constexpr std::size_t kLanes = 8;
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* pa = static_cast<const std::uint16_t*>(a);
  const auto* pb = static_cast<const std::uint16_t*>(b);
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), step<Op>(pa + i, pb + i));
  }
  if (i < count) {
    const std::size_t rest = (count - i) * sizeof(std::uint16_t);
    std::uint16_t ta[kLanes] = {};
    std::uint16_t tb[kLanes] = {};
    std::uint16_t td[kLanes];
    std::memcpy(ta, pa + i, rest);
    std::memcpy(tb, pb + i, rest);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(td), step<Op>(ta, tb));
    std::memcpy(d + i, td, rest);
  }
}

}  // namespace

CombineFn f16cCombineKernel(DataType dtype, ReduceOp op) {
  if (dtype != DataType::kFloat16) return nullptr;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return &combineF16c<SumV>;
    case ReduceOp::kProd:
      return &combineF16c<ProdV>;
    case ReduceOp::kMin:
      return &combineF16c<MinV>;
    case ReduceOp::kMax:
      return &combineF16c<MaxV>;
  }
  return nullptr;
}

}  // namespace tutti::reduce::detail

#else  // not x86: no F16C kernels; isaSupported(kAvxF16c) is false there.

namespace tutti::reduce::detail {
CombineFn f16cCombineKernel(DataType, ReduceOp) { return nullptr; }
}  // namespace tutti::reduce::detail

#endif
