#pragma once
// TransportFactory: builds a communicator's transport. Shared memory when TUTTI_TRANSPORT
// allows it and every rank is on this host; TCP when none shares it; both at once (hybrid)
// when some do. It is the one place in core that knows the concrete transports and how each
// is configured (each reads its own settings from the Config); it must not touch calls.

#include <cstdint>
#include <memory>
#include <string>

#include "base/config.h"
#include "bootstrap/auth.h"
#include "schedule/collective.h"
#include "transport/link.h"
#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::detail {

/// What the transport is and what it found while connecting.
struct TransportSetup {
  std::unique_ptr<Transport> transport;
  /// Every peer is reached through shared memory: the same on every rank (shm_transport.h).
  bool sharedMemory = false;
  /// Whether this host's ranks have a core each, and two each (one more for the worker
  /// thread): from every local rank's affinity mask.
  bool coreEach = false;
  bool twoCoresEach = false;
  /// Where every peer is reached through shared memory, a ring algorithm's segment unless
  /// TUTTI_SEGMENT_BYTES says: a share of a ring (oneHostRingShare: a ring's segment is its
  /// message, and where the rings hold less than two, the next waits for the first to
  /// drain). 0 otherwise.
  std::uint64_t ringSegmentBytes = 0;
  /// Where this rank accepts TCP peers (a split's children accept there too); empty
  /// without TCP.
  std::string bindHost;
  /// The communicator's ranks by host, where the ranks span more than one (null
  /// otherwise): what hierarchical algorithms are built from.
  std::shared_ptr<const HostMap> hosts;
};

class TransportFactory {
 public:
  struct Request {
    Store* store = nullptr;
    std::string prefix;  // the communicator's store keys
    std::string name;    // the communicator's, for errors
    int rank = 0;
    int size = 1;
    std::uint64_t uid = 0;     // the communicator's id, the same on every rank
    std::string choice;        // auto, shm or tcp (TUTTI_TRANSPORT or CommOptions)
    std::string bindHost;      // the interface that reaches the store (TUTTI_BIND_ADDR wins)
    auth::Key key;             // what every peer link proves
    bool learnsPath = false;   // TUTTI_MESSAGE_PATH=learn (the ranks must agree on it)
    int localSize = 1;         // ranks on this host, as the launcher says
    /// The layers above's copies for shared memory (reduce::copy, reduce::copyTwo).
    void (*copy)(void*, const void*, std::size_t, std::size_t) = nullptr;
    void (*copyTwo)(void*, void*, const void*, std::size_t, std::size_t) = nullptr;
    Deadline deadline = Deadline::never();
  };

  static Result<TransportSetup> build(const Request& request, const Config& config);
};

}  // namespace tutti::detail
