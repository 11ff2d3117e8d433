#pragma once
// Checks and semantics shared by every Store implementation in this layer (memory, prefix,
// TCP client and server), so that all of them enforce the same bounds with the same words.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/status.h"

namespace tutti::detail {

/// kInvalidArgument when `key` is longer than Store::kMaxKeyBytes.
Status checkKey(const std::string& key);
/// kInvalidArgument when `value` is longer than Store::kMaxValueBytes.
Status checkValue(const std::vector<std::uint8_t>& value);
/// kInvalidArgument when there are more than Store::kMaxKeysPerWait keys or one is too long.
Status checkWaitKeys(const std::vector<std::string>& keys);

/// The `add` rule: parses `*stored` as decimal (empty = absent = 0), adds `delta`, writes the
/// sum back as decimal text and returns it. kInvalidArgument naming `key` when the stored
/// value is not an integer or the sum overflows; `*stored` is unchanged then.
Result<std::int64_t> addDecimal(const std::string& key, std::vector<std::uint8_t>* stored,
                                bool present, std::int64_t delta);

/// "[a, b, c]" for error messages, listing at most `limit` keys ("... and 7 more").
std::string describeKeys(const std::vector<std::string>& keys, std::size_t limit = 8);

}  // namespace tutti::detail
