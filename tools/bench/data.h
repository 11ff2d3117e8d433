#pragma once
// Input data and expected results for checking collectives element by element.
//
// The inputs are chosen so that the correct result is exact whatever order the library
// combines the ranks' contributions in, and the expectation is computed here, never with
// the library's reduction code:
//  - integer types take values over their whole range; sums and products wrap around as
//    the library specifies (two's complement), and products use odd values only, so they
//    never collapse to zero;
//  - floating sum/avg inputs are small integers bounded so that every partial sum over any
//    subset of ranks is an exactly representable integer (|sum| <= exactIntegerLimit());
//  - floating products use +-1, +-2 and +-0.5, with only the first productExponentBudget()
//    ranks allowed a factor other than +-1, so no partial product over- or underflows;
//  - min/max use any exactly representable integers.
// Values differ between ranks at the same index (whenever the value range allows it) and
// vary along the index, so a rank swap or a misplaced chunk changes the result.

#include <cstddef>
#include <cstdint>

#include "tutti/types.h"

namespace tutti::bench {

/// One element of any data type, held exactly.
struct Element {
  /// True for float16, bfloat16, float32 and float64.
  bool floating = false;
  /// Integer types: the two's complement bits, truncated to the type's width.
  std::uint64_t bits = 0;
  /// Floating types: the exact value.
  double real = 0;
};

/// True when `a` and `b` are the same value: bitwise for integers, numerically for floats
/// (so a NaN never matches, and +0 matches -0).
bool sameElement(const Element& a, const Element& b);

/// The largest integer L such that every integer in [-L, L] is exactly representable in the
/// floating type `dtype` (2048 for float16, 256 for bfloat16, 2^24, 2^53); 0 for integers.
std::uint64_t exactIntegerLimit(DataType dtype);

/// How many ranks may contribute a factor of +-2 or +-0.5 to a product without any partial
/// product leaving the exact power-of-two range of `dtype` (14 for float16); 0 for integers.
int productExponentBudget(DataType dtype);

/// Input element `index` of `rank` in a group of `nranks`, for reduction `op`.
Element inputValue(int rank, std::size_t index, DataType dtype, ReduceOp op, int nranks);

/// The exact all-reduce result at `index`: `op` over inputValue() of every rank, with
/// integer wrap-around, and for kAvg the library's division rule (integer division of the
/// wrapped sum for integers; float32 division then rounding to the type for float16,
/// bfloat16 and float32; float64 division for float64).
Element expectedAllReduce(std::size_t index, DataType dtype, ReduceOp op, int nranks);

/// Reads element `index` of a buffer of `dtype`.
Element loadElement(const void* buffer, std::size_t index, DataType dtype);

/// Writes element `index` of a buffer of `dtype`; a floating value must be representable.
void storeElement(void* buffer, std::size_t index, DataType dtype, const Element& value);

/// Writes inputValue(rank, i, ...) for i < count.
void fillInput(void* buffer, std::size_t count, int rank, int nranks, DataType dtype,
               ReduceOp op);

/// Writes expectedAllReduce(firstIndex + i, ...) for i < count: a whole all-reduce result,
/// or (firstIndex = rank * count) one rank's block of a reduce-scatter.
void fillExpectedAllReduce(void* buffer, std::size_t count, int nranks, DataType dtype,
                           ReduceOp op, std::size_t firstIndex = 0);

/// Input element `index` of `rank` for collectives that move data without reducing it
/// (broadcast, gather, all-to-all, ...): exact in every type, varying along the index and
/// different between ranks at the same index (whenever the type has nranks values). These
/// are inputValue()'s kMin values, so one generator serves every collective.
Element movementValue(int rank, std::size_t index, DataType dtype, int nranks);

/// Writes movementValue(rank, firstIndex + i, ...) for i < count. Both a rank's input
/// (firstIndex 0) and any block of an expected output are made with it: e.g. block b of an
/// all-to-all result on rank q is fillMovement(.., count, dtype, b, q * count, nranks).
void fillMovement(void* buffer, std::size_t count, DataType dtype, int rank,
                  std::size_t firstIndex, int nranks);

/// Number of i < count where actual[i] and expected[i] are not sameElement().
std::uint64_t countWrong(const void* actual, const void* expected, std::size_t count,
                         DataType dtype);

}  // namespace tutti::bench
