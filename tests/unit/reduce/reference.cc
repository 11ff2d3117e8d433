#include "unit/reduce/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace tutti::reduce::ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Every non-negative pattern of a narrow float format up to and including +infinity, with
// the exact value of each. Patterns of one sign are ordered like their values, so the
// table is sorted. Infinity is given the value the next binade would start at (2^16 for
// binary16, 2^128 for bfloat16): rounding "past the largest finite value" then follows
// the ordinary nearest-even rule, which is how IEEE 754 defines overflow.
struct NarrowTable {
  std::vector<double> values;  // index = bit pattern
  std::uint16_t infPattern;
  std::uint16_t nanPattern;
};

NarrowTable buildTable(double (*decodeFn)(std::uint16_t), std::uint16_t infPattern,
                       std::uint16_t nanPattern, double infValue) {
  NarrowTable t{{}, infPattern, nanPattern};
  for (std::uint32_t p = 0; p < infPattern; ++p)
    t.values.push_back(decodeFn(static_cast<std::uint16_t>(p)));
  t.values.push_back(infValue);
  return t;
}

const NarrowTable& halfTable() {
  static const NarrowTable t = buildTable(&refHalfToDouble, 0x7c00, 0x7e00, 0x1p16);
  return t;
}

const NarrowTable& bfloat16Table() {
  static const NarrowTable t = buildTable(&refBfloat16ToDouble, 0x7f80, 0x7fc0, 0x1p128);
  return t;
}

std::uint16_t roundWithTable(const NarrowTable& t, double x) {
  if (std::isnan(x)) return t.nanPattern;
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double m = std::fabs(x);
  if (m >= t.values.back()) return sign | t.infPattern;
  // hi is the first pattern whose value exceeds m; lo = hi - 1 has value <= m.
  const auto hi = static_cast<std::size_t>(std::upper_bound(t.values.begin(), t.values.end(), m) -
                                           t.values.begin());
  const std::size_t lo = hi - 1;
  if (t.values[lo] == m) return static_cast<std::uint16_t>(sign | lo);
  // Exact in double: both neighbours have few significant bits.
  const double mid = (t.values[lo] + t.values[hi]) / 2;
  std::size_t pick;
  if (m < mid) {
    pick = lo;
  } else if (m > mid) {
    pick = hi;
  } else {
    pick = (lo % 2 == 0) ? lo : hi;
  }
  return static_cast<std::uint16_t>(sign | pick);
}

template <typename T>
T load(const std::uint8_t* bytes, std::size_t i) {
  T x;
  std::memcpy(&x, bytes + i * sizeof(T), sizeof(T));
  return x;
}

template <typename T>
void storeAt(std::vector<std::uint8_t>& v, std::size_t i, T x) {
  std::memcpy(v.data() + i * sizeof(T), &x, sizeof(T));
}

template <typename T>
T intOp(ReduceOp op, T a, T b) {
  // Arithmetic modulo 2^64, then truncated: the same value modulo 2^N for every N <= 64.
  const auto ua = static_cast<std::uint64_t>(a);
  const auto ub = static_cast<std::uint64_t>(b);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<T>(ua + ub);
    case ReduceOp::kProd:
      return static_cast<T>(ua * ub);
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
  }
  return 0;
}

double floatOp(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      const bool isMin = op == ReduceOp::kMin;
      if (std::isnan(a) || std::isnan(b)) return kNaN;
      if (a == 0 && b == 0) {
        const bool negative =
            isMin ? (std::signbit(a) || std::signbit(b)) : (std::signbit(a) && std::signbit(b));
        return negative ? -0.0 : 0.0;
      }
      return isMin ? std::min(a, b) : std::max(a, b);
    }
  }
  return kNaN;
}

// Rounds a double to `dtype` and stores it. For float32 the double result of one
// operation on float32 (or binary16/bfloat16) inputs is rounded twice, first to double and
// then to float; since 53 >= 2 * 24 + 2 that equals a single correct rounding.
void storeFloat(DataType dtype, std::vector<std::uint8_t>& v, std::size_t i, double x) {
  switch (dtype) {
    case DataType::kFloat16:
      storeAt(v, i, refRoundToHalf(x));
      return;
    case DataType::kBFloat16:
      storeAt(v, i, refRoundToBfloat16(x));
      return;
    case DataType::kFloat32:
      storeAt(v, i, static_cast<float>(x));
      return;
    default:
      storeAt(v, i, x);
      return;
  }
}

// Calls fn(T{}) with the integer type of `dtype`; returns false for floating types.
template <typename Fn>
bool visitInt(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kInt8:
      fn(std::int8_t{});
      return true;
    case DataType::kUint8:
      fn(std::uint8_t{});
      return true;
    case DataType::kInt32:
      fn(std::int32_t{});
      return true;
    case DataType::kUint32:
      fn(std::uint32_t{});
      return true;
    case DataType::kInt64:
      fn(std::int64_t{});
      return true;
    case DataType::kUint64:
      fn(std::uint64_t{});
      return true;
    default:
      return false;
  }
}

}  // namespace

double refHalfToDouble(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m != 0 ? kNaN : s * std::numeric_limits<double>::infinity();
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(m + 1024, e - 25);
}

double refBfloat16ToDouble(std::uint16_t b) {
  const int e = (b >> 7) & 0xff;
  const int m = b & 0x7f;
  const double s = (b & 0x8000) ? -1.0 : 1.0;
  if (e == 255) return m != 0 ? kNaN : s * std::numeric_limits<double>::infinity();
  if (e == 0) return s * std::ldexp(m, -133);
  return s * std::ldexp(m + 128, e - 134);
}

std::uint16_t refRoundToHalf(double x) { return roundWithTable(halfTable(), x); }
std::uint16_t refRoundToBfloat16(double x) { return roundWithTable(bfloat16Table(), x); }

bool isFloating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

double decode(DataType dtype, const std::uint8_t* bytes, std::size_t i) {
  switch (dtype) {
    case DataType::kFloat16:
      return refHalfToDouble(load<std::uint16_t>(bytes, i));
    case DataType::kBFloat16:
      return refBfloat16ToDouble(load<std::uint16_t>(bytes, i));
    case DataType::kFloat32:
      return load<float>(bytes, i);
    case DataType::kFloat64:
      return load<double>(bytes, i);
    default:
      break;
  }
  double out = 0;
  visitInt(dtype, [&](auto t) { out = static_cast<double>(load<decltype(t)>(bytes, i)); });
  return out;
}

std::vector<std::uint8_t> encode(DataType dtype, double value) {
  std::vector<std::uint8_t> v(dataTypeSize(dtype));
  if (isFloating(dtype)) {
    storeFloat(dtype, v, 0, value);
  } else {
    visitInt(dtype, [&](auto t) { storeAt(v, 0, static_cast<decltype(t)>(value)); });
  }
  return v;
}

std::vector<std::uint8_t> refCombine(DataType dtype, ReduceOp op,
                                     const std::vector<std::uint8_t>& a,
                                     const std::vector<std::uint8_t>& b, std::size_t count) {
  std::vector<std::uint8_t> out(count * dataTypeSize(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    if (isFloating(dtype)) {
      storeFloat(dtype, out, i,
                 floatOp(op, decode(dtype, a.data(), i), decode(dtype, b.data(), i)));
    } else {
      visitInt(dtype, [&](auto t) {
        using T = decltype(t);
        storeAt(out, i, intOp<T>(op, load<T>(a.data(), i), load<T>(b.data(), i)));
      });
    }
  }
  return out;
}

std::vector<std::uint8_t> refAverage(DataType dtype, const std::vector<std::uint8_t>& in,
                                     std::size_t count, int worldSize) {
  std::vector<std::uint8_t> out(count * dataTypeSize(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    if (isFloating(dtype)) {
      // x / worldSize in double, rounded once more to the type: innocuous double rounding
      // again (53 >= 2p + 2 for p = 11, 8, 24), and exact division for float64.
      storeFloat(dtype, out, i, decode(dtype, in.data(), i) / worldSize);
    } else {
      visitInt(dtype, [&](auto t) {
        using T = decltype(t);
        const T x = load<T>(in.data(), i);
        if constexpr (std::is_signed_v<T>) {
          storeAt(out, i, static_cast<T>(static_cast<std::int64_t>(x) / worldSize));
        } else {
          storeAt(out, i,
                  static_cast<T>(static_cast<std::uint64_t>(x) /
                                 static_cast<std::uint64_t>(worldSize)));
        }
      });
    }
  }
  return out;
}

bool sameElement(DataType dtype, const std::uint8_t* x, const std::uint8_t* y, std::size_t i,
                 std::string* why) {
  const std::size_t size = dataTypeSize(dtype);
  bool same = std::memcmp(x + i * size, y + i * size, size) == 0;
  if (!same && isFloating(dtype)) {
    same = std::isnan(decode(dtype, x, i)) && std::isnan(decode(dtype, y, i));
  }
  if (!same && why != nullptr) {
    std::ostringstream os;
    os.precision(17);
    os << dataTypeName(dtype) << " element " << i << ": " << decode(dtype, x, i) << " vs "
       << decode(dtype, y, i) << " (bytes";
    for (std::size_t k = 0; k < size; ++k) {
      os << ' ' << std::hex << static_cast<int>(x[i * size + k]) << '/'
         << static_cast<int>(y[i * size + k]);
    }
    os << ')';
    *why = os.str();
  }
  return same;
}

std::vector<std::uint8_t> randomElements(DataType dtype, std::size_t count, std::mt19937_64& rng) {
  std::vector<std::uint8_t> v(count * dataTypeSize(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t bits = rng();
    // One float in four is an arbitrary bit pattern; the rest are moderate values, whose
    // sums and products land on every rounding case, ties included.
    const bool rawBits = !isFloating(dtype) || (bits & 3) == 0;
    if (rawBits) {
      std::memcpy(v.data() + i * dataTypeSize(dtype), &bits, dataTypeSize(dtype));
      continue;
    }
    const double range = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ? 8.0 : 1e3;
    storeFloat(dtype, v, i, std::uniform_real_distribution<double>(-range, range)(rng));
  }
  return v;
}

}  // namespace tutti::reduce::ref
