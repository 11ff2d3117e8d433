#include "tutti/types.h"

#include <array>
#include <string>

namespace tutti {
namespace {

struct TypeRow {
  DataType type;
  std::size_t size;
  const char* name;
};

constexpr std::array<TypeRow, kNumDataTypes> kTypes{{
    {DataType::kInt8, 1, "int8"},
    {DataType::kUint8, 1, "uint8"},
    {DataType::kInt32, 4, "int32"},
    {DataType::kUint32, 4, "uint32"},
    {DataType::kInt64, 8, "int64"},
    {DataType::kUint64, 8, "uint64"},
    {DataType::kFloat16, 2, "float16"},
    {DataType::kBFloat16, 2, "bfloat16"},
    {DataType::kFloat32, 4, "float32"},
    {DataType::kFloat64, 8, "float64"},
}};

struct Alias {
  const char* name;
  DataType type;
};

// nccl-tests' spellings and the usual abbreviations.
constexpr std::array<Alias, 12> kTypeAliases{{
    {"char", DataType::kInt8},
    {"int", DataType::kInt32},
    {"half", DataType::kFloat16},
    {"fp16", DataType::kFloat16},
    {"bf16", DataType::kBFloat16},
    {"float", DataType::kFloat32},
    {"fp32", DataType::kFloat32},
    {"double", DataType::kFloat64},
    {"fp64", DataType::kFloat64},
    {"uint", DataType::kUint32},
    {"long", DataType::kInt64},
    {"ulong", DataType::kUint64},
}};

constexpr std::array<const char*, kNumReduceOps> kOpNames{"sum", "prod", "min", "max", "avg"};

}  // namespace

bool isValid(DataType type) { return static_cast<int>(type) < kNumDataTypes; }
bool isValid(ReduceOp op) { return static_cast<int>(op) < kNumReduceOps; }

std::size_t dataTypeSize(DataType type) {
  return isValid(type) ? kTypes[static_cast<int>(type)].size : 0;
}

const char* dataTypeName(DataType type) {
  return isValid(type) ? kTypes[static_cast<int>(type)].name : "invalid";
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (const TypeRow& row : kTypes) {
    if (name == row.name) return row.type;
  }
  for (const Alias& alias : kTypeAliases) {
    if (name == alias.name) return alias.type;
  }
  return std::nullopt;
}

const char* reduceOpName(ReduceOp op) {
  return isValid(op) ? kOpNames[static_cast<int>(op)] : "invalid";
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (int i = 0; i < kNumReduceOps; ++i) {
    if (name == kOpNames[i]) return static_cast<ReduceOp>(i);
  }
  return std::nullopt;
}

}  // namespace tutti

namespace tutti {

const char* collectiveName(Collective kind) {
  switch (kind) {
    case Collective::kSend: return "send";
    case Collective::kRecv: return "recv";
    case Collective::kBarrier: return "barrier";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kGather: return "gather";
    case Collective::kScatter: return "scatter";
    case Collective::kAllGather: return "allgather";
    case Collective::kReduceScatter: return "reducescatter";
    case Collective::kAllReduce: return "allreduce";
    case Collective::kAllToAll: return "alltoall";
    case Collective::kGatherV: return "gatherv";
    case Collective::kScatterV: return "scatterv";
    case Collective::kAllGatherV: return "allgatherv";
    case Collective::kReduceScatterV: return "reducescatterv";
    case Collective::kAllToAllV: return "alltoallv";
  }
  return "unknown";
}

std::optional<Collective> parseCollective(std::string_view name) {
  std::string plain;
  for (char c : name) {
    if (c != '_' && c != '-') plain += c;
  }
  if (plain == "bcast") plain = "broadcast";
  for (int i = 0; i < kNumCollectives; ++i) {
    auto kind = static_cast<Collective>(i);
    if (plain == collectiveName(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace tutti
