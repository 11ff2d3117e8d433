// AVX2 kernels for every (dtype, op): one 256-bit register per step, float16 through F16C
// and bfloat16 through integer shifts, both computed in float32. This file is compiled with
// -mavx2 -mf16c (see CMakeLists.txt) and only reached after isaSupported(Isa::kAvx2)
// said yes at run time; kernels_simd.h explains why nothing in it may have external
// linkage except the two table functions at the bottom.
//
// Results are bit-identical to kernels_generic.cc: integers wrap, float16/bfloat16 round
// once to nearest-even with the same NaN quieting (reduce/half.h), and min/max follow the
// same NaN and signed-zero rules. A tail of 4- and 8-byte elements is loaded and stored
// with lane masks (VPMASKMOV); AVX2 has no masked loads for bytes and halves, so their tails
// go through zero-padded stack copies of their elements, computed by the same instructions
// as the body.
//
// Three operations have no AVX2 instruction and are emulated: byte multiplication (two
// 16-bit multiplies), 64-bit multiplication (three 32x32->64 multiplies) and 64-bit
// min/max (a signed 64-bit compare, with the sign bit flipped for unsigned).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "reduce/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "reduce/kernels_simd.h"

#if !defined(__AVX2__) || !defined(__F16C__)
#error "kernels_avx2.cc needs -mavx2 -mf16c (see CMakeLists.txt)"
#endif

namespace tutti::reduce::detail {
namespace {

// ---- integer lane types -------------------------------------------------------------------

struct IntLanes {
  using V = __m256i;
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, V v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static void stream(void* p, V v) { _mm256_stream_si256(static_cast<__m256i*>(p), v); }

  // Products of bytes, modulo 256 (the same bits for signed and unsigned). The low byte of
  // a 16-bit product is the product of the low bytes; (a >> 8) * (b & 0xff00) puts the
  // product of the high bytes in the high byte and zeros below it.
  static V mulBytes(V a, V b) {
    const V even = _mm256_mullo_epi16(a, b);
    const V odd =
        _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_and_si256(b, _mm256_set1_epi16(-256)));
    return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)), odd);
  }

  // Products of 64-bit lanes modulo 2^64 from 32-bit halves: lo*lo + ((hi*lo + lo*hi) << 32).
  // hi*hi only reaches bits 64 and up. Signed and unsigned give the same bits.
  static V mulQwords(V a, V b) {
    const V low = _mm256_mul_epu32(a, b);
    const V cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                     _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
  }

  // All-ones lanes where a > b as unsigned 64-bit numbers: flipping the sign bit maps
  // unsigned order onto the signed order the only 64-bit compare uses.
  static V greaterU64(V a, V b) {
    const V bias = _mm256_set1_epi64x(-0x7fffffffffffffffLL - 1);
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias), _mm256_xor_si256(b, bias));
  }
};

struct I8 : IntLanes {
  static V sum(V a, V b) { return _mm256_add_epi8(a, b); }
  static V prod(V a, V b) { return mulBytes(a, b); }
  static V min(V a, V b) { return _mm256_min_epi8(a, b); }
  static V max(V a, V b) { return _mm256_max_epi8(a, b); }
};

struct U8 : IntLanes {
  static V sum(V a, V b) { return _mm256_add_epi8(a, b); }
  static V prod(V a, V b) { return mulBytes(a, b); }
  static V min(V a, V b) { return _mm256_min_epu8(a, b); }
  static V max(V a, V b) { return _mm256_max_epu8(a, b); }
};

struct I32 : IntLanes {
  static V sum(V a, V b) { return _mm256_add_epi32(a, b); }
  static V prod(V a, V b) { return _mm256_mullo_epi32(a, b); }
  static V min(V a, V b) { return _mm256_min_epi32(a, b); }
  static V max(V a, V b) { return _mm256_max_epi32(a, b); }
};

struct U32 : IntLanes {
  static V sum(V a, V b) { return _mm256_add_epi32(a, b); }
  static V prod(V a, V b) { return _mm256_mullo_epi32(a, b); }
  static V min(V a, V b) { return _mm256_min_epu32(a, b); }
  static V max(V a, V b) { return _mm256_max_epu32(a, b); }
};

// blendv_epi8(x, y, mask) takes y where mask is set: min takes b where a > b.
struct I64 : IntLanes {
  static V sum(V a, V b) { return _mm256_add_epi64(a, b); }
  static V prod(V a, V b) { return mulQwords(a, b); }
  static V min(V a, V b) { return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)); }
  static V max(V a, V b) { return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b)); }
};

struct U64 : IntLanes {
  static V sum(V a, V b) { return _mm256_add_epi64(a, b); }
  static V prod(V a, V b) { return mulQwords(a, b); }
  static V min(V a, V b) { return _mm256_blendv_epi8(a, b, greaterU64(a, b)); }
  static V max(V a, V b) { return _mm256_blendv_epi8(b, a, greaterU64(a, b)); }
};

// ---- floating lane types --------------------------------------------------------------------

// Min/max as in kernels_generic.cc: the ordered pick; for equal operands the OR (min: -0
// wins over +0) or AND (max: +0 wins) of their bits; a + b (a quiet NaN) when either is
// NaN. The predicates are the non-signalling (_Q) ones, like C++'s <, == and isnan.
struct F32 {
  using V = __m256;
  static V load(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
  static void store(void* p, V v) { _mm256_storeu_ps(static_cast<float*>(p), v); }
  static void stream(void* p, V v) { _mm256_stream_ps(static_cast<float*>(p), v); }
  static V sum(V a, V b) { return _mm256_add_ps(a, b); }
  static V prod(V a, V b) { return _mm256_mul_ps(a, b); }
  static V min(V a, V b) {
    const V ordered = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
    return fixup(a, b, ordered, _mm256_or_ps(a, b));
  }
  static V max(V a, V b) {
    const V ordered = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, _CMP_GT_OQ));
    return fixup(a, b, ordered, _mm256_and_ps(a, b));
  }
  static V fixup(V a, V b, V ordered, V tied) {
    const V r = _mm256_blendv_ps(ordered, tied, _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V divisor(int worldSize) { return _mm256_set1_ps(static_cast<float>(worldSize)); }
};

struct F64 {
  using V = __m256d;
  static V load(const void* p) { return _mm256_loadu_pd(static_cast<const double*>(p)); }
  static void store(void* p, V v) { _mm256_storeu_pd(static_cast<double*>(p), v); }
  static void stream(void* p, V v) { _mm256_stream_pd(static_cast<double*>(p), v); }
  static V sum(V a, V b) { return _mm256_add_pd(a, b); }
  static V prod(V a, V b) { return _mm256_mul_pd(a, b); }
  static V min(V a, V b) {
    const V ordered = _mm256_blendv_pd(b, a, _mm256_cmp_pd(a, b, _CMP_LT_OQ));
    return fixup(a, b, ordered, _mm256_or_pd(a, b));
  }
  static V max(V a, V b) {
    const V ordered = _mm256_blendv_pd(b, a, _mm256_cmp_pd(a, b, _CMP_GT_OQ));
    return fixup(a, b, ordered, _mm256_and_pd(a, b));
  }
  static V fixup(V a, V b, V ordered, V tied) {
    const V r = _mm256_blendv_pd(ordered, tied, _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_pd(r, _mm256_add_pd(a, b), _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
  }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V divisor(int worldSize) { return _mm256_set1_pd(static_cast<double>(worldSize)); }
};

// ---- formats ------------------------------------------------------------------------------

// Tails through the stack: `Fmt` (the derived format) supplies load/store of a full step.
template <typename Fmt, typename S, typename L, std::size_t kN>
struct StackTail {
  using Storage = S;
  using Lanes = L;
  static constexpr std::size_t kLanes = kN;
  static typename L::V loadN(const S* p, std::size_t n) {
    S tmp[kN] = {};
    std::memcpy(tmp, p, n * sizeof(S));
    return Fmt::load(tmp);
  }
  static void storeN(S* p, typename L::V v, std::size_t n) {
    S tmp[kN];
    Fmt::store(tmp, v);
    std::memcpy(p, tmp, n * sizeof(S));
  }
};

// Masks of the first n (< lanes) 32- or 64-bit lanes, for VPMASKMOV: a tail of 4- and 8-byte
// elements is loaded and stored in place, where the stack copies cost two calls to memcpy
// and a 32-byte load of what was just stored in pieces (a store-forwarding stall).
template <std::size_t kBytes>
__m256i laneMask(std::size_t n) {
  if constexpr (kBytes == 4)
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  else
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(n)),
                              _mm256_setr_epi64x(0, 1, 2, 3));
}

// The same 256 bits as another lane type (the second argument only picks the overload).
inline __m256 asLanes(__m256i x, __m256) { return _mm256_castsi256_ps(x); }
inline __m256d asLanes(__m256i x, __m256d) { return _mm256_castsi256_pd(x); }
inline __m256i asLanes(__m256i x, __m256i) { return x; }
inline __m256i asBits(__m256 v) { return _mm256_castps_si256(v); }
inline __m256i asBits(__m256d v) { return _mm256_castpd_si256(v); }
inline __m256i asBits(__m256i v) { return v; }

// Elements stored as they are computed: one 32-byte register per step. Masked lanes are
// neither read nor written (nor can they fault), and load as zero, as the stack tail's do.
template <typename S, typename L>
struct Native : StackTail<Native<S, L>, S, L, 32 / sizeof(S)> {
  static typename L::V load(const S* p) { return L::load(p); }
  static void store(S* p, typename L::V v) { L::store(p, v); }
  static void stream(S* p, typename L::V v) { L::stream(p, v); }
  static typename L::V loadN(const S* p, std::size_t n) {
    if constexpr (sizeof(S) == 4) {
      return asLanes(_mm256_maskload_epi32(reinterpret_cast<const int*>(p), laneMask<4>(n)),
                     typename L::V{});
    } else if constexpr (sizeof(S) == 8) {
      return asLanes(
          _mm256_maskload_epi64(reinterpret_cast<const long long*>(p), laneMask<8>(n)),
          typename L::V{});
    } else {
      return StackTail<Native<S, L>, S, L, 32 / sizeof(S)>::loadN(p, n);
    }
  }
  static void storeN(S* p, typename L::V v, std::size_t n) {
    if constexpr (sizeof(S) == 4) {
      _mm256_maskstore_epi32(reinterpret_cast<int*>(p), laneMask<4>(n), asBits(v));
    } else if constexpr (sizeof(S) == 8) {
      _mm256_maskstore_epi64(reinterpret_cast<long long*>(p), laneMask<8>(n), asBits(v));
    } else {
      StackTail<Native<S, L>, S, L, 32 / sizeof(S)>::storeN(p, v, n);
    }
  }
};

// float16: 8 elements (16 bytes) widened exactly by VCVTPH2PS; VCVTPS2PH rounds to nearest
// even with the same NaN and subnormal results as floatToHalfBits().
struct HalfFormat : StackTail<HalfFormat, std::uint16_t, F32, 8> {
  static __m256 load(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store(std::uint16_t* p, __m256 v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void stream(std::uint16_t* p, __m256 v) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

using Bf16Lanes = PairLanes<F32>;

// bfloat16, 16 elements (32 bytes) per step. Each 32-bit lane holds two elements, the even
// one in its low half and the odd one in its high half, so widening takes one bit operation
// per register of float32: the odd elements are the lanes with the low half cleared, the
// even ones the lanes shifted left by 16 (both exact; NaNs are left as they are, every
// operator quiets them, as in the portable kernel). Narrowing is floatToBfloat16Bits():
// add 0x7fff plus the kept mantissa's low bit, except for NaNs, which are truncated with
// the quiet bit set; a 16-bit blend then interleaves the two registers back into one.
struct Bf16Format : StackTail<Bf16Format, std::uint16_t, Bf16Lanes, 16> {
  static Bf16Lanes::V load(const std::uint16_t* p) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i highHalves = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)),
            _mm256_castsi256_ps(_mm256_and_si256(x, highHalves))};
  }
  static void store(std::uint16_t* p, Bf16Lanes::V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), pack(v));
  }
  static void stream(std::uint16_t* p, Bf16Lanes::V v) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), pack(v));
  }
  // vpblendw takes the odd 16-bit words (mask 0xaa, in each 128-bit half) from hi.
  static __m256i pack(Bf16Lanes::V v) {
    return _mm256_blend_epi16(_mm256_srli_epi32(roundHigh(v.lo), 16), roundHigh(v.hi), 0xaa);
  }
  // Each lane's bfloat16 bits in its upper half (the lower half is left over).
  static __m256i roundHigh(__m256 v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
    const __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(rounded, quiet, nan);
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
  using BFloat16 = Bf16Format;
  using Float32 = Native<float, F32>;
  using Float64 = Native<double, F64>;
};

}  // namespace

CombineFn avx2CombineKernel(DataType dtype, ReduceOp op) { return pickCombine<Formats>(dtype, op); }

AverageFn avx2AverageKernel(DataType dtype) { return pickAverage<Formats>(dtype); }

CopyFn avx2StreamCopyKernel() { return &streamCopy<IntLanes>; }

CopyTwoFn avx2StreamCopyTwoKernel() { return &streamCopyTwo<IntLanes>; }

}  // namespace tutti::reduce::detail

#else  // not x86: no AVX2 kernels; isaSupported(kAvx2) is false there.

namespace tutti::reduce::detail {
CombineFn avx2CombineKernel(DataType, ReduceOp) { return nullptr; }
AverageFn avx2AverageKernel(DataType) { return nullptr; }
CopyFn avx2StreamCopyKernel() { return nullptr; }
CopyTwoFn avx2StreamCopyTwoKernel() { return nullptr; }
}  // namespace tutti::reduce::detail

#endif
