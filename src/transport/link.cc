#include "transport/link.h"

#include "base/strings.h"
#include "transport/loopback.h"

namespace tutti {

Transport::Transport() = default;
Transport::~Transport() = default;

Link& Transport::loopback() {
  // The thread driving calls asks; threads hand that role over through the communicator's
  // queue lock, but call_once keeps a first use from two threads safe regardless.
  std::call_once(loopbackMade_,
                 [this] { loopback_ = std::make_unique<LoopbackLink>(rank(), &progressSignal()); });
  return *loopback_;
}

Status stampMismatch(TransferRequest* request, int peer, const std::string& peerName,
                     const CallStamp& remote) {
  request->peerStamp = remote;
  return Status(ErrorCode::kMismatch,
                strFormat("%s sent a message (tag 0x%llx) of a different call than this rank's: "
                          "the ranks called different operations, counts, types, roots or "
                          "algorithms",
                          peerName.c_str(), static_cast<unsigned long long>(request->tag)),
                peer);
}

}  // namespace tutti
