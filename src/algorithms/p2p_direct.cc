// Point-to-point send and receive: one step each. They go through the same executor as the
// collectives so that deadlines, cancellation and failure reporting are the same code. The
// peer may be this rank itself (a message to self, through the transport's loopback link).
// Cost: alpha + N beta.

#include "algorithms/algorithm.h"

namespace tutti {

Schedule buildSendDirect(const CollectiveSpec& spec) {
  ScheduleBuilder b(spec.rank, spec.size);
  b.allowSelfMessages();
  b.send(spec.peer, {BufferKind::kInput, 0, spec.count});
  return std::move(b).build();
}

Schedule buildRecvDirect(const CollectiveSpec& spec) {
  ScheduleBuilder b(spec.rank, spec.size);
  b.allowSelfMessages();
  b.recv(spec.peer, {BufferKind::kOutput, 0, spec.count});
  return std::move(b).build();
}

}  // namespace tutti
