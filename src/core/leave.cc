// How a communicator ends (CommImpl::leave): its issued operations finish, its ranks say
// farewell (executor/farewell.h) so that a mismatch no call could see is found on every
// rank, and it leaves its peers.

#include "base/log.h"
#include "base/strings.h"
#include "bootstrap/tcp_store.h"
#include "core/comm_impl.h"
#include "executor/farewell.h"

namespace tutti::detail {

Status CommImpl::leave() {
  if (left_) return Status::Ok();
  left_ = true;
  queue_.stop();  // queued calls finish (by their deadlines) first
  Status found;
  // A rank whose calls all succeeded may learn only now that a peer ran another call (a
  // broadcast root that only sent, where another rank took another root). Other failures
  // found on the way out (a peer that left early or never came) were never a call's to
  // report: the transport logs them.
  if (id_.size > 1 && transport_->health().ok()) {
    ExecutorPool pool;
    (void)farewell(*transport_, &checker_, Deadline::after(id_.timeout), ExecParams{}.spinNs,
                   pool);
  }
  const Status root = transport_->health();
  if (root.code() == ErrorCode::kMismatch && !failures_.reported()) {
    found = root.withContext(strFormat("destroying communicator '%s' on rank %d",
                                       id_.name.c_str(), id_.rank));
    TUTTI_WARN(kColl, "%s", found.message().c_str());
  }
  transport_->shutdown(Deadline::afterSeconds(5));
  if (id_.ownedServer) id_.ownedServer->stop();
  return found;
}

}  // namespace tutti::detail
