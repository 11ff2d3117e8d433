#pragma once
// Small string utilities used across layers (GCC 12 has no <format>).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tutti {

/// printf into a std::string; the format is checked by the compiler.
std::string strFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/// "1.5 MiB", "512 B".
std::string humanBytes(std::uint64_t bytes);

/// Parses "4096", "64K", "16M", "1G" (binary multiples, optional trailing "B" or "iB").
std::optional<std::uint64_t> parseBytes(std::string_view text);

/// Parses a whole decimal integer (optional sign); nullopt on junk or overflow.
std::optional<std::int64_t> parseInt(std::string_view text);

/// Parses a whole floating-point number; nullopt on junk.
std::optional<double> parseDouble(std::string_view text);

std::vector<std::string> splitString(std::string_view text, char sep);
std::string_view trim(std::string_view text);
std::string toUpper(std::string_view text);

/// Levenshtein distance, for "did you mean" suggestions.
std::size_t editDistance(std::string_view a, std::string_view b);

/// Formats a sorted list of ranks compactly: {0,1,2,5,7,8} -> "0-2,5,7-8".
std::string formatRankList(const std::vector<int>& sortedRanks);

}  // namespace tutti
