// Network: the description of the network between hosts, parsed from "fat-tree:..." style
// text or a JSON file (network.h has the syntax).
#include "tuning/network.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/macros.h"
#include "base/strings.h"
#include "topology/json.h"

namespace tutti::tuning {

namespace {

Status bad(const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "network: " + what);
}

Result<double> number(std::string_view key, std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || errno != 0 || !std::isfinite(v))
    return bad(strFormat("%.*s: a number expected, found '%s'", static_cast<int>(key.size()),
                         key.data(), copy.c_str()));
  return v;
}

// One "key=value" setting of parse() or a member of a file, into `net`.
Status apply(Network& net, std::string_view key, double v) {
  auto need = [&](bool ok, const char* what) {
    return ok ? Status::Ok()
              : bad(strFormat("%.*s must be %s, got %g", static_cast<int>(key.size()), key.data(),
                              what, v));
  };
  const bool fatTree = net.kind == Network::Kind::kFatTree;
  const bool rail = net.kind == Network::Kind::kRail;
  if (key == "nic-gbps") {
    TUTTI_RETURN_IF_ERROR(need(v > 0, "> 0"));
    net.nicBandwidth = v * 1e9 / 8;
  } else if (key == "hop-us") {
    TUTTI_RETURN_IF_ERROR(need(v >= 0, ">= 0"));
    net.hopLatency = v * 1e-6;
  } else if (key == "hosts-per-leaf" && fatTree) {
    TUTTI_RETURN_IF_ERROR(need(v >= 1 && v == std::floor(v) && v < 1e9, "a whole number >= 1"));
    net.hostsPerLeaf = static_cast<int>(v);
  } else if (key == "oversub" && fatTree) {
    TUTTI_RETURN_IF_ERROR(need(v >= 1, ">= 1 (R:1 oversubscription)"));
    net.oversub = v;
  } else if (key == "rails" && rail) {
    TUTTI_RETURN_IF_ERROR(need(v >= 1 && v == std::floor(v) && v < 1e6, "a whole number >= 1"));
    net.rails = static_cast<int>(v);
  } else if (key == "spine-oversub" && rail) {
    TUTTI_RETURN_IF_ERROR(need(v >= 1, ">= 1"));
    net.oversub = v;
  } else {
    const char* known = fatTree ? "hosts-per-leaf, oversub, nic-gbps, hop-us"
                        : rail  ? "rails, spine-oversub, nic-gbps, hop-us"
                                : "nic-gbps, hop-us";
    return bad(strFormat("unknown setting '%.*s'; known: %s", static_cast<int>(key.size()),
                         key.data(), known));
  }
  return Status::Ok();
}

Status finishCheck(const Network& net) {
  if (net.kind == Network::Kind::kFatTree && net.hostsPerLeaf < 1)
    return bad("fat-tree needs hosts-per-leaf=K");
  return Status::Ok();
}

}  // namespace

Result<Network> Network::parse(std::string_view text) {
  Network net;
  const std::size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  if (kind == "flat") {
    net.kind = Kind::kFlat;
  } else if (kind == "fat-tree") {
    net.kind = Kind::kFatTree;
  } else if (kind == "rail") {
    net.kind = Kind::kRail;
  } else {
    return bad(strFormat("unknown network '%.*s'; known: flat, fat-tree:..., rail:... or a file",
                         static_cast<int>(text.size()), text.data()));
  }
  std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad(strFormat("'%.*s': key=value expected", static_cast<int>(item.size()), item.data()));
    TUTTI_ASSIGN_OR_RETURN(double v, number(item.substr(0, eq), item.substr(eq + 1)));
    TUTTI_RETURN_IF_ERROR(apply(net, item.substr(0, eq), v));
  }
  TUTTI_RETURN_IF_ERROR(finishCheck(net));
  return net;
}

Result<Network> Network::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return bad(strFormat("cannot read '%s'", path.c_str()));
  std::stringstream text;
  text << in.rdbuf();
  auto doc = topo::json::parse(text.str());
  if (!doc.ok()) return bad(path + ": " + doc.status().message());
  if (doc->type != topo::json::Value::Type::kObject)
    return bad(path + ": an object expected at the top");
  const topo::json::Value* kind = doc->find("kind");
  if (kind == nullptr || kind->type != topo::json::Value::Type::kString)
    return bad(path + ": \"kind\" (\"flat\", \"fat-tree\" or \"rail\") expected");
  auto parsed = parse(kind->text);
  if (!parsed.ok()) return bad(path + ": " + parsed.status().message());
  Network net = *parsed;
  for (const auto& [key, value] : doc->members) {
    if (key == "kind") continue;
    std::string dashed = key;
    for (char& c : dashed)
      if (c == '_') c = '-';
    if (value.type != topo::json::Value::Type::kNumber)
      return bad(strFormat("%s: line %d: %s: a number expected", path.c_str(), value.line,
                           key.c_str()));
    Status s = apply(net, dashed, value.number);
    if (!s.ok()) return bad(strFormat("%s: line %d: %s", path.c_str(), value.line, s.message().c_str()));
  }
  Status s = finishCheck(net);
  if (!s.ok()) return bad(path + ": " + s.message());
  return net;
}

Result<Network> Network::fromArgument(const std::string& text) {
  if (text == "flat" || text.rfind("flat:", 0) == 0 || text.rfind("fat-tree", 0) == 0 ||
      text.rfind("rail", 0) == 0)
    return parse(text);
  std::ifstream probe(text);
  if (!probe)
    return bad(strFormat("unknown network '%s': not flat, fat-tree:..., rail:... nor a file "
                         "that can be read",
                         text.c_str()));
  return load(text);
}

std::string Network::describe() const {
  std::string out;
  switch (kind) {
    case Kind::kFlat: out = "flat"; break;
    case Kind::kFatTree:
      out = strFormat("fat-tree:hosts-per-leaf=%d,oversub=%g", hostsPerLeaf, oversub);
      break;
    case Kind::kRail:
      out = strFormat("rail:rails=%d,spine-oversub=%g", rails, oversub);
      break;
  }
  std::string extra;
  if (nicBandwidth > 0) extra += strFormat(",nic-gbps=%g", nicBandwidth * 8 / 1e9);
  if (hopLatency > 0) extra += strFormat(",hop-us=%g", hopLatency * 1e6);
  if (!extra.empty()) out += kind == Kind::kFlat ? ":" + extra.substr(1) : extra;
  return out;
}

}  // namespace tutti::tuning
