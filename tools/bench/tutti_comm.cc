#include "bench/tutti_comm.h"

namespace tutti::bench {

int TuttiComm::rank() const { return comm_.rank(); }

int TuttiComm::size() const { return comm_.size(); }

Status TuttiComm::barrier() { return comm_.barrier(); }

Status TuttiComm::allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                            ReduceOp op, const std::string& algorithm) {
  CallOptions options;
  options.algorithm = algorithm;
  return comm_.allreduce(send, recv, count, dtype, op, options);
}

Result<std::string> TuttiComm::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                            const std::string& forced) const {
  return comm_.algorithmFor(kind, count, dtype, forced);
}

}  // namespace tutti::bench
