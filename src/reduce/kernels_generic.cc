// Portable reduction kernels. Each (dtype, op) pair is its own instantiation of a plain
// element-wise loop, so that the only switch happens once per call (in the tables at the
// bottom) and GCC can auto-vectorise every loop for the baseline ISA (SSE2 on x86-64).
// This file is compiled with -O3 (see CMakeLists.txt): GCC 12's -O2 vectoriser uses the
// "very cheap" cost model, which gives up on loops whose trip count is unknown.
//
// Two things keep the loops vectorisable:
// - pointers are __restrict, and the aliasing cases combine() allows (dst == a, dst == b,
//   a == b) get their own loops instead of relying on the compiler's runtime overlap checks;
// - element operations are written branch-free: each candidate result is computed
//   unconditionally and then selected, so if-conversion does not have to speculate a
//   floating-point operation that might trap (-ftrapping-math is GCC's default).

#include <bit>
#include <cstdint>
#include <type_traits>

#include "reduce/half.h"
#include "reduce/kernels.h"

namespace tutti::reduce::detail {
namespace {

// ---- storage formats: how an element is stored and the type it is combined in ----------

template <typename T>
struct NativeFormat {
  using Storage = T;
  using Compute = T;
  static Compute load(Storage v) { return v; }
  static Storage store(Compute v) { return v; }
};

// float16 and bfloat16 are combined in float32 and rounded once per element. Because
// float32 carries at least 2p+2 bits for both formats' precision p (11 and 8), one
// float32 operation followed by one rounding to the narrow format gives the correctly
// rounded result: the intermediate rounding cannot cause a double-rounding error.
struct HalfFormat {
  using Storage = std::uint16_t;
  using Compute = float;
  static Compute load(Storage v) { return halfBitsToFloat(v); }
  static Storage store(Compute v) { return floatToHalfBits(v); }
};

// Loads skip bfloat16BitsToFloat's NaN quieting: every operator quiets a NaN operand
// anyway (min/max return a + b for NaNs), and store() quiets again.
struct BFloat16Format {
  using Storage = std::uint16_t;
  using Compute = float;
  static Compute load(Storage v) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
  }
  static Storage store(Compute v) { return floatToBfloat16Bits(v); }
};

// ---- operators --------------------------------------------------------------------------

// Integer arithmetic happens in an unsigned type of at least `unsigned int`'s width: signed
// overflow is undefined behaviour, and uint8 operands would otherwise be promoted to
// (signed) int. Converting back to the signed type wraps modulo 2^N (C++20).
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct SumOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

template <typename F>
using FloatBits = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;

// Float min/max: a NaN operand makes the result NaN (a + b is NaN and quiet), and -0 is
// ordered below +0 (IEEE 754-2019 minimum/maximum). Both rules make the result independent
// of operand order, so ranks that combine contributions in different orders still agree.
// For equal operands, OR-ing the bits picks -0 from a (-0, +0) pair (min); AND picks +0
// (max); for any other equal pair both give the operand itself.
struct MinOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      const T nanResult = a + b;
      const T tied =
          std::bit_cast<T>(std::bit_cast<FloatBits<T>>(a) | std::bit_cast<FloatBits<T>>(b));
      const T ordered = a < b ? a : b;
      const T r = a == b ? tied : ordered;
      return (a != a || b != b) ? nanResult : r;
    }
  }
};

struct MaxOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      const T nanResult = a + b;
      const T tied =
          std::bit_cast<T>(std::bit_cast<FloatBits<T>>(a) & std::bit_cast<FloatBits<T>>(b));
      const T ordered = a > b ? a : b;
      const T r = a == b ? tied : ordered;
      return (a != a || b != b) ? nanResult : r;
    }
  }
};

// ---- loops ------------------------------------------------------------------------------

// Always inlined: a call left in the loop body (GCC's inliner declines the float16 min/max
// bodies on size) stops vectorisation of the whole loop.
template <typename Fmt, typename Op>
[[gnu::always_inline]] inline typename Fmt::Storage element(typename Fmt::Storage a,
                                                            typename Fmt::Storage b) {
  return Fmt::store(Op::apply(Fmt::load(a), Fmt::load(b)));
}

template <typename Fmt, typename Op, typename S = typename Fmt::Storage>
void loopSeparate(S* __restrict dst, const S* __restrict a, const S* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = element<Fmt, Op>(a[i], b[i]);
}

// dst == a: the accumulator is read and written through one pointer.
template <typename Fmt, typename Op, typename S = typename Fmt::Storage>
void loopIntoA(S* __restrict acc, const S* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = element<Fmt, Op>(acc[i], b[i]);
}

// dst == b: operand order is kept (a op b), which matters for NaN payloads.
template <typename Fmt, typename Op, typename S = typename Fmt::Storage>
void loopIntoB(S* __restrict acc, const S* __restrict a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = element<Fmt, Op>(a[i], acc[i]);
}

// dst == a == b.
template <typename Fmt, typename Op, typename S = typename Fmt::Storage>
void loopSquare(S* __restrict acc, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = element<Fmt, Op>(acc[i], acc[i]);
}

template <typename Fmt, typename Op>
void combineLoop(void* dst, const void* a, const void* b, std::size_t count,
                 std::size_t /*outputBytes: portable stores only*/) {
  using S = typename Fmt::Storage;
  auto* d = static_cast<S*>(dst);
  const auto* pa = static_cast<const S*>(a);
  const auto* pb = static_cast<const S*>(b);
  if (d == pa && d == pb) {
    loopSquare<Fmt, Op>(d, count);
  } else if (d == pa) {
    loopIntoA<Fmt, Op>(d, pb, count);
  } else if (d == pb) {
    loopIntoB<Fmt, Op>(d, pa, count);
  } else {
    // a == b (with a separate dst) is fine here: restrict only forbids aliasing an object
    // that is modified.
    loopSeparate<Fmt, Op>(d, pa, pb, count);
  }
}

// kAvg's division. Integers divide the wrapped sum in a 64-bit type of the same
// signedness, so that a world size beyond the element type's range still divides
// correctly; C++ division truncates toward zero. Floating types divide (not multiply by a
// reciprocal, which would not be exact) in their compute type.
template <typename Fmt>
void averageLoop(void* buf, std::size_t count, int worldSize) {
  using S = typename Fmt::Storage;
  using C = typename Fmt::Compute;
  S* __restrict p = static_cast<S*>(buf);
  if constexpr (std::is_integral_v<C>) {
    using Wide = std::conditional_t<std::is_signed_v<C>, std::int64_t, std::uint64_t>;
    const Wide divisor = static_cast<Wide>(worldSize);
    for (std::size_t i = 0; i < count; ++i) {
      p[i] = static_cast<S>(static_cast<Wide>(p[i]) / divisor);
    }
  } else {
    const C divisor = static_cast<C>(worldSize);
    for (std::size_t i = 0; i < count; ++i) p[i] = Fmt::store(Fmt::load(p[i]) / divisor);
  }
}

// ---- tables -----------------------------------------------------------------------------

template <typename Fmt>
CombineFn pickOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:  // summed here, divided by finalize()
      return &combineLoop<Fmt, SumOp>;
    case ReduceOp::kProd:
      return &combineLoop<Fmt, ProdOp>;
    case ReduceOp::kMin:
      return &combineLoop<Fmt, MinOp>;
    case ReduceOp::kMax:
      return &combineLoop<Fmt, MaxOp>;
  }
  return nullptr;
}

// Calls fn.template operator()<Format>() for the storage format of `dtype`; the single
// dtype switch shared by the combine and average tables.
template <typename Result, typename Visitor>
Result visitFormat(DataType dtype, Visitor fn) {
  switch (dtype) {
    case DataType::kInt8:
      return fn.template operator()<NativeFormat<std::int8_t>>();
    case DataType::kUint8:
      return fn.template operator()<NativeFormat<std::uint8_t>>();
    case DataType::kInt32:
      return fn.template operator()<NativeFormat<std::int32_t>>();
    case DataType::kUint32:
      return fn.template operator()<NativeFormat<std::uint32_t>>();
    case DataType::kInt64:
      return fn.template operator()<NativeFormat<std::int64_t>>();
    case DataType::kUint64:
      return fn.template operator()<NativeFormat<std::uint64_t>>();
    case DataType::kFloat16:
      return fn.template operator()<HalfFormat>();
    case DataType::kBFloat16:
      return fn.template operator()<BFloat16Format>();
    case DataType::kFloat32:
      return fn.template operator()<NativeFormat<float>>();
    case DataType::kFloat64:
      return fn.template operator()<NativeFormat<double>>();
  }
  return nullptr;
}

}  // namespace

CombineFn genericCombineKernel(DataType dtype, ReduceOp op) {
  return visitFormat<CombineFn>(dtype, [op]<typename Fmt>() { return pickOp<Fmt>(op); });
}

AverageFn genericAverageKernel(DataType dtype) {
  return visitFormat<AverageFn>(dtype,
                                []<typename Fmt>() -> AverageFn { return &averageLoop<Fmt>; });
}

}  // namespace tutti::reduce::detail
