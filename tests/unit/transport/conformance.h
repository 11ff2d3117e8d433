#pragma once
// What every transport must do, written once against the Transport interface
// (conformance_test.cc runs it over every transport, ranks as threads of this process), and
// the helpers the transports' own tests share.

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "transport/link.h"

namespace tutti::test {

/// Drives `t` until `req` completes (bounded: kTimeout after 30 s). Works for transports
/// with and without a progress thread.
Status waitFor(Transport& t, TransferRequest& req);

/// Drives `t` until its health() reports a failure; returns it (kTimeout after 30 s).
Status waitForFailure(Transport& t);

/// A byte pattern that differs per seed and position.
std::vector<std::uint8_t> pattern(std::size_t n, int seed);

/// Every rank sends every other rank one message of each size (tags 1000 + k), posts its
/// receives in reverse order (most messages arrive before their receive) and checks every
/// byte. One thread per rank, driving its transport (setDriving) where `driven`, as a call
/// does. Returns "" or what went wrong, per rank.
std::string exchangeAllPairs(const std::vector<Transport*>& ranks,
                             const std::vector<std::size_t>& sizes, bool driven = false);

/// What a conformance test asks of the transports it connects.
struct ConnectOptions {
  /// Bytes of unexpected messages (no receive posted yet) a rank buffers per peer before it
  /// stops taking that peer's messages; each message's entry counts as well as its payload.
  std::uint64_t maxUnexpectedBytes = 64u << 20;
};

/// One transport per rank of a world, connected to each other.
struct Ranks {
  std::vector<std::unique_ptr<Transport>> transports;
  /// Unexpected messages rank `rank` holds now, from all its peers.
  std::function<std::size_t(int rank)> unexpectedMessages;

  Transport& operator[](int rank) { return *transports[static_cast<std::size_t>(rank)]; }
};

/// A transport under the conformance suite: its name in the tests' names, and how to
/// connect `size` ranks of it (gtest failures when it cannot). A new transport joins the
/// suite with one entry in conformance_test.cc's list.
struct TransportKind {
  std::string name;
  std::function<Ranks(int size, const ConnectOptions& options)> connect;
};

/// Shows a parameter as its name (gtest's PrintTo, found by argument lookup).
inline void PrintTo(const TransportKind& kind, std::ostream* os) { *os << kind.name; }

}  // namespace tutti::test
