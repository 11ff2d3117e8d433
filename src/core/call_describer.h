#pragma once
// describe() of one call for the executor's errors (OpDescriber), formatted only when an
// error or a trace needs it. Shared by CommImpl's sequential path and its point-to-point
// groups (p2p_group.cc).

#include <string>

#include "core/call_stamp.h"
#include "core/comm_impl.h"
#include "executor/executor.h"

namespace tutti::detail {

class CallDescriber final : public OpDescriber {
 public:
  CallDescriber(const CommImpl& comm, const OpRequest& r, const char* algorithm)
      : comm_(comm), r_(r), algorithm_(algorithm) {}
  std::string describe() const override { return comm_.describe(r_, algorithm_); }
  std::string describeStamp(const CallStamp& stamp) const override {
    return detail::describeStamp(stamp, r_.seq);
  }

 private:
  const CommImpl& comm_;
  const OpRequest& r_;
  const char* algorithm_;
};

}  // namespace tutti::detail
