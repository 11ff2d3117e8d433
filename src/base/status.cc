#include "tutti/status.h"

namespace tutti {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidUsage: return "invalid usage";
    case ErrorCode::kMismatch: return "mismatch";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kPeerFailure: return "peer failure";
    case ErrorCode::kProtocolError: return "protocol error";
    case ErrorCode::kSystemError: return "system error";
    case ErrorCode::kNotSupported: return "not supported";
    case ErrorCode::kAborted: return "aborted";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string Status::toString() const {
  if (ok()) return "ok";
  std::string out = errorCodeName(code_);
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status Status::withContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_, peerRank_);
}

}  // namespace tutti
