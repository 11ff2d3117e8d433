#pragma once
// The job secrets of the fuzz targets, shared with the corpus generator so that its seeds
// can carry handshakes those targets accept.

#include <string_view>

namespace tutti::fuzz {

/// handshake_fuzzer.cc picks among the no-secret key and these two.
inline constexpr std::string_view kFirstSecret = "the first secret of the fuzz target";
inline constexpr std::string_view kSecondSecret = "and a second one, for another job";
/// store_server_fuzzer.cc's server and client hold this one.
inline constexpr std::string_view kStoreSecret = "the fuzzed store's job secret";

}  // namespace tutti::fuzz
