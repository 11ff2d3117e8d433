#pragma once
// How errors, traces and the flight recorder name one call: "allreduce #12 (count 1000
// float32 sum, ring)". CallDescriber formats it only when an error or a trace needs it.

#include <string>

#include "core/call_stamp.h"
#include "core/flight_recorder.h"
#include "core/op_request.h"
#include "executor/executor.h"

namespace tutti::detail {

/// The call as the flight recorder keeps it; `algorithm` is a registry entry's name (or a
/// literal).
inline CallSummary summarize(const OpRequest& r, const char* algorithm) {
  CallSummary call;
  static_cast<CallKey&>(call) = r.spec;
  call.perRankCounts = !r.spec.counts.empty();
  call.tag = r.tag;
  call.seq = r.seq;
  call.algorithm = algorithm;
  return call;
}

class CallDescriber final : public OpDescriber {
 public:
  CallDescriber(const OpRequest& r, const char* algorithm) : r_(r), algorithm_(algorithm) {}
  std::string describe() const override {
    return describeCall(summarize(r_, algorithm_), countArraysHash(r_.spec));
  }
  std::string describeStamp(const CallStamp& stamp) const override {
    return detail::describeStamp(stamp, r_.seq);
  }

 private:
  const OpRequest& r_;
  const char* algorithm_;
};

}  // namespace tutti::detail
