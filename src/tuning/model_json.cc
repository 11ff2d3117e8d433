// Reading and writing a MachineModel as JSON (model_json.h; the format is docs/tuning.md's).
#include "tuning/model_json.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <thread>
#include <utility>

#include "base/macros.h"
#include "base/strings.h"
#include "topology/json.h"

namespace tutti::tuning {
namespace {

using topo::json::Value;
namespace json = topo::json;

Status errorAt(const Value& at, const std::string& key, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument,
                strFormat("line %d: %s: %s", at.line, key.c_str(), what.c_str()));
}

Status expectType(const Value& v, const std::string& key, Value::Type type) {
  if (v.type == type) return Status::Ok();
  return errorAt(v, key, strFormat("%s expected, found %s", json::typeName(type),
                                   json::typeName(v.type)));
}

std::string joinKey(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

// Refuses the members of `object` not in `names`, naming the first such key and the ones
// the format knows.
Status onlyKnown(const Value& object, const std::string& path,
                 std::initializer_list<std::string_view> names) {
  for (const auto& [name, value] : object.members) {
    bool found = false;
    for (const std::string_view n : names) found = found || n == name;
    if (found) continue;
    std::string known;
    for (const std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
    return errorAt(value, joinKey(path, name), "unknown key (known: " + known + ")");
  }
  return Status::Ok();
}

// A finite number >= 0 where `object` has the member `name`; `out` unchanged where not.
Status readNumber(const Value& object, const std::string& path, std::string_view name,
                  double& out) {
  const Value* v = object.find(name);
  if (v == nullptr) return Status::Ok();
  const std::string key = joinKey(path, name);
  TUTTI_RETURN_IF_ERROR(expectType(*v, key, Value::Type::kNumber));
  if (!std::isfinite(v->number) || v->number < 0)
    return errorAt(*v, key, strFormat("a number from 0 expected, found %g", v->number));
  out = v->number;
  return Status::Ok();
}

// A whole number of bytes from 0 to 2^53 where `object` has the member `name`; `out`
// unchanged where not.
Status readBytes(const Value& object, std::string_view name, std::uint64_t& out) {
  const Value* v = object.find(name);
  if (v == nullptr) return Status::Ok();
  const std::string key(name);
  TUTTI_RETURN_IF_ERROR(expectType(*v, key, Value::Type::kNumber));
  if (!std::isfinite(v->number) || v->number != std::floor(v->number) || v->number < 0 ||
      v->number > 9007199254740992.0)
    return errorAt(*v, key, strFormat("a whole number of bytes expected, found %g", v->number));
  out = static_cast<std::uint64_t>(v->number);
  return Status::Ok();
}

Status readString(const Value& object, std::string_view name, std::string& out) {
  const Value* v = object.find(name);
  if (v == nullptr) return Status::Ok();
  TUTTI_RETURN_IF_ERROR(expectType(*v, std::string(name), Value::Type::kString));
  out = v->text;
  return Status::Ok();
}

// "measured" (whole seconds since the epoch) and "complete" (a boolean).
Status readFileInfo(const Value& doc, ModelFileInfo& info) {
  if (const Value* v = doc.find("measured")) {
    TUTTI_RETURN_IF_ERROR(expectType(*v, "measured", Value::Type::kNumber));
    if (v->number != std::floor(v->number) || v->number < 0 || v->number > 1e15)
      return errorAt(*v, "measured",
                     strFormat("whole seconds since the epoch expected, found %g", v->number));
    info.measured = static_cast<std::int64_t>(v->number);
  }
  if (const Value* v = doc.find("complete")) {
    TUTTI_RETURN_IF_ERROR(expectType(*v, "complete", Value::Type::kBool));
    info.complete = v->boolean;
  }
  return Status::Ok();
}

Status readLink(const Value& link, const std::string& key, LinkCost& cost) {
  TUTTI_RETURN_IF_ERROR(expectType(link, key, Value::Type::kObject));
  TUTTI_RETURN_IF_ERROR(onlyKnown(link, key, {"alpha", "beta", "overhead"}));
  TUTTI_RETURN_IF_ERROR(readNumber(link, key, "alpha", cost.alpha));
  TUTTI_RETURN_IF_ERROR(readNumber(link, key, "beta", cost.beta));
  return readNumber(link, key, "overhead", cost.overhead);
}

Status readPaths(const Value& paths, MachineModel& m) {
  TUTTI_RETURN_IF_ERROR(expectType(paths, "paths", Value::Type::kObject));
  for (const auto& [name, link] : paths.members) {
    const std::string key = "paths." + name;
    const std::optional<PathClass> c = parsePathClass(name);
    if (!c)
      return errorAt(link, key, "unknown key (known: same_l3, same_socket, same_host, network)");
    TUTTI_RETURN_IF_ERROR(readLink(link, key, m.paths[static_cast<std::size_t>(*c)]));
  }
  return Status::Ok();
}

Status readGamma(const Value& gamma, MachineModel& m) {
  TUTTI_RETURN_IF_ERROR(expectType(gamma, "gamma", Value::Type::kObject));
  for (const auto& [name, value] : gamma.members) {
    int found = -1;
    for (int t = 0; t < kNumDataTypes; ++t)
      if (name == dataTypeName(static_cast<DataType>(t))) found = t;
    if (found < 0) {
      std::string known;
      for (int t = 0; t < kNumDataTypes; ++t)
        known += std::string(t ? ", " : "") + dataTypeName(static_cast<DataType>(t));
      return errorAt(value, "gamma." + name, "unknown key (known: " + known + ")");
    }
    TUTTI_RETURN_IF_ERROR(readNumber(gamma, "gamma", name, m.gamma[static_cast<std::size_t>(found)]));
  }
  return Status::Ok();
}

Status readCores(const Value& doc, MachineModel& m) {
  const Value* v = doc.find("cores_per_host");
  if (v == nullptr) return Status::Ok();
  TUTTI_RETURN_IF_ERROR(expectType(*v, "cores_per_host", Value::Type::kNumber));
  if (v->number != std::floor(v->number) || v->number < 1 || v->number > 1e6)
    return errorAt(*v, "cores_per_host",
                   strFormat("an integer from 1 to 1000000 expected, found %g", v->number));
  m.coresPerHost = static_cast<int>(v->number);
  return Status::Ok();
}

Status checkFormat(const Value& doc) {
  const Value* format = doc.find("format");
  if (format == nullptr)
    return errorAt(doc, "format", strFormat("missing (\"%s\" expected)", std::string(kModelFormat).c_str()));
  TUTTI_RETURN_IF_ERROR(expectType(*format, "format", Value::Type::kString));
  if (format->text != kModelFormat)
    return errorAt(*format, "format",
                   strFormat("\"%s\", not a tutti machine model (\"%s\")", format->text.c_str(),
                             std::string(kModelFormat).c_str()));
  const Value* version = doc.find("version");
  if (version == nullptr)
    return errorAt(doc, "version", strFormat("missing (%d expected)", kModelVersion));
  TUTTI_RETURN_IF_ERROR(expectType(*version, "version", Value::Type::kNumber));
  if (version->number != kModelVersion)
    return errorAt(*version, "version",
                   strFormat("%g is not a version this library reads (%d)", version->number,
                             kModelVersion));
  return Status::Ok();
}

// %.17g: every double reads back as itself.
std::string number(double value) { return strFormat("%.17g", value); }

}  // namespace

std::string toJson(const MachineModel& m, const ModelFileInfo& info) {
  std::string out = strFormat("{\n  \"format\": %s,\n  \"version\": %d,\n",
                              json::quote(kModelFormat).c_str(), kModelVersion);
  if (!info.library.empty()) out += "  \"library\": " + json::quote(info.library) + ",\n";
  if (!info.host.empty()) out += "  \"host\": " + json::quote(info.host) + ",\n";
  if (info.measured > 0)
    out += strFormat("  \"measured\": %lld,\n", static_cast<long long>(info.measured));
  if (!info.complete) out += "  \"complete\": false,\n";
  out += "  \"paths\": {\n";
  for (int c = 0; c < kNumPathClasses; ++c) {
    const LinkCost& l = m.paths[static_cast<std::size_t>(c)];
    out += strFormat("    \"%s\": {\"alpha\": %s, \"beta\": %s, \"overhead\": %s}%s\n",
                     pathClassName(static_cast<PathClass>(c)), number(l.alpha).c_str(),
                     number(l.beta).c_str(), number(l.overhead).c_str(),
                     c + 1 < kNumPathClasses ? "," : "");
  }
  out += "  },\n  \"gamma\": {\n";
  for (int t = 0; t < kNumDataTypes; ++t)
    out += strFormat("    \"%s\": %s%s\n", dataTypeName(static_cast<DataType>(t)),
                     number(m.gamma[static_cast<std::size_t>(t)]).c_str(),
                     t + 1 < kNumDataTypes ? "," : "");
  out += strFormat("  },\n  \"copy_beta\": %s,\n  \"host_memory_bandwidth\": %s,\n"
                   "  \"nic_bandwidth\": %s,\n  \"nic_burst_bytes\": %llu,\n"
                   "  \"nic_line_bandwidth\": %s,\n  \"cores_per_host\": %d,\n"
                   "  \"flat_alpha\": %s,\n  \"flat_beta\": %s,\n",
                   number(m.copyBeta).c_str(), number(m.hostMemoryBandwidth).c_str(),
                   number(m.nicBandwidth).c_str(), static_cast<unsigned long long>(m.nicBurstBytes),
                   number(m.nicLineBandwidth).c_str(), m.coresPerHost, number(m.flatAlpha).c_str(),
                   number(m.flatBeta).c_str());
  out += strFormat("  \"message_overhead\": %s,\n  \"switch_cost\": %s,\n"
                   "  \"yield_cost\": %s,\n  \"kernel_copy_ratio\": %s,\n"
                   "  \"llc_bytes\": %llu,\n  \"cache_bandwidth\": %s,\n"
                   "  \"loopback\": {\"alpha\": %s, \"beta\": %s, \"overhead\": %s},\n",
                   number(m.messageOverhead).c_str(), number(m.switchCost).c_str(),
                   number(m.yieldCost).c_str(), number(m.kernelCopyRatio).c_str(),
                   static_cast<unsigned long long>(m.llcBytes), number(m.cacheBandwidth).c_str(),
                   number(m.loopback.alpha).c_str(), number(m.loopback.beta).c_str(),
                   number(m.loopback.overhead).c_str());
  out += strFormat("  \"streaming_stores_from\": %llu,\n  \"ring_blocks_from\": %llu,\n"
                   "  \"pair_all_reduce_rings_up_to\": %llu,\n  \"buffers_agreed_from\": %llu\n}\n",
                   static_cast<unsigned long long>(m.streamingStoresFrom),
                   static_cast<unsigned long long>(m.ringBlocksFrom),
                   static_cast<unsigned long long>(m.pairAllReduceRingsUpTo),
                   static_cast<unsigned long long>(m.buffersAgreedFrom));
  return out;
}

Result<MachineModel> fromJson(std::string_view text, ModelFileInfo* info) {
  TUTTI_ASSIGN_OR_RETURN(const Value doc, json::parse(text));
  if (doc.type != Value::Type::kObject)
    return errorAt(doc, "the document",
                   strFormat("an object expected, found %s", json::typeName(doc.type)));
  TUTTI_RETURN_IF_ERROR(checkFormat(doc));
  TUTTI_RETURN_IF_ERROR(onlyKnown(doc, "", {"format", "version", "library", "host", "measured",
                                            "complete", "paths",
                                            "gamma", "copy_beta", "host_memory_bandwidth",
                                            "nic_bandwidth", "nic_burst_bytes",
                                            "nic_line_bandwidth", "cores_per_host", "flat_alpha",
                                            "flat_beta", "message_overhead", "switch_cost", "yield_cost",
                                            "kernel_copy_ratio", "llc_bytes", "cache_bandwidth", "loopback",
                                            "streaming_stores_from", "ring_blocks_from",
                                            "pair_all_reduce_rings_up_to",
                                            "buffers_agreed_from"}));
  MachineModel m = defaults();
  ModelFileInfo read;
  TUTTI_RETURN_IF_ERROR(readString(doc, "library", read.library));
  TUTTI_RETURN_IF_ERROR(readString(doc, "host", read.host));
  TUTTI_RETURN_IF_ERROR(readFileInfo(doc, read));
  if (const Value* paths = doc.find("paths")) TUTTI_RETURN_IF_ERROR(readPaths(*paths, m));
  if (const Value* gamma = doc.find("gamma")) TUTTI_RETURN_IF_ERROR(readGamma(*gamma, m));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "copy_beta", m.copyBeta));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "host_memory_bandwidth", m.hostMemoryBandwidth));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "nic_bandwidth", m.nicBandwidth));
  TUTTI_RETURN_IF_ERROR(readBytes(doc, "nic_burst_bytes", m.nicBurstBytes));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "nic_line_bandwidth", m.nicLineBandwidth));
  TUTTI_RETURN_IF_ERROR(readCores(doc, m));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "flat_alpha", m.flatAlpha));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "flat_beta", m.flatBeta));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "message_overhead", m.messageOverhead));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "switch_cost", m.switchCost));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "yield_cost", m.yieldCost));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "kernel_copy_ratio", m.kernelCopyRatio));
  TUTTI_RETURN_IF_ERROR(readBytes(doc, "llc_bytes", m.llcBytes));
  TUTTI_RETURN_IF_ERROR(readNumber(doc, "", "cache_bandwidth", m.cacheBandwidth));
  if (const Value* loopback = doc.find("loopback"))
    TUTTI_RETURN_IF_ERROR(readLink(*loopback, "loopback", m.loopback));
  TUTTI_RETURN_IF_ERROR(readBytes(doc, "streaming_stores_from", m.streamingStoresFrom));
  TUTTI_RETURN_IF_ERROR(readBytes(doc, "ring_blocks_from", m.ringBlocksFrom));
  TUTTI_RETURN_IF_ERROR(readBytes(doc, "pair_all_reduce_rings_up_to", m.pairAllReduceRingsUpTo));
  TUTTI_RETURN_IF_ERROR(readBytes(doc, "buffers_agreed_from", m.buffersAgreedFrom));
  if (info != nullptr) *info = std::move(read);
  return m;
}

Result<MachineModel> loadModelFile(const std::string& path, ModelFileInfo* info) {
  std::ifstream in(path);
  if (!in)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("model file %s cannot be read: %s", path.c_str(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  auto model = fromJson(text.str(), info);
  if (!model.ok()) return model.status().withContext("model file " + path);
  model->origin = "file " + path;
  return model;
}

Status writeModelFile(const std::string& path, const MachineModel& model,
                      const ModelFileInfo& info) {
  // Unique per thread: the ranks of one process (threads) may write the same cache at once.
  const std::string temporary =
      strFormat("%s.tmp.%d.%zx", path.c_str(), static_cast<int>(getpid()),
                std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << toJson(model, info);
    out.flush();
    if (!out) {
      const int err = errno;
      std::remove(temporary.c_str());
      return Status(ErrorCode::kSystemError,
                    strFormat("writing the machine model to %s: %s", temporary.c_str(),
                              std::strerror(err)));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temporary.c_str());
    return Status(ErrorCode::kSystemError,
                  strFormat("writing the machine model to %s: %s", path.c_str(), std::strerror(err)));
  }
  return Status::Ok();
}

}  // namespace tutti::tuning
