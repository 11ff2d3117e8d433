#pragma once
// The configuration registry: every knob tutti reads is declared once in config_vars.def
// with its type, audience, default, allowed values and doc, and read here into an immutable
// Config snapshot. Every value is validated as it is parsed, defaults included.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/status.h"

namespace tutti {

enum class ConfigKind { String, Int, Double, Bool, Bytes };

/// Who sets a variable: a person (User), a person who measured the machine (Internal:
/// thresholds and sizes tuned on one machine), or a launcher (Launcher: not a knob).
enum class ConfigAudience { User, Internal, Launcher };

namespace detail_config {
template <ConfigKind K> struct KindType;
template <> struct KindType<ConfigKind::String> { using type = std::string; };
template <> struct KindType<ConfigKind::Int> { using type = std::int64_t; };
template <> struct KindType<ConfigKind::Double> { using type = double; };
template <> struct KindType<ConfigKind::Bool> { using type = bool; };
template <> struct KindType<ConfigKind::Bytes> { using type = std::uint64_t; };
}  // namespace detail_config

/// The values a variable accepts beyond its kind's syntax. Bounds are text in the row's own
/// kind ("64M", "-1", "3600"), so the docs show them as written; made by the functions of
/// config_rule below, one per shape, never field by field.
struct ConfigRule {
  enum class Shape {
    kAny,          // every value of the kind (String: text whose use checks it; see `what`)
    kRange,        // Int, Double, Bytes: min..max; `zeroToo`: 0 as well
    kOneOf,        // String: one of `values` ("a|b|c")
    kListOf,       // String: comma-separated `values`, optionally led by ^ (all but these)
    kWordOrBytes,  // String: the word `values`, or a byte count
  };
  Shape shape = Shape::kAny;
  const char* min = nullptr;  ///< kRange: smallest value; nullptr: none
  const char* max = nullptr;  ///< kRange: largest value; nullptr: none
  bool minExclusive = false;  ///< kRange: min itself is not allowed
  bool zeroToo = false;       ///< kRange: 0 is allowed besides min..max (automatic, or off)
  bool anyCase = false;       ///< kOneOf, kListOf: letters' case does not matter
  const char* values = "";    ///< kOneOf, kListOf: "a|b|c"; kWordOrBytes: the word
  const char* unit = "";      ///< kRange: what the number counts ("seconds"), for messages
  const char* what = "";      ///< kAny on String: what the text is ("a file path")
};

/// The rule makers the rows of config_vars.def use.
namespace config_rule {
constexpr ConfigRule any(const char* what = "") { return {.what = what}; }
constexpr ConfigRule range(const char* min, const char* max, const char* unit = "") {
  return {.shape = ConfigRule::Shape::kRange, .min = min, .max = max, .unit = unit};
}
constexpr ConfigRule atLeast(const char* min, const char* unit = "") {
  return range(min, nullptr, unit);
}
/// More than min (exclusive), at most max.
constexpr ConfigRule above(const char* min, const char* max, const char* unit = "") {
  return {.shape = ConfigRule::Shape::kRange, .min = min, .max = max, .minExclusive = true,
          .unit = unit};
}
/// 0 (automatic, or off), or min..max.
constexpr ConfigRule zeroOr(const char* min, const char* max, const char* unit = "") {
  return {.shape = ConfigRule::Shape::kRange, .min = min, .max = max, .zeroToo = true,
          .unit = unit};
}
constexpr ConfigRule oneOf(const char* values) {
  return {.shape = ConfigRule::Shape::kOneOf, .values = values};
}
constexpr ConfigRule oneOfAnyCase(const char* values) {
  return {.shape = ConfigRule::Shape::kOneOf, .anyCase = true, .values = values};
}
constexpr ConfigRule listOfAnyCase(const char* values) {
  return {.shape = ConfigRule::Shape::kListOf, .anyCase = true, .values = values};
}
constexpr ConfigRule wordOrBytes(const char* word) {
  return {.shape = ConfigRule::Shape::kWordOrBytes, .values = word};
}
}  // namespace config_rule

/// One row of the registry, for tools and docs.
struct ConfigVarInfo {
  const char* field;
  const char* name;
  ConfigKind kind;
  ConfigAudience audience;
  const char* defaultValue;
  ConfigRule rule;
  const char* doc;
};

/// All declared variables, in declaration order.
const std::vector<ConfigVarInfo>& configRegistry();

/// The row of `name`, or nullptr.
const ConfigVarInfo* findConfigVar(std::string_view name);

/// What `info` accepts, in words: "one of auto, shm, tcp", "0 to 10000000 (microseconds)",
/// "0, or 64 to 64M (bytes)". The text of validation errors and of docs/config.md.
std::string configAllowedValues(const ConfigVarInfo& info);

/// "String", "Int", ... and "user", "internal", "launcher".
const char* configKindName(ConfigKind kind);
const char* configAudienceName(ConfigAudience audience);

/// Checks `value` against the row of the variable `name` as the registry checks the
/// environment's value; for values that reach the same setting another way (the C++ API's
/// CommOptions::transport is TUTTI_TRANSPORT's). The error (kInvalidArgument) names `label`
/// where given, else the variable: "CommOptions::transport='udp' is not allowed: one of
/// auto, shm, tcp". An empty value is "unset" and passes. Thread-safe.
Status validateConfigValue(std::string_view name, std::string_view value,
                           std::string_view label = {});

/// An immutable snapshot of the configuration, built from an environment map. Fields are
/// typed; a variable that is not set holds its documented default.
class Config {
 public:
#define TUTTI_CONFIG_VAR(field, name, kind, audience, def, rule, doc) \
  typename ::tutti::detail_config::KindType<ConfigKind::kind>::type field{};
#include "base/config_vars.def"
#undef TUTTI_CONFIG_VAR

  /// Parses `env` (NAME -> value). A value that is malformed or not allowed is an error
  /// naming the variable, the value and what is allowed; an empty value means unset.
  /// Unknown TUTTI_* names produce warnings (see warnings()).
  static Result<Config> fromMap(const std::map<std::string, std::string>& env);

  /// The process environment, read once on first use; later calls return the same snapshot.
  static const Result<Config>& fromProcessEnvironment();

  /// A snapshot with every variable at its default.
  static Config defaults();

  /// True when the variable `name` was present (and not empty) in the environment it was
  /// built from.
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
