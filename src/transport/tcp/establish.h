#pragma once
// Building the full mesh of connections at communicator creation (see tcp_transport.h for
// the three phases and why they cannot deadlock).

#include <string>
#include <vector>

#include "base/fd.h"
#include "tutti/deadline.h"
#include "tutti/store.h"

namespace tutti::tcp {

struct MeshSockets {
  std::vector<UniqueFd> sockets;   // indexed by peer rank; invalid for self
  std::vector<std::string> names;  // "rank 3 (10.0.0.2:41234)", for messages
};

/// Listens on `bindHost`, publishes the address under "<keyPrefix>addr/<rank>", and connects
/// to every peer. Every returned socket is non-blocking with TCP_NODELAY.
Result<MeshSockets> establishMesh(Store& store, const std::string& keyPrefix, int rank, int size,
                                  std::uint64_t commUid, const std::string& bindHost,
                                  Deadline deadline);

}  // namespace tutti::tcp
