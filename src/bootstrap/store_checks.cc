// Shared store rules. Keeping them in one place is what makes MemoryStore, PrefixStore and
// the TCP client and server refuse exactly the same inputs with the same messages.

#include "bootstrap/store_checks.h"

#include <string_view>

#include "base/strings.h"
#include "tutti/store.h"

namespace tutti {

// The interface's only out-of-line member; defined here so every layer above links one copy.
Store::~Store() = default;

namespace detail {

Status checkKey(const std::string& key) {
  if (key.size() > Store::kMaxKeyBytes)
    return Status(
        ErrorCode::kInvalidArgument,
        strFormat("store key of %zu bytes exceeds the limit of %zu bytes (key starts '%s')",
                  key.size(), Store::kMaxKeyBytes, key.substr(0, 32).c_str()));
  return Status::Ok();
}

Status checkValue(const std::vector<std::uint8_t>& value) {
  if (value.size() > Store::kMaxValueBytes)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("store value of %zu bytes exceeds the limit of %zu bytes", value.size(),
                            Store::kMaxValueBytes));
  return Status::Ok();
}

Status checkWaitKeys(const std::vector<std::string>& keys) {
  if (keys.size() > Store::kMaxKeysPerWait)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("store wait on %zu keys exceeds the limit of %zu keys", keys.size(),
                            Store::kMaxKeysPerWait));
  for (const std::string& key : keys) {
    Status s = checkKey(key);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::int64_t> addDecimal(const std::string& key, std::vector<std::uint8_t>* stored,
                                bool present, std::int64_t delta) {
  // Only the stored text decides: a key set to "12" by set() counts like one made by add().
  std::int64_t current = 0;
  if (present) {
    std::string_view text(reinterpret_cast<const char*>(stored->data()), stored->size());
    auto parsed = parseInt(text);
    if (!parsed)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("store add on key '%s': its value '%s' is not a decimal integer",
                              key.c_str(), std::string(text.substr(0, 32)).c_str()));
    current = *parsed;
  }
  // Wrapping around would silently corrupt a counter that ranks use to agree on things.
  std::int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum))
    return Status(
        ErrorCode::kInvalidArgument,
        strFormat("store add on key '%s': %lld + %lld overflows a 64-bit integer", key.c_str(),
                  static_cast<long long>(current), static_cast<long long>(delta)));
  std::string text = std::to_string(sum);
  stored->assign(text.begin(), text.end());
  return sum;
}

std::string describeKeys(const std::vector<std::string>& keys, std::size_t limit) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    // Keys may be up to 4 KiB; a message stays readable with the start of each.
    out += keys[i].size() <= 64 ? keys[i] : keys[i].substr(0, 64) + "...";
  }
  if (keys.size() > limit) out += strFormat(", ... and %zu more", keys.size() - limit);
  out += "]";
  return out;
}

}  // namespace detail
}  // namespace tutti
