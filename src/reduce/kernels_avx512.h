#pragma once
// AVX-512 lane types and formats, shared by kernels_avx512.cc (every dtype x op) and
// kernels_avx512_bf16.cc (bfloat16 with AVX512-BF16's rounding instruction). Both files are
// compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq (see CMakeLists.txt); like
// kernels_simd.h, everything here has internal linkage and must stay that way.
//
// One 512-bit register per step. Tails use masked loads and stores: the masked-off lanes are
// neither read (no fault past the end of a buffer) nor written, and read as zero. Results are
// bit-identical to kernels_generic.cc, as for the AVX2 set (kernels_avx2.cc).

// GCC 12's AVX-512 intrinsics header initialises its "undefined" vectors from themselves,
// which -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593). The warning
// is switched off for the header's own lines only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cstddef>
#include <cstdint>

#include "reduce/kernels_simd.h"

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || \
    !defined(__AVX512DQ__)
#error "kernels_avx512.h needs -mavx512f -mavx512bw -mavx512vl -mavx512dq (see CMakeLists.txt)"
#endif

namespace tutti::reduce::detail {
namespace {

// The low n bits set, for the n < lane-count elements of a tail.
inline std::uint64_t lowBits(std::size_t n) { return (std::uint64_t{1} << n) - 1; }

// ---- integer lane types, by element width -------------------------------------------------

struct IntLanes {
  using V = __m512i;
  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(void* p, V v) { _mm512_storeu_si512(p, v); }
  static void stream(void* p, V v) { _mm512_stream_si512(static_cast<__m512i*>(p), v); }
};

struct ByteLanes : IntLanes {
  static V loadN(const void* p, std::size_t n) { return _mm512_maskz_loadu_epi8(lowBits(n), p); }
  static void storeN(void* p, V v, std::size_t n) { _mm512_mask_storeu_epi8(p, lowBits(n), v); }
  // Products modulo 256 (the same bits for signed and unsigned): the low byte of a 16-bit
  // product is the product of the low bytes; (a >> 8) * (b & 0xff00) has the product of the
  // high bytes in its high byte. The blend takes the odd bytes from the second.
  static V prod(V a, V b) {
    const V even = _mm512_mullo_epi16(a, b);
    const V odd =
        _mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_and_si512(b, _mm512_set1_epi16(-256)));
    return _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaaull, even, odd);
  }
  static V sum(V a, V b) { return _mm512_add_epi8(a, b); }
};

struct DwordLanes : IntLanes {
  static V loadN(const void* p, std::size_t n) {
    return _mm512_maskz_loadu_epi32(static_cast<__mmask16>(lowBits(n)), p);
  }
  static void storeN(void* p, V v, std::size_t n) {
    _mm512_mask_storeu_epi32(p, static_cast<__mmask16>(lowBits(n)), v);
  }
  static V sum(V a, V b) { return _mm512_add_epi32(a, b); }
  static V prod(V a, V b) { return _mm512_mullo_epi32(a, b); }
};

// AVX-512DQ has the 64-bit multiply (low half, the same bits for signed and unsigned).
struct QwordLanes : IntLanes {
  static V loadN(const void* p, std::size_t n) {
    return _mm512_maskz_loadu_epi64(static_cast<__mmask8>(lowBits(n)), p);
  }
  static void storeN(void* p, V v, std::size_t n) {
    _mm512_mask_storeu_epi64(p, static_cast<__mmask8>(lowBits(n)), v);
  }
  static V sum(V a, V b) { return _mm512_add_epi64(a, b); }
  static V prod(V a, V b) { return _mm512_mullo_epi64(a, b); }
};

struct I8 : ByteLanes {
  static V min(V a, V b) { return _mm512_min_epi8(a, b); }
  static V max(V a, V b) { return _mm512_max_epi8(a, b); }
};
struct U8 : ByteLanes {
  static V min(V a, V b) { return _mm512_min_epu8(a, b); }
  static V max(V a, V b) { return _mm512_max_epu8(a, b); }
};
struct I32 : DwordLanes {
  static V min(V a, V b) { return _mm512_min_epi32(a, b); }
  static V max(V a, V b) { return _mm512_max_epi32(a, b); }
};
struct U32 : DwordLanes {
  static V min(V a, V b) { return _mm512_min_epu32(a, b); }
  static V max(V a, V b) { return _mm512_max_epu32(a, b); }
};
struct I64 : QwordLanes {
  static V min(V a, V b) { return _mm512_min_epi64(a, b); }
  static V max(V a, V b) { return _mm512_max_epi64(a, b); }
};
struct U64 : QwordLanes {
  static V min(V a, V b) { return _mm512_min_epu64(a, b); }
  static V max(V a, V b) { return _mm512_max_epu64(a, b); }
};

// ---- floating lane types --------------------------------------------------------------------

// Min/max as in kernels_generic.cc, with mask registers instead of blends: the ordered
// pick; for equal operands the OR (min: -0 wins) or AND (max: +0 wins) of their bits; a + b
// (a quiet NaN) where either is NaN. The _Q predicates do not signal, like C++'s operators.
struct F32 {
  using V = __m512;
  static V load(const void* p) { return _mm512_loadu_ps(p); }
  static void store(void* p, V v) { _mm512_storeu_ps(p, v); }
  static void stream(void* p, V v) { _mm512_stream_ps(static_cast<float*>(p), v); }
  static V loadN(const void* p, std::size_t n) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>(lowBits(n)), p);
  }
  static void storeN(void* p, V v, std::size_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>(lowBits(n)), v);
  }
  static V sum(V a, V b) { return _mm512_add_ps(a, b); }
  static V prod(V a, V b) { return _mm512_mul_ps(a, b); }
  static V min(V a, V b) {
    const V ordered = _mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), a);
    const V tied = _mm512_mask_or_ps(ordered, _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_add_ps(tied, _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), a, b);
  }
  static V max(V a, V b) {
    const V ordered = _mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), a);
    const V tied = _mm512_mask_and_ps(ordered, _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_add_ps(tied, _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), a, b);
  }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V divisor(int worldSize) { return _mm512_set1_ps(static_cast<float>(worldSize)); }
};

struct F64 {
  using V = __m512d;
  static V load(const void* p) { return _mm512_loadu_pd(p); }
  static void store(void* p, V v) { _mm512_storeu_pd(p, v); }
  static void stream(void* p, V v) { _mm512_stream_pd(static_cast<double*>(p), v); }
  static V loadN(const void* p, std::size_t n) {
    return _mm512_maskz_loadu_pd(static_cast<__mmask8>(lowBits(n)), p);
  }
  static void storeN(void* p, V v, std::size_t n) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>(lowBits(n)), v);
  }
  static V sum(V a, V b) { return _mm512_add_pd(a, b); }
  static V prod(V a, V b) { return _mm512_mul_pd(a, b); }
  static V min(V a, V b) {
    const V ordered = _mm512_mask_mov_pd(b, _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ), a);
    const V tied = _mm512_mask_or_pd(ordered, _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_add_pd(tied, _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q), a, b);
  }
  static V max(V a, V b) {
    const V ordered = _mm512_mask_mov_pd(b, _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ), a);
    const V tied = _mm512_mask_and_pd(ordered, _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_add_pd(tied, _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q), a, b);
  }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V divisor(int worldSize) { return _mm512_set1_pd(static_cast<double>(worldSize)); }
};

// ---- formats ------------------------------------------------------------------------------

// Elements stored as they are computed: one 64-byte register per step.
template <typename S, typename L>
struct Native {
  using Storage = S;
  using Lanes = L;
  static constexpr std::size_t kLanes = 64 / sizeof(S);
  static typename L::V load(const S* p) { return L::load(p); }
  static typename L::V loadN(const S* p, std::size_t n) { return L::loadN(p, n); }
  static void store(S* p, typename L::V v) { L::store(p, v); }
  static void stream(S* p, typename L::V v) { L::stream(p, v); }
  static void storeN(S* p, typename L::V v, std::size_t n) { L::storeN(p, v, n); }
};

// float16, 16 elements per step: VCVTPH2PS widens exactly; VCVTPS2PH rounds to nearest even
// with the same NaN and subnormal results as floatToHalfBits().
struct HalfFormat {
  using Storage = std::uint16_t;
  using Lanes = F32;
  static constexpr std::size_t kLanes = 16;
  static __m512 load(const std::uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 loadN(const std::uint16_t* p, std::size_t n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(static_cast<__mmask16>(lowBits(n)), p));
  }
  static void store(std::uint16_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void stream(std::uint16_t* p, __m512 v) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void storeN(std::uint16_t* p, __m512 v, std::size_t n) {
    _mm256_mask_storeu_epi16(p, static_cast<__mmask16>(lowBits(n)),
                             _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

using Bf16Lanes = PairLanes<F32>;

// bfloat16, 32 elements (one 64-byte register) per step. Each 32-bit lane holds two
// elements, the even one in its low half and the odd one in its high half, so widening
// takes one bit operation per register of float32: the odd elements are the lanes with the
// low half cleared, the even ones the lanes shifted left by 16 (both exact; NaNs are left
// as they are, every operator quiets them, as in the portable kernel). `Pack` rounds the
// two registers back and interleaves them into one.
template <typename Pack>
struct Bf16Format {
  using Storage = std::uint16_t;
  using Lanes = Bf16Lanes;
  static constexpr std::size_t kLanes = 32;
  static Bf16Lanes::V widen(__m512i x) {
    const __m512i highHalves = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(x, 16)),
            _mm512_castsi512_ps(_mm512_and_si512(x, highHalves))};
  }
  static Bf16Lanes::V load(const std::uint16_t* p) { return widen(_mm512_loadu_si512(p)); }
  static Bf16Lanes::V loadN(const std::uint16_t* p, std::size_t n) {
    return widen(_mm512_maskz_loadu_epi16(static_cast<__mmask32>(lowBits(n)), p));
  }
  static void store(std::uint16_t* p, Bf16Lanes::V v) { _mm512_storeu_si512(p, Pack::pack(v)); }
  static void stream(std::uint16_t* p, Bf16Lanes::V v) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), Pack::pack(v));
  }
  static void storeN(std::uint16_t* p, Bf16Lanes::V v, std::size_t n) {
    _mm512_mask_storeu_epi16(p, static_cast<__mmask32>(lowBits(n)), Pack::pack(v));
  }
};

// Rounding by integer arithmetic, as floatToBfloat16Bits() does: add 0x7fff plus the kept
// mantissa's low bit, except for NaNs, which are truncated with the quiet bit set.
struct Bf16ShiftPack {
  // Each lane's bfloat16 bits in its upper half (the lower half is left over).
  static __m512i roundHigh(__m512 v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x00400000));
  }
  // Even elements from lo (moved to the low halves), odd ones from hi: the blend takes the
  // odd 16-bit words from its second operand.
  static __m512i pack(Bf16Lanes::V v) {
    return _mm512_mask_blend_epi16(0xaaaaaaaau, _mm512_srli_epi32(roundHigh(v.lo), 16),
                                   roundHigh(v.hi));
  }
};

struct Formats {
  using Int8 = Native<std::int8_t, I8>;
  using Uint8 = Native<std::uint8_t, U8>;
  using Int32 = Native<std::int32_t, I32>;
  using Uint32 = Native<std::uint32_t, U32>;
  using Int64 = Native<std::int64_t, I64>;
  using Uint64 = Native<std::uint64_t, U64>;
  using Float16 = HalfFormat;
  using BFloat16 = Bf16Format<Bf16ShiftPack>;
  using Float32 = Native<float, F32>;
  using Float64 = Native<double, F64>;
};

}  // namespace
}  // namespace tutti::reduce::detail
