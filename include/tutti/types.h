#pragma once
/// \file
/// Element types and reduction operators understood by every collective.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tutti/export.h"

namespace tutti {

/// Element type of a buffer. Counts in tutti are always in elements of this type.
enum class DataType : std::uint8_t {
  kInt8 = 0,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,   ///< IEEE 754 binary16
  kBFloat16,  ///< bfloat16 (8-bit exponent, 7-bit mantissa)
  kFloat32,
  kFloat64,
};
inline constexpr int kNumDataTypes = 10;

/// Reduction operator. kAvg is the sum divided by the number of ranks (integer types use
/// integer division, floating types divide in float, or in double for kFloat64).
enum class ReduceOp : std::uint8_t { kSum = 0, kProd, kMin, kMax, kAvg };
inline constexpr int kNumReduceOps = 5;

/// The most bytes one buffer of one call may hold (1 TiB): larger counts are refused with
/// kInvalidArgument before anything moves. One schedule step may carry a whole buffer, and
/// the TCP wire frames a message in at most this many bytes.
inline constexpr std::uint64_t kMaxBufferBytes = std::uint64_t{1} << 40;

/// Size in bytes of one element.
TUTTI_API std::size_t dataTypeSize(DataType type);
/// Canonical lower-case name ("float32", "bfloat16", ...).
TUTTI_API const char* dataTypeName(DataType type);
/// Accepts canonical names and the nccl-tests / common aliases ("float", "half", "double",
/// "float16", "bf16", ...). Returns nullopt for unknown names.
TUTTI_API std::optional<DataType> parseDataType(std::string_view name);
/// Lower-case name ("sum", "prod", "min", "max", "avg").
TUTTI_API const char* reduceOpName(ReduceOp op);
TUTTI_API std::optional<ReduceOp> parseReduceOp(std::string_view name);
/// True when the enum value is one of the declared ones (guards values cast from ints).
TUTTI_API bool isValid(DataType type);
TUTTI_API bool isValid(ReduceOp op);

}  // namespace tutti

namespace tutti {

/// The operations a communicator performs; used in errors, logs and algorithm selection.
enum class Collective : std::uint8_t {
  kSend = 0,
  kRecv,
  kBarrier,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kGatherV,         ///< gather with per-rank counts and displacements
  kScatterV,
  kAllGatherV,
  kReduceScatterV,  ///< per-rank result counts; the input is their concatenation
  kAllToAllV,
};
inline constexpr int kNumCollectives = 16;

/// Lower-case name, e.g. "allreduce", "reducescatterv".
TUTTI_API const char* collectiveName(Collective kind);
/// Accepts the names collectiveName() gives and the underscored spellings ("all_reduce",
/// "reduce_scatter", "all_to_all", "bcast"). nullopt for unknown names.
TUTTI_API std::optional<Collective> parseCollective(std::string_view name);

/// One call's shape, as Communicator::verifyCall() takes it: what the collective is, not
/// where its data lives. The v-collectives are taken with `count` elements per rank.
struct CallShape {
  Collective kind = Collective::kAllReduce;
  std::size_t count = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  bool inPlace = false;
  /// Every rank's buffers come from tutti::memAlloc: the algorithm of an all-reduce of 1 MiB
  /// or more among 3 to 8 ranks of one host depends on it (the ranks agree on it per call).
  bool sharedBuffers = false;
};

}  // namespace tutti
