#include "transport/link.h"

#include "base/strings.h"

namespace tutti {

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
