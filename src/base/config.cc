#include "base/config.h"

#include <cstdlib>
#include <cstring>

#include "base/strings.h"

extern char** environ;  // NOLINT: POSIX

namespace tutti {
namespace {

Status parseInto(const ConfigVarInfo& info, const std::string& text, std::string* out) {
  (void)info;
  *out = text;
  return Status::Ok();
}

Status badValue(const ConfigVarInfo& info, const std::string& text, const char* expected) {
  return Status(ErrorCode::kInvalidArgument,
                strFormat("environment variable %s='%s' is not %s", info.name, text.c_str(),
                          expected));
}

Status parseInto(const ConfigVarInfo& info, const std::string& text, std::int64_t* out) {
  auto v = parseInt(text);
  if (!v) return badValue(info, text, "an integer");
  *out = *v;
  return Status::Ok();
}

Status parseInto(const ConfigVarInfo& info, const std::string& text, double* out) {
  auto v = parseDouble(text);
  if (!v) return badValue(info, text, "a number");
  *out = *v;
  return Status::Ok();
}

[[maybe_unused]] Status parseInto(const ConfigVarInfo& info, const std::string& text, bool* out) {
  std::string up = toUpper(trim(text));
  if (up == "1" || up == "TRUE" || up == "YES" || up == "ON") *out = true;
  else if (up == "0" || up == "FALSE" || up == "NO" || up == "OFF" || up.empty()) *out = false;
  else return badValue(info, text, "a boolean (1/0, true/false, yes/no, on/off)");
  return Status::Ok();
}

Status parseInto(const ConfigVarInfo& info, const std::string& text, std::uint64_t* out) {
  auto v = parseBytes(text);
  if (!v) return badValue(info, text, "a byte count such as 4096, 64K or 16M");
  *out = *v;
  return Status::Ok();
}

const ConfigVarInfo* findVar(const std::string& name) {
  for (const ConfigVarInfo& info : configRegistry()) {
    if (name == info.name) return &info;
  }
  return nullptr;
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
  static const std::vector<ConfigVarInfo> registry = {
#define TUTTI_CONFIG_VAR(field, name, kind, def, doc) {#field, name, ConfigKind::kind, def, doc},
#include "base/config_vars.def"
#undef TUTTI_CONFIG_VAR
  };
  return registry;
}

Result<Config> Config::fromMap(const std::map<std::string, std::string>& env) {
  Config config;
  const auto& registry = configRegistry();
  std::size_t index = 0;
#define TUTTI_CONFIG_VAR(field, name, kind, def, doc)                                  \
  {                                                                                    \
    const ConfigVarInfo& info = registry[index++];                                     \
    auto it = env.find(name);                                                          \
    bool present = it != env.end();                                                    \
    /* An empty value means "unset" for every kind but String. */                      \
    if (present && ConfigKind::kind != ConfigKind::String && it->second.empty())       \
      present = false;                                                                 \
    const std::string text = present ? it->second : std::string(def);                  \
    Status s = parseInto(info, text, &config.field);                                   \
    if (!s.ok()) return s;                                                             \
    if (present) config.raw_[name] = it->second;                                       \
  }
#include "base/config_vars.def"
#undef TUTTI_CONFIG_VAR
  for (const auto& [name, value] : env) {
    if (name.rfind("TUTTI_", 0) == 0 && findVar(name) == nullptr) {
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
  const ConfigVarInfo* info = findVar(name);
  return info ? info->defaultValue : "";
}

}  // namespace tutti
