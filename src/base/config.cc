#include "base/config.h"

#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/strings.h"

extern char** environ;  // NOLINT: POSIX

namespace tutti {
namespace {

// --- the kinds' syntax ------------------------------------------------------------------

bool parseValue(std::string_view text, std::string* out) {
  *out = std::string(text);
  return true;
}

bool parseValue(std::string_view text, std::int64_t* out) {
  auto v = parseInt(text);
  if (v) *out = *v;
  return v.has_value();
}

bool parseValue(std::string_view text, double* out) {
  auto v = parseDouble(text);
  if (v) *out = *v;
  return v.has_value();
}

bool parseValue(std::string_view text, bool* out) {
  const std::string up = toUpper(trim(text));
  if (up == "1" || up == "TRUE" || up == "YES" || up == "ON") *out = true;
  else if (up == "0" || up == "FALSE" || up == "NO" || up == "OFF") *out = false;
  else return false;
  return true;
}

bool parseValue(std::string_view text, std::uint64_t* out) {
  auto v = parseBytes(text);
  if (v) *out = *v;
  return v.has_value();
}

constexpr const char* kByteCount = "a byte count such as 4096, 64K or 16M";

// What a value of `kind` is, for "is not ..." messages.
const char* kindSyntax(ConfigKind kind) {
  switch (kind) {
    case ConfigKind::String: return "text";
    case ConfigKind::Int: return "an integer";
    case ConfigKind::Double: return "a number";
    case ConfigKind::Bool: return "a boolean: 1 or 0 (also true/false, yes/no, on/off)";
    case ConfigKind::Bytes: return kByteCount;
  }
  return "?";
}

// --- the rules ---------------------------------------------------------------------------

std::vector<std::string_view> ruleValues(const ConfigRule& rule) {
  std::vector<std::string_view> out;
  std::string_view rest = rule.values;
  while (!rest.empty()) {
    const std::size_t bar = rest.find('|');
    out.push_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  return out;
}

// Exact, as the code that reads such a value compares it; where case does not matter (the
// log's level and subsystems), surrounding blanks do not either, as for their reader.
bool isRuleValue(const ConfigRule& rule, std::string_view text) {
  for (std::string_view v : ruleValues(rule)) {
    if (rule.anyCase ? toUpper(v) == toUpper(trim(text)) : v == text) return true;
  }
  return false;
}

std::string joinedValues(const ConfigRule& rule) {
  std::string out;
  for (std::string_view v : ruleValues(rule)) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

// kListOf: "A,B" or "^A,B" (all but A and B), each item one of the values.
bool isRuleList(const ConfigRule& rule, std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '^') text.remove_prefix(1);
  for (const std::string& item : splitString(text, ',')) {
    if (!isRuleValue(rule, trim(item))) return false;
  }
  return true;
}

std::string rangeWords(const ConfigRule& rule) {
  std::string out = rule.zeroToo ? "0, or " : "";
  if (rule.min != nullptr && rule.max != nullptr) {
    out += rule.minExclusive ? strFormat("more than %s, at most %s", rule.min, rule.max)
                             : strFormat("%s to %s", rule.min, rule.max);
  } else if (rule.min != nullptr) {
    out += strFormat(rule.minExclusive ? "more than %s" : "at least %s", rule.min);
  } else if (rule.max != nullptr) {
    out += strFormat("at most %s", rule.max);
  }
  return out;
}

Status notAllowed(const ConfigVarInfo& info, std::string_view who, std::string_view text) {
  return Status(ErrorCode::kInvalidArgument,
                strFormat("%.*s='%.*s' is not allowed: %s", static_cast<int>(who.size()),
                          who.data(), static_cast<int>(text.size()), text.data(),
                          configAllowedValues(info).c_str()));
}

Status malformed(const ConfigVarInfo& info, std::string_view who, std::string_view text) {
  return Status(ErrorCode::kInvalidArgument,
                strFormat("%.*s='%.*s' is not %s", static_cast<int>(who.size()), who.data(),
                          static_cast<int>(text.size()), text.data(), kindSyntax(info.kind)));
}

Status checkRule(const ConfigVarInfo& info, std::string_view who, std::string_view text,
                 const std::string& value) {
  const ConfigRule& rule = info.rule;
  bool ok = true;
  switch (rule.shape) {
    case ConfigRule::Shape::kOneOf: ok = isRuleValue(rule, value); break;
    case ConfigRule::Shape::kListOf: ok = isRuleList(rule, value); break;
    case ConfigRule::Shape::kWordOrBytes:
      ok = value == rule.values || parseBytes(value).has_value();
      break;
    case ConfigRule::Shape::kAny:
    case ConfigRule::Shape::kRange: break;
  }
  return ok ? Status::Ok() : notAllowed(info, who, text);
}

Status checkRule(const ConfigVarInfo&, std::string_view, std::string_view, bool) {
  return Status::Ok();
}

// Int, Double and Bytes: min..max, the bounds read with the kind's own parser. Written so
// that NaN fails every comparison and is refused.
template <typename T>
Status checkRule(const ConfigVarInfo& info, std::string_view who, std::string_view text,
                 T value) {
  const ConfigRule& rule = info.rule;
  if (rule.shape != ConfigRule::Shape::kRange) return Status::Ok();
  if (rule.zeroToo && value == T{0}) return Status::Ok();
  T min{};
  T max{};
  if ((rule.min != nullptr && !parseValue(rule.min, &min)) ||
      (rule.max != nullptr && !parseValue(rule.max, &max)))
    return Status(ErrorCode::kInternal, strFormat("%s: a bound of its rule does not parse",
                                                  info.name));
  const bool aboveMin = rule.min == nullptr || (rule.minExclusive ? value > min : value >= min);
  const bool belowMax = rule.max == nullptr || value <= max;
  if (aboveMin && belowMax) return Status::Ok();
  return Status(ErrorCode::kInvalidArgument,
                strFormat("%.*s=%.*s is out of range: %s", static_cast<int>(who.size()),
                          who.data(), static_cast<int>(text.size()), text.data(),
                          configAllowedValues(info).c_str()));
}

// Parses `text` as `info`'s kind into `out` and checks it against the row's rule; errors
// name `who` (the variable, or the API field the value came from).
template <typename T>
Status parseChecked(const ConfigVarInfo& info, std::string_view who, std::string_view text,
                    T* out) {
  if (!parseValue(text, out)) return malformed(info, who, text);
  return checkRule(info, who, text, *out);
}

std::string suggestion(const std::string& name) {
  const ConfigVarInfo* best = nullptr;
  std::size_t bestDistance = 4;  // only suggest close names
  for (const ConfigVarInfo& info : configRegistry()) {
    std::size_t d = editDistance(name, info.name);
    if (d < bestDistance) {
      bestDistance = d;
      best = &info;
    }
  }
  return best ? strFormat(" (did you mean %s?)", best->name) : std::string();
}

}  // namespace

const std::vector<ConfigVarInfo>& configRegistry() {
  using namespace config_rule;  // the rule makers the rows name
  static const std::vector<ConfigVarInfo> registry = {
#define TUTTI_CONFIG_VAR(field, name, kind, audience, def, rule, doc) \
  {#field, name, ConfigKind::kind, ConfigAudience::audience, def, rule, doc},
#include "base/config_vars.def"
#undef TUTTI_CONFIG_VAR
  };
  return registry;
}

const ConfigVarInfo* findConfigVar(std::string_view name) {
  for (const ConfigVarInfo& info : configRegistry()) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

std::string configAllowedValues(const ConfigVarInfo& info) {
  const ConfigRule& rule = info.rule;
  switch (rule.shape) {
    case ConfigRule::Shape::kRange: {
      const char* unit = *rule.unit != '\0'                 ? rule.unit
                         : info.kind == ConfigKind::Bytes ? "bytes"
                                                          : "";
      std::string out = rangeWords(rule);
      if (*unit != '\0') out += strFormat(" (%s)", unit);
      return out;
    }
    case ConfigRule::Shape::kOneOf:
      return "one of " + joinedValues(rule) + (rule.anyCase ? " (any case)" : "");
    case ConfigRule::Shape::kListOf:
      return "a comma-separated list of " + joinedValues(rule) +
             (rule.anyCase ? " (any case)" : "") + ", led by ^ for all but those";
    case ConfigRule::Shape::kWordOrBytes: return strFormat("%s, or %s", rule.values, kByteCount);
    case ConfigRule::Shape::kAny: break;
  }
  if (info.kind == ConfigKind::String) return *rule.what != '\0' ? rule.what : "any text";
  return kindSyntax(info.kind);
}

const char* configKindName(ConfigKind kind) {
  switch (kind) {
    case ConfigKind::String: return "String";
    case ConfigKind::Int: return "Int";
    case ConfigKind::Double: return "Double";
    case ConfigKind::Bool: return "Bool";
    case ConfigKind::Bytes: return "Bytes";
  }
  return "?";
}

const char* configAudienceName(ConfigAudience audience) {
  switch (audience) {
    case ConfigAudience::User: return "user";
    case ConfigAudience::Internal: return "internal";
    case ConfigAudience::Launcher: return "launcher";
  }
  return "?";
}

Status validateConfigValue(std::string_view name, std::string_view value, std::string_view label) {
  const ConfigVarInfo* info = findConfigVar(name);
  if (info == nullptr)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("no configuration variable is named %.*s",
                            static_cast<int>(name.size()), name.data()));
  if (value.empty()) return Status::Ok();
  const std::string_view who = label.empty() ? name : label;
  switch (info->kind) {
    case ConfigKind::String: {
      std::string v;
      return parseChecked(*info, who, value, &v);
    }
    case ConfigKind::Int: {
      std::int64_t v = 0;
      return parseChecked(*info, who, value, &v);
    }
    case ConfigKind::Double: {
      double v = 0;
      return parseChecked(*info, who, value, &v);
    }
    case ConfigKind::Bool: {
      bool v = false;
      return parseChecked(*info, who, value, &v);
    }
    case ConfigKind::Bytes: {
      std::uint64_t v = 0;
      return parseChecked(*info, who, value, &v);
    }
  }
  return Status::Ok();
}

Result<Config> Config::fromMap(const std::map<std::string, std::string>& env) {
  Config config;
  const auto& registry = configRegistry();
  std::size_t index = 0;
  // An empty value means "unset", for every kind. The default passes the same checks.
#define TUTTI_CONFIG_VAR(field, name, kind, audience, def, rule, doc)                    \
  {                                                                                      \
    const ConfigVarInfo& info = registry[index++];                                       \
    auto it = env.find(name);                                                            \
    const bool present = it != env.end() && !it->second.empty();                         \
    Status s = parseChecked(info, name, present ? std::string_view(it->second)           \
                                                     : std::string_view(def),            \
                            &config.field);                                              \
    if (!s.ok()) return s;                                                               \
    if (present) config.raw_[name] = it->second;                                         \
  }
#include "base/config_vars.def"
#undef TUTTI_CONFIG_VAR
  for (const auto& [name, value] : env) {
    if (name.rfind("TUTTI_", 0) == 0 && findConfigVar(name) == nullptr) {
      config.warnings_.push_back(strFormat("unknown environment variable %s ignored%s",
                                           name.c_str(), suggestion(name).c_str()));
    }
  }
  return config;
}

const Result<Config>& Config::fromProcessEnvironment() {
  // Read once; the snapshot is immutable afterwards (STYLE.md 3.6).
  static const Result<Config> snapshot = [] {
    std::map<std::string, std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq == nullptr) continue;
      env.emplace(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
    }
    return Config::fromMap(env);
  }();
  return snapshot;
}

Config Config::defaults() {
  Result<Config> config = fromMap({});
  return std::move(config).value();
}

bool Config::isSet(const std::string& name) const { return raw_.count(name) != 0; }

std::string Config::rawValue(const std::string& name) const {
  auto it = raw_.find(name);
  if (it != raw_.end()) return it->second;
  const ConfigVarInfo* info = findConfigVar(name);
  return info ? info->defaultValue : "";
}

}  // namespace tutti
