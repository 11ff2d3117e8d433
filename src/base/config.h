#pragma once
// The configuration registry: every knob tutti reads is declared once in config_vars.def
// with its type, default and doc, and read here into an immutable Config snapshot.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tutti/status.h"

namespace tutti {

enum class ConfigKind { String, Int, Double, Bool, Bytes };

namespace detail_config {
template <ConfigKind K> struct KindType;
template <> struct KindType<ConfigKind::String> { using type = std::string; };
template <> struct KindType<ConfigKind::Int> { using type = std::int64_t; };
template <> struct KindType<ConfigKind::Double> { using type = double; };
template <> struct KindType<ConfigKind::Bool> { using type = bool; };
template <> struct KindType<ConfigKind::Bytes> { using type = std::uint64_t; };
}  // namespace detail_config

/// One row of the registry, for tools and docs.
struct ConfigVarInfo {
  const char* field;
  const char* name;
  ConfigKind kind;
  const char* defaultValue;
  const char* doc;
};

/// All declared variables, in declaration order.
const std::vector<ConfigVarInfo>& configRegistry();

/// An immutable snapshot of the configuration, built from an environment map. Fields are
/// typed; a variable that is not set holds its documented default.
class Config {
 public:
#define TUTTI_CONFIG_VAR(field, name, kind, def, doc) \
  typename ::tutti::detail_config::KindType<ConfigKind::kind>::type field{};
#include "base/config_vars.def"
#undef TUTTI_CONFIG_VAR

  /// Parses `env` (NAME -> value). Malformed values are errors naming the variable;
  /// unknown TUTTI_* names produce warnings (see warnings()).
  static Result<Config> fromMap(const std::map<std::string, std::string>& env);

  /// The process environment, read once on first use; later calls return the same snapshot.
  static const Result<Config>& fromProcessEnvironment();

  /// A snapshot with every variable at its default.
  static Config defaults();

  /// True when the variable `name` was present in the environment it was built from.
  bool isSet(const std::string& name) const;
  /// The raw text of `name` as given, or its default.
  std::string rawValue(const std::string& name) const;
  /// Messages about unknown TUTTI_* variables ("did you mean ...").
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::map<std::string, std::string> raw_;
  std::vector<std::string> warnings_;
};

}  // namespace tutti
