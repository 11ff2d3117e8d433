#include "topology/view_json.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "base/macros.h"
#include "base/strings.h"
#include "topology/json.h"

namespace tutti::topo {
namespace {

using json::Value;

std::string nicJson(const Nic& n) {
  return strFormat("{\"name\": %s, \"ipv4\": %s, \"ipv6\": %s, \"speed_mbps\": %d, \"numa_node\": %d}",
                   json::quote(n.name).c_str(), json::quote(n.ipv4).c_str(),
                   json::quote(n.ipv6).c_str(), n.speedMbps, n.numaNode);
}

// Reads one object's members, naming the field in every error; members it does not know
// are refused, so that a misspelt field is not silently ignored.
class Fields {
 public:
  Fields(const Value& object, std::string path) : object_(object), path_(std::move(path)) {}

  Status isObject() const { return expect(object_, path_, Value::Type::kObject); }

  Status known(std::initializer_list<std::string_view> names) const {
    for (const auto& [name, value] : object_.members) {
      bool found = false;
      for (const std::string_view n : names) found = found || n == name;
      if (!found)
        return error(value, join(name),
                     "unknown field (known: " + joinNames(names) + ")");
    }
    return Status::Ok();
  }

  // `required`: absent is an error; otherwise `out` keeps its value.
  Status integer(std::string_view name, int& out, bool required, int min) const {
    const Value* v = object_.find(name);
    const std::string path = join(std::string(name));
    if (v == nullptr) return required ? missing(path) : Status::Ok();
    TUTTI_RETURN_IF_ERROR(expect(*v, path, Value::Type::kNumber, "an integer"));
    if (v->number != std::floor(v->number) || v->number < min || v->number > 1e9)
      return error(*v, path, strFormat("an integer from %d expected, found %g", min, v->number));
    out = static_cast<int>(v->number);
    return Status::Ok();
  }

  Status string(std::string_view name, std::string& out, bool required) const {
    const Value* v = object_.find(name);
    const std::string path = join(std::string(name));
    if (v == nullptr) return required ? missing(path) : Status::Ok();
    TUTTI_RETURN_IF_ERROR(expect(*v, path, Value::Type::kString));
    out = v->text;
    return Status::Ok();
  }

  // The array member `name` (absent: null when not required).
  Result<const Value*> array(std::string_view name, bool required) const {
    const Value* v = object_.find(name);
    const std::string path = join(std::string(name));
    if (v == nullptr) {
      if (required) return missing(path);
      return static_cast<const Value*>(nullptr);
    }
    TUTTI_RETURN_IF_ERROR(expect(*v, path, Value::Type::kArray));
    return v;
  }

  static Status error(const Value& at, const std::string& path, const std::string& what) {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("line %d: %s: %s", at.line, path.c_str(), what.c_str()));
  }

  static Status expect(const Value& v, const std::string& path, Value::Type type,
                       const char* what = nullptr) {
    if (v.type == type) return Status::Ok();
    return error(v, path, strFormat("%s expected, found %s", what ? what : json::typeName(type),
                                    json::typeName(v.type)));
  }

 private:
  Status missing(const std::string& path) const {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("line %d: %s: missing", object_.line, path.c_str()));
  }

  // The field's path: "ranks[2].host", or "ranks" at the top.
  std::string join(const std::string& name) const {
    return path_.empty() ? name : path_ + "." + name;
  }

  static std::string joinNames(std::initializer_list<std::string_view> names) {
    std::string out;
    for (const std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
  }

  const Value& object_;
  std::string path_;
};

Result<Nic> readNic(const Value& v, const std::string& path) {
  const Fields f(v, path);
  TUTTI_RETURN_IF_ERROR(f.isObject());
  TUTTI_RETURN_IF_ERROR(f.known({"name", "ipv4", "ipv6", "speed_mbps", "numa_node"}));
  Nic nic;
  TUTTI_RETURN_IF_ERROR(f.string("name", nic.name, true));
  TUTTI_RETURN_IF_ERROR(f.string("ipv4", nic.ipv4, false));
  TUTTI_RETURN_IF_ERROR(f.string("ipv6", nic.ipv6, false));
  TUTTI_RETURN_IF_ERROR(f.integer("speed_mbps", nic.speedMbps, false, -1));
  TUTTI_RETURN_IF_ERROR(f.integer("numa_node", nic.numaNode, false, -1));
  return nic;
}

Result<HostInfo> readHost(const Value& v, const std::string& path) {
  const Fields f(v, path);
  TUTTI_RETURN_IF_ERROR(f.isObject());
  TUTTI_RETURN_IF_ERROR(f.known({"name", "id", "machine", "packages", "numa_nodes", "l3_groups",
                                 "cores", "pus", "nics"}));
  HostInfo host;
  TUTTI_RETURN_IF_ERROR(f.string("name", host.name, true));
  host.id = host.name;  // a written view may tell hosts apart by name alone
  TUTTI_RETURN_IF_ERROR(f.string("id", host.id, false));
  TUTTI_RETURN_IF_ERROR(f.string("machine", host.machine, false));
  TUTTI_RETURN_IF_ERROR(f.integer("packages", host.packages, false, 0));
  TUTTI_RETURN_IF_ERROR(f.integer("numa_nodes", host.numaNodes, false, 0));
  TUTTI_RETURN_IF_ERROR(f.integer("l3_groups", host.l3Groups, false, 0));
  TUTTI_RETURN_IF_ERROR(f.integer("cores", host.cores, false, 0));
  TUTTI_RETURN_IF_ERROR(f.integer("pus", host.pus, false, 0));
  TUTTI_ASSIGN_OR_RETURN(const Value* nics, f.array("nics", false));
  if (nics != nullptr) {
    for (std::size_t i = 0; i < nics->items.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(Nic nic, readNic(nics->items[i], strFormat("%s.nics[%zu]", path.c_str(), i)));
      host.nics.push_back(std::move(nic));
    }
  }
  return host;
}

Result<RankInfo> readRank(const Value& v, std::size_t index, int* localIndex) {
  const std::string path = strFormat("ranks[%zu]", index);
  const Fields f(v, path);
  TUTTI_RETURN_IF_ERROR(f.isObject());
  TUTTI_RETURN_IF_ERROR(f.known({"rank", "host", "local_index", "package", "numa_node",
                                 "l3_group", "cpus", "nic", "address"}));
  RankInfo rank;
  int number = -1;
  TUTTI_RETURN_IF_ERROR(f.integer("rank", number, true, 0));
  if (number != static_cast<int>(index))
    return Fields::error(*v.find("rank"), path + ".rank",
                         strFormat("%d, but ranks are listed in order: %zu expected", number, index));
  TUTTI_RETURN_IF_ERROR(f.integer("host", rank.host, true, 0));
  // Optional: where given, check() holds it against the ranks' order.
  *localIndex = -1;
  TUTTI_RETURN_IF_ERROR(f.integer("local_index", *localIndex, false, 0));
  TUTTI_RETURN_IF_ERROR(f.integer("package", rank.package, false, -1));
  TUTTI_RETURN_IF_ERROR(f.integer("numa_node", rank.numaNode, false, -1));
  TUTTI_RETURN_IF_ERROR(f.integer("l3_group", rank.l3Group, false, -1));
  TUTTI_RETURN_IF_ERROR(f.string("cpus", rank.cpus, false));
  TUTTI_RETURN_IF_ERROR(f.string("nic", rank.nic, false));
  TUTTI_RETURN_IF_ERROR(f.string("address", rank.address, false));
  return rank;
}

// Fills in the local indices a file left out: their rank order within each host.
void fillLocalIndices(View& view, const std::vector<int>& given) {
  std::vector<int> seen(view.hosts.size(), 0);
  for (std::size_t r = 0; r < view.ranks.size(); ++r) {
    RankInfo& rank = view.ranks[r];
    const int local = rank.host >= 0 && rank.host < static_cast<int>(seen.size())
                          ? seen[static_cast<std::size_t>(rank.host)]++
                          : 0;
    rank.localIndex = given[r] >= 0 ? given[r] : local;
  }
}

}  // namespace

std::string toJson(const View& view) {
  std::string out = strFormat("{\n  \"format\": %s,\n  \"version\": %d,\n  \"hosts\": [\n",
                              json::quote(kViewFormat).c_str(), kViewVersion);
  for (std::size_t h = 0; h < view.hosts.size(); ++h) {
    const HostInfo& host = view.hosts[h];
    std::string nics;
    for (std::size_t i = 0; i < host.nics.size(); ++i) nics += (i ? ", " : "") + nicJson(host.nics[i]);
    out += strFormat("    {\"name\": %s, \"id\": %s, \"machine\": %s, \"packages\": %d, "
                     "\"numa_nodes\": %d, \"l3_groups\": %d, \"cores\": %d, \"pus\": %d, "
                     "\"nics\": [%s]}%s\n",
                     json::quote(host.name).c_str(), json::quote(host.id).c_str(),
                     json::quote(host.machine).c_str(), host.packages,
                     host.numaNodes, host.l3Groups, host.cores, host.pus, nics.c_str(),
                     h + 1 < view.hosts.size() ? "," : "");
  }
  out += "  ],\n  \"ranks\": [\n";
  for (std::size_t r = 0; r < view.ranks.size(); ++r) {
    const RankInfo& rank = view.ranks[r];
    out += strFormat("    {\"rank\": %zu, \"host\": %d, \"local_index\": %d, \"package\": %d, "
                     "\"numa_node\": %d, \"l3_group\": %d, \"cpus\": %s, \"nic\": %s, "
                     "\"address\": %s}%s\n",
                     r, rank.host, rank.localIndex, rank.package, rank.numaNode, rank.l3Group,
                     json::quote(rank.cpus).c_str(), json::quote(rank.nic).c_str(),
                     json::quote(rank.address).c_str(), r + 1 < view.ranks.size() ? "," : "");
  }
  out += "  ]\n}\n";
  return out;
}

Result<View> fromJson(std::string_view text) {
  TUTTI_ASSIGN_OR_RETURN(const Value doc, json::parse(text));
  const Fields f(doc, "");
  if (doc.type != Value::Type::kObject)
    return Fields::error(doc, "the document", strFormat("an object expected, found %s",
                                                        json::typeName(doc.type)));
  TUTTI_RETURN_IF_ERROR(f.known({"format", "version", "hosts", "ranks"}));
  std::string format;
  TUTTI_RETURN_IF_ERROR(f.string("format", format, true));
  if (format != kViewFormat)
    return Fields::error(*doc.find("format"), "format",
                         strFormat("\"%s\", not a tutti topology view (\"%s\")", format.c_str(),
                                   std::string(kViewFormat).c_str()));
  int version = 0;
  TUTTI_RETURN_IF_ERROR(f.integer("version", version, true, 0));
  if (version != kViewVersion)
    return Fields::error(*doc.find("version"), "version",
                         strFormat("%d is not a version this library reads (%d)", version,
                                   kViewVersion));
  View view;
  TUTTI_ASSIGN_OR_RETURN(const Value* hosts, f.array("hosts", true));
  for (std::size_t h = 0; h < hosts->items.size(); ++h) {
    TUTTI_ASSIGN_OR_RETURN(HostInfo host, readHost(hosts->items[h], strFormat("hosts[%zu]", h)));
    view.hosts.push_back(std::move(host));
  }
  TUTTI_ASSIGN_OR_RETURN(const Value* ranks, f.array("ranks", true));
  std::vector<int> localIndices;
  for (std::size_t r = 0; r < ranks->items.size(); ++r) {
    int local = -1;
    TUTTI_ASSIGN_OR_RETURN(RankInfo rank, readRank(ranks->items[r], r, &local));
    view.ranks.push_back(std::move(rank));
    localIndices.push_back(local);
  }
  fillLocalIndices(view, localIndices);
  const Status valid = check(view);
  if (!valid.ok()) {
    // check() names the field; the line is the rank's or host's where one is named.
    const std::string& message = valid.message();
    unsigned index = 0;
    int line = doc.line;
    if (std::sscanf(message.c_str(), "ranks[%u]", &index) == 1 && index < ranks->items.size())
      line = ranks->items[index].line;
    else if (std::sscanf(message.c_str(), "hosts[%u]", &index) == 1 && index < hosts->items.size())
      line = hosts->items[index].line;
    return Status(ErrorCode::kInvalidArgument, strFormat("line %d: %s", line, message.c_str()));
  }
  return view;
}

Result<View> loadViewFile(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("topology file %s cannot be read: %s", path.c_str(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  auto view = fromJson(text.str());
  if (!view.ok()) return view.status().withContext("topology file " + path);
  return view;
}

Status writeViewFile(const std::string& path, const View& view) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << toJson(view);
    out.flush();
    if (!out)
      return Status(ErrorCode::kSystemError,
                    strFormat("writing the topology view to %s: %s", temporary.c_str(),
                              std::strerror(errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temporary.c_str());
    return Status(ErrorCode::kSystemError,
                  strFormat("writing the topology view to %s: %s", path.c_str(), std::strerror(err)));
  }
  return Status::Ok();
}

}  // namespace tutti::topo
