#include "topology/json.h"

#include <cmath>
#include <cstdlib>

#include "base/macros.h"
#include "base/strings.h"

namespace tutti::topo::json {

Value::Value() = default;
Value::~Value() = default;
Value::Value(const Value&) = default;
Value::Value(Value&&) noexcept = default;
Value& Value::operator=(const Value&) = default;
Value& Value::operator=(Value&&) noexcept = default;

namespace {

// Deep nesting is no part of our format; a bound keeps a hostile file from exhausting the
// stack of a recursive descent.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<Value> document() {
    Value value;
    TUTTI_RETURN_IF_ERROR(parseValue(value, 0));
    skipSpace();
    if (pos_ != text_.size()) return error("unexpected text after the document");
    return value;
  }

 private:
  Status error(const std::string& what) const {
    return Status(ErrorCode::kInvalidArgument, strFormat("line %d: %s", line_, what.c_str()));
  }

  void skipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') ++line_;
      else if (c != ' ' && c != '\t' && c != '\r') return;
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status parseValue(Value& out, int depth) {
    if (depth > kMaxDepth) return error("nested deeper than 64 levels");
    skipSpace();
    out.line = line_;
    if (pos_ == text_.size()) return error("a value expected, the text ended");
    const char c = text_[pos_];
    if (c == '{') return parseObject(out, depth);
    if (c == '[') return parseArray(out, depth);
    if (c == '"') {
      out.type = Value::Type::kString;
      return parseString(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parseNumber(out);
    if (literal("true") || literal("false")) {
      out.type = Value::Type::kBool;
      out.boolean = c == 't';
      return Status::Ok();
    }
    if (literal("null")) {
      out.type = Value::Type::kNull;
      return Status::Ok();
    }
    return error(strFormat("a value expected, found '%c'", c));
  }

  Status parseObject(Value& out, int depth) {
    out.type = Value::Type::kObject;
    ++pos_;  // '{'
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      skipSpace();
      if (pos_ == text_.size() || text_[pos_] != '"') return error("a member name (a string) expected");
      std::string key;
      TUTTI_RETURN_IF_ERROR(parseString(key));
      if (out.find(key) != nullptr) return error("member \"" + key + "\" appears twice");
      skipSpace();
      if (pos_ == text_.size() || text_[pos_] != ':') return error("':' expected after \"" + key + "\"");
      ++pos_;
      out.members.emplace_back(std::move(key), Value{});
      TUTTI_RETURN_IF_ERROR(parseValue(out.members.back().second, depth + 1));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Status::Ok();
      }
      return error("',' or '}' expected in an object");
    }
  }

  Status parseArray(Value& out, int depth) {
    out.type = Value::Type::kArray;
    ++pos_;  // '['
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      out.items.emplace_back();
      TUTTI_RETURN_IF_ERROR(parseValue(out.items.back(), depth + 1));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Status::Ok();
      }
      return error("',' or ']' expected in an array");
    }
  }

  Status parseNumber(Value& out) {
    const std::size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    const std::size_t intStart = pos_;
    if (digits() == 0) return error("a digit expected in a number");
    if (text_[intStart] == '0' && pos_ - intStart > 1) return error("a number with a leading zero");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return error("a digit expected after '.' in a number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return error("a digit expected in a number's exponent");
    }
    const std::string number(text_.substr(start, pos_ - start));
    out.type = Value::Type::kNumber;
    out.number = std::strtod(number.c_str(), nullptr);
    if (!std::isfinite(out.number)) return error("number " + number + " is out of range");
    return Status::Ok();
  }

  static void appendUtf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  Status hex4(unsigned& code) {
    if (pos_ + 4 > text_.size()) return error("four hex digits expected after \\u");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') code |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') code |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') code |= static_cast<unsigned>(c - 'A' + 10);
      else return error("four hex digits expected after \\u");
    }
    return Status::Ok();
  }

  Status parseString(std::string& out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= text_.size()) return error("a string is not closed");
      const char c = text_[pos_++];
      if (c == '"') return Status::Ok();
      if (static_cast<unsigned char>(c) < 0x20) return error("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) return error("a string is not closed");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = 0;
          TUTTI_RETURN_IF_ERROR(hex4(code));
          if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair
            unsigned low = 0;
            if (!literal("\\u")) return error("an unpaired surrogate in a string");
            TUTTI_RETURN_IF_ERROR(hex4(low));
            if (low < 0xDC00 || low >= 0xE000) return error("an unpaired surrogate in a string");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            return error("an unpaired surrogate in a string");
          }
          appendUtf8(out, code);
          break;
        }
        default: return error(strFormat("unknown escape '\\%c' in a string", e));
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [name, value] : members)
    if (name == key) return &value;
  return nullptr;
}

const char* typeName(Value::Type type) {
  switch (type) {
    case Value::Type::kNull: return "null";
    case Value::Type::kBool: return "a boolean";
    case Value::Type::kNumber: return "a number";
    case Value::Type::kString: return "a string";
    case Value::Type::kArray: return "an array";
    case Value::Type::kObject: return "an object";
  }
  return "?";
}

Result<Value> parse(std::string_view text) { return Parser(text).document(); }

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += strFormat("\\u%04x", c);
        else out += c;
    }
  }
  return out + "\"";
}

}  // namespace tutti::topo::json
