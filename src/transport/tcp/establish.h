#pragma once
// Building the full mesh of connections at communicator creation (see tcp_transport.h for
// the three phases and why they cannot deadlock). Every connection authenticates (auth.h)
// before its HELLO is read.

#include <chrono>
#include <string>
#include <vector>

#include "base/fd.h"
#include "bootstrap/auth.h"
#include "tutti/deadline.h"
#include "tutti/store.h"

namespace tutti::tcp {

struct MeshSockets {
  std::vector<UniqueFd> sockets;   // indexed by peer rank; invalid for self
  std::vector<std::string> names;  // "rank 3 (10.0.0.2:41234)", for messages
};

/// How establishMesh() identifies this rank and proves it belongs.
struct MeshParams {
  int rank = 0;
  int size = 1;
  std::uint64_t commUid = 0;
  /// Address to listen on (that interface only) and to publish.
  std::string bindHost;
  /// Every connection proves this key in both directions; must outlive the call.
  const auth::Key* key = nullptr;
  /// How long a connection to our listener has to authenticate.
  std::chrono::milliseconds authTimeout{5000};
};

/// Listens on `params.bindHost`, publishes the address under "<keyPrefix>addr/<rank>", and
/// connects to every peer, authenticating each connection both ways. Every returned socket
/// is non-blocking with TCP_NODELAY. Blocks until done or `deadline`. Errors: kTimeout
/// naming the ranks that never connected (and why the latest refused connection was
/// refused); kProtocolError when a peer refuses this rank's key or cannot prove its own
/// ("authenticating with rank 0 at 10.0.0.1:4000: refused this process's authentication:
/// ..."); store and socket errors.
Result<MeshSockets> establishMesh(Store& store, const std::string& keyPrefix,
                                  const MeshParams& params, Deadline deadline);

}  // namespace tutti::tcp
