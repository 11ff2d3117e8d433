#pragma once
// What every transport must do, written once against the Transport interface and run by
// each transport's tests over its own connected ranks (threads of this process).

#include <cstdint>
#include <string>
#include <vector>

#include "transport/link.h"

namespace tutti::test {

/// Drives `t` until `req` completes (bounded: kTimeout after 30 s). Works for transports
/// with and without a progress thread.
Status waitFor(Transport& t, TransferRequest& req);

/// A byte pattern that differs per seed and position.
std::vector<std::uint8_t> pattern(std::size_t n, int seed);

/// Every rank sends every other rank one message of each size (tags 1000 + k), posts its
/// receives in reverse order (most messages arrive before their receive) and checks every
/// byte. One thread per rank. Returns "" or what went wrong, per rank.
std::string exchangeAllPairs(const std::vector<Transport*>& ranks,
                             const std::vector<std::size_t>& sizes);

}  // namespace tutti::test
