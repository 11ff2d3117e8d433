#pragma once
// A small, strict JSON reader and the string escaping of its writers: enough for the
// topology view's file (docs/topology.md), which is our own format. The core library takes
// no JSON dependency for one file. Numbers are read as doubles; every value remembers the
// line it starts on, so that errors about a file's content can name where they are.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/status.h"

namespace tutti::topo::json {

struct Value {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;                                    // kString
  std::vector<Value> items;                            // kArray
  std::vector<std::pair<std::string, Value>> members;  // kObject, in file order
  int line = 1;                                        // where the value starts

  // Defined in json.cc, where Value is complete: the members hold Values, and clang with
  // libstdc++ refuses to instantiate their destructor from inside the class.
  Value();
  ~Value();
  Value(const Value&);
  Value(Value&&) noexcept;
  Value& operator=(const Value&);
  Value& operator=(Value&&) noexcept;

  /// The member named `key` of an object, or null (also for a value that is no object).
  const Value* find(std::string_view key) const;
};

/// "null", "a boolean", "a number", "a string", "an array", "an object": for messages.
const char* typeName(Value::Type type);

/// Parses one JSON document (RFC 8259, with no duplicate keys in an object). Errors are
/// kInvalidArgument "line L: what was expected".
Result<Value> parse(std::string_view text);

/// `text` as a JSON string literal, quotes included.
std::string quote(std::string_view text);

}  // namespace tutti::topo::json
