#include "bench/data.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "base/assert.h"
#include "bench/half.h"

namespace tutti::bench {
namespace {

// An odd multiplier: r * kRankStride is distinct modulo 2^w for distinct ranks r < 2^w,
// so integer inputs differ between ranks in every width.
constexpr std::uint64_t kRankStride = 0x9e3779b97f4a7c15ull;

// Factors for floating products; all are exact powers of two with exponent -1, 0 or 1.
constexpr std::array<double, 6> kProductFactors{1.0, -1.0, 2.0, -2.0, 0.5, -0.5};

bool isFloating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

bool isSigned(DataType dtype) {
  return dtype == DataType::kInt8 || dtype == DataType::kInt32 || dtype == DataType::kInt64;
}

std::uint64_t widthMask(DataType dtype) {
  const std::size_t bits = dataTypeSize(dtype) * 8;
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

// Reads the low bits of an integer type as a signed value.
std::int64_t signExtend(std::uint64_t bits, DataType dtype) {
  const std::size_t width = dataTypeSize(dtype) * 8;
  if (width >= 64) return static_cast<std::int64_t>(bits);
  const std::uint64_t signBit = 1ull << (width - 1);
  return static_cast<std::int64_t>((bits ^ signBit) - signBit);
}

// splitmix64's finaliser: spreads consecutive indices over the whole 64-bit range.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t indexHash(std::size_t index, ReduceOp op) {
  return mix(static_cast<std::uint64_t>(index) * kNumReduceOps + static_cast<std::uint64_t>(op));
}

Element integerInput(int rank, std::uint64_t hash, DataType dtype, ReduceOp op) {
  std::uint64_t raw = hash + static_cast<std::uint64_t>(rank) * kRankStride;
  // Odd factors form a group modulo 2^w, so a product of them is never zero.
  if (op == ReduceOp::kProd) raw = 2 * raw + 1;
  return Element{false, raw & widthMask(dtype), 0.0};
}

// An integer in [-limit, limit], consecutive ranks taking consecutive values (modulo the
// range), so ranks differ whenever nranks <= 2 * limit + 1.
double centredValue(int rank, std::uint64_t hash, std::uint64_t limit) {
  const std::uint64_t range = 2 * limit + 1;
  const std::uint64_t offset = (hash % range + static_cast<std::uint64_t>(rank)) % range;
  return static_cast<double>(static_cast<std::int64_t>(offset) - static_cast<std::int64_t>(limit));
}

Element floatingInput(int rank, std::uint64_t hash, DataType dtype, ReduceOp op, int nranks) {
  const std::uint64_t limit = exactIntegerLimit(dtype);
  double value = 0;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: {
      // |value| <= limit / nranks keeps every partial sum within [-limit, limit].
      const std::uint64_t perRank = limit / static_cast<std::uint64_t>(nranks);
      if (perRank >= 1) {
        value = centredValue(rank, hash, perRank);
      } else {
        // More ranks than exact integers: one rank per index contributes 1.
        const bool chosen = hash % static_cast<std::uint64_t>(nranks) == static_cast<std::uint64_t>(rank);
        value = chosen ? 1.0 : 0.0;
      }
      break;
    }
    case ReduceOp::kProd: {
      const std::uint64_t shifted = hash % 6 + static_cast<std::uint64_t>(rank) % 6;
      if (rank < productExponentBudget(dtype)) {
        value = kProductFactors[shifted % kProductFactors.size()];
      } else {
        value = (shifted & 1) != 0 ? -1.0 : 1.0;
      }
      break;
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      value = centredValue(rank, hash, limit);
      break;
  }
  return Element{true, 0, value};
}

// Rounds a float32 quotient to the storage type, as the library's finalize() does.
double roundToType(float value, DataType dtype) {
  if (dtype == DataType::kFloat16) return halfToFloat(floatToHalf(value));
  if (dtype == DataType::kBFloat16) return bfloat16ToFloat(floatToBfloat16(value));
  return value;
}

Element integerResult(std::size_t index, DataType dtype, ReduceOp op, int nranks) {
  const std::uint64_t hash = indexHash(index, op);
  const bool signedType = isSigned(dtype);
  std::uint64_t acc = integerInput(0, hash, dtype, op).bits;
  for (int rank = 1; rank < nranks; ++rank) {
    const std::uint64_t v = integerInput(rank, hash, dtype, op).bits;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMin:
        if (signedType ? signExtend(v, dtype) < signExtend(acc, dtype) : v < acc) acc = v;
        break;
      case ReduceOp::kMax:
        if (signedType ? signExtend(v, dtype) > signExtend(acc, dtype) : v > acc) acc = v;
        break;
    }
  }
  acc &= widthMask(dtype);
  if (op == ReduceOp::kAvg) {
    // Integer division of the wrapped sum, truncating toward zero as C++ does.
    acc = signedType ? static_cast<std::uint64_t>(signExtend(acc, dtype) / nranks)
                     : acc / static_cast<std::uint64_t>(nranks);
    acc &= widthMask(dtype);
  }
  return Element{false, acc, 0.0};
}

Element floatingResult(std::size_t index, DataType dtype, ReduceOp op, int nranks) {
  const std::uint64_t hash = indexHash(index, op);
  // Every partial result is exact in double (see the bounds above), so the order of this
  // loop does not matter.
  double acc = floatingInput(0, hash, dtype, op, nranks).real;
  for (int rank = 1; rank < nranks; ++rank) {
    const double v = floatingInput(rank, hash, dtype, op, nranks).real;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::kAvg) {
    if (dtype == DataType::kFloat64) {
      acc /= nranks;
    } else {
      acc = roundToType(static_cast<float>(acc) / static_cast<float>(nranks), dtype);
    }
  }
  return Element{true, 0, acc};
}

template <typename T>
T loadRaw(const void* buffer, std::size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(buffer) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void storeRaw(void* buffer, std::size_t index, T value) {
  std::memcpy(static_cast<unsigned char*>(buffer) + index * sizeof(T), &value, sizeof(T));
}

}  // namespace

bool sameElement(const Element& a, const Element& b) {
  if (a.floating != b.floating) return false;
  return a.floating ? a.real == b.real : a.bits == b.bits;
}

std::uint64_t exactIntegerLimit(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return 1ull << 11;
    case DataType::kBFloat16: return 1ull << 8;
    case DataType::kFloat32: return 1ull << 24;
    case DataType::kFloat64: return 1ull << 53;
    default: return 0;
  }
}

int productExponentBudget(DataType dtype) {
  // Powers of two down to the smallest normal and up to the largest finite one are exact;
  // keep a margin of one on the upper side of float16 (2^15 is its largest power of two).
  switch (dtype) {
    case DataType::kFloat16: return 14;
    case DataType::kBFloat16:
    case DataType::kFloat32: return 126;
    case DataType::kFloat64: return 1022;
    default: return 0;
  }
}

Element inputValue(int rank, std::size_t index, DataType dtype, ReduceOp op, int nranks) {
  TUTTI_ASSERT_CMP(nranks, >=, 1);
  TUTTI_ASSERT(rank >= 0 && rank < nranks);
  const std::uint64_t hash = indexHash(index, op);
  return isFloating(dtype) ? floatingInput(rank, hash, dtype, op, nranks)
                           : integerInput(rank, hash, dtype, op);
}

Element expectedAllReduce(std::size_t index, DataType dtype, ReduceOp op, int nranks) {
  TUTTI_ASSERT_CMP(nranks, >=, 1);
  return isFloating(dtype) ? floatingResult(index, dtype, op, nranks)
                           : integerResult(index, dtype, op, nranks);
}

Element loadElement(const void* buffer, std::size_t index, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
      return Element{true, 0, halfToFloat(loadRaw<std::uint16_t>(buffer, index))};
    case DataType::kBFloat16:
      return Element{true, 0, bfloat16ToFloat(loadRaw<std::uint16_t>(buffer, index))};
    case DataType::kFloat32: return Element{true, 0, loadRaw<float>(buffer, index)};
    case DataType::kFloat64: return Element{true, 0, loadRaw<double>(buffer, index)};
    case DataType::kInt8:
    case DataType::kUint8: return Element{false, loadRaw<std::uint8_t>(buffer, index), 0.0};
    case DataType::kInt32:
    case DataType::kUint32: return Element{false, loadRaw<std::uint32_t>(buffer, index), 0.0};
    case DataType::kInt64:
    case DataType::kUint64: return Element{false, loadRaw<std::uint64_t>(buffer, index), 0.0};
  }
  TUTTI_ASSERT(isValid(dtype));
  return Element{};
}

void storeElement(void* buffer, std::size_t index, DataType dtype, const Element& value) {
  TUTTI_ASSERT(value.floating == isFloating(dtype));
  const auto asFloat = static_cast<float>(value.real);
  switch (dtype) {
    case DataType::kFloat16: storeRaw(buffer, index, floatToHalf(asFloat)); return;
    case DataType::kBFloat16: storeRaw(buffer, index, floatToBfloat16(asFloat)); return;
    case DataType::kFloat32: storeRaw(buffer, index, asFloat); return;
    case DataType::kFloat64: storeRaw(buffer, index, value.real); return;
    case DataType::kInt8:
    case DataType::kUint8: storeRaw(buffer, index, static_cast<std::uint8_t>(value.bits)); return;
    case DataType::kInt32:
    case DataType::kUint32: storeRaw(buffer, index, static_cast<std::uint32_t>(value.bits)); return;
    case DataType::kInt64:
    case DataType::kUint64: storeRaw(buffer, index, value.bits); return;
  }
  TUTTI_ASSERT(isValid(dtype));
}

void fillInput(void* buffer, std::size_t count, int rank, int nranks, DataType dtype,
               ReduceOp op) {
  for (std::size_t i = 0; i < count; ++i) {
    storeElement(buffer, i, dtype, inputValue(rank, i, dtype, op, nranks));
  }
}

void fillExpectedAllReduce(void* buffer, std::size_t count, int nranks, DataType dtype,
                           ReduceOp op, std::size_t firstIndex) {
  for (std::size_t i = 0; i < count; ++i) {
    storeElement(buffer, i, dtype, expectedAllReduce(firstIndex + i, dtype, op, nranks));
  }
}

Element movementValue(int rank, std::size_t index, DataType dtype, int nranks) {
  return inputValue(rank, index, dtype, ReduceOp::kMin, nranks);
}

void fillMovement(void* buffer, std::size_t count, DataType dtype, int rank,
                  std::size_t firstIndex, int nranks) {
  for (std::size_t i = 0; i < count; ++i) {
    storeElement(buffer, i, dtype, movementValue(rank, firstIndex + i, dtype, nranks));
  }
}

std::uint64_t countWrong(const void* actual, const void* expected, std::size_t count,
                         DataType dtype) {
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!sameElement(loadElement(actual, i, dtype), loadElement(expected, i, dtype))) ++wrong;
  }
  return wrong;
}

}  // namespace tutti::bench
