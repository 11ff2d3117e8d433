#pragma once
// Optional transport capabilities (Transport::extension), each named by its kName. Core asks
// for one by name and works without it: a transport that has only links (TCP, later
// libfabric) implements none, and the shared-memory transport implements all three.
//   - FlatExchange: a round in which every rank reads every rank's contribution in place.
//   - DirectCopy:   large messages read or written in place between the processes (the
//                   kernel's copy), or written into the transport's buffers past the caches.
//   - MappedBuffers: buffers from tutti::memAlloc that peers read through their mapping.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "transport/link.h"
#include "tutti/deadline.h"
#include "tutti/status.h"

namespace tutti {

/// The base of every extension; Transport::extension() returns one.
class TransportExtension {
 protected:
  ~TransportExtension() = default;
};

/// One rank's part of a flat exchange (FlatExchange::flatExchange): the one round of a
/// direct algorithm whose every message is the sender's whole contribution, carried without
/// messages where the ranks share memory.
struct FlatCall {
  /// How many flat exchanges the communicator ran before this one (the same on every rank).
  std::uint64_t index = 0;
  /// The call's sequence number and stamp: every contribution must carry the same.
  std::uint64_t seq = 0;
  CallStamp stamp;
  const void* data = nullptr;
  std::size_t bytes = 0;  // at most flatBytes()
  /// Where contributions differ in size (allgatherv): rank r's must hold peerBytes[r]
  /// bytes (peerBytes[rank()] == bytes). Null: every rank's holds `bytes`.
  const std::size_t* peerBytes = nullptr;
  Deadline deadline = Deadline::never();
  std::int64_t spinNs = 0;
  /// When set, the call is registered with it (CallChecker::begin) once this rank's
  /// contribution is published, as the executor does after its first sends.
  CallChecker* checker = nullptr;
};

/// Why a flat exchange stopped, when it failed.
struct FlatStop {
  int peer = -1;           // the rank waited for, or whose contribution conflicts
  CallStamp peerStamp;     // kMismatch: the stamp that rank's contribution carried
};

/// Every rank publishes a small contribution where every other reads it in place (only
/// shared memory with every rank on one host has one).
class FlatExchange : public TransportExtension {
 public:
  static constexpr std::string_view kName = "flat";

  /// Bytes one rank may contribute to flatExchange().
  virtual std::size_t flatBytes() const = 0;

  /// Called by the driving thread: publishes `call.bytes` bytes at `call.data` as this
  /// rank's contribution where every rank reads it in place, then waits until every rank's
  /// contribution to the same call is visible. views[r] is rank r's (views[rank()] this
  /// rank's own copy), valid until this rank's next flatExchange. kMismatch when a rank
  /// contributed to the same call number under another stamp (*stop names it), kTimeout
  /// at the deadline (*stop: the first rank still missing), the transport's failure when
  /// it fails. On an error the caller fails the transport, as the executor does.
  virtual Status flatExchange(const FlatCall& call, const char** views, FlatStop* stop) = 0;

 protected:
  ~FlatExchange() = default;
};

/// Large messages moved between the processes directly (read or written in place by one
/// end) or written into the transport's buffers past the caches, as a call asks
/// (TransferRequest::preferCopy, streamPieces).
class DirectCopy : public TransportExtension {
 public:
  static constexpr std::string_view kName = "direct";

  /// The least bytes of a message this transport may move directly rather than through its
  /// buffers, unless its send prefers a copy; 0: it never does.
  virtual std::uint64_t directFrom() const = 0;
  /// Whether moving a message directly measured slow here (the kernel's copy), so that a
  /// call which does not learn its way should prefer a copy; directFrom() still says from
  /// which size a call that learns may try it.
  virtual bool directSlow() const = 0;
  /// The least bytes of a message this transport may copy into its buffers past the caches
  /// where a call asks; 0: it never does.
  virtual std::uint64_t streamedFrom() const = 0;

 protected:
  ~DirectCopy() = default;
};

/// Buffers that peers on the host read in place through their mapping of them
/// (tutti::memAlloc).
class MappedBuffers : public TransportExtension {
 public:
  static constexpr std::string_view kName = "mapped";

  /// Whether the `bytes` bytes at `data` lie in one buffer that peers can map.
  virtual bool mapped(const void* data, std::size_t bytes) const = 0;

 protected:
  ~MappedBuffers() = default;
};

}  // namespace tutti
