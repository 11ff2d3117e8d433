#include "executor/farewell.h"

#include "base/macros.h"
#include "base/strings.h"
#include "schedule/schedule.h"
#include "transport/tag.h"

namespace tutti {
namespace {

// The user tags of the two rounds' messages: above every tag a user call can pass (an int
// >= 0), so no user message is ever taken for a goodbye.
constexpr std::uint32_t kGoodbyeTag = 0xfffffff0u;

class FarewellDescriber final : public OpDescriber {
 public:
  FarewellDescriber(int rank, int round) : rank_(rank), round_(round) {}
  std::string describe() const override {
    return strFormat("rank %d's farewell (round %d of 2, destroying the communicator)", rank_,
                     round_);
  }
  std::string describeStamp(const CallStamp&) const override { return "a call"; }

 private:
  const int rank_;
  const int round_;
};

// A goodbye to every peer and one from every peer, all at once.
Schedule goodbyes(int rank, int size) {
  ScheduleBuilder b(rank, size);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    b.send(peer, Region{BufferKind::kInput, 0, 0});
    b.recv(peer, Region{BufferKind::kOutput, 0, 0});
  }
  return std::move(b).build();
}

Status runRound(Transport& transport, const Schedule& schedule, int round, Deadline deadline,
                std::int64_t spinNs, ExecutorPool& pool) {
  const FarewellDescriber what(transport.rank(), round);
  ExecParams params;
  params.dtype = DataType::kUint8;
  params.worldSize = transport.size();
  params.tagBase = p2pTag(0, kGoodbyeTag + static_cast<std::uint32_t>(round));
  params.deadline = deadline;
  params.spinNs = spinNs;
  params.maxInflight = schedule.steps.size();  // every goodbye in flight at once
  params.what = &what;
  return execute(transport, schedule, ExecBuffers{}, params, pool);
}

}  // namespace

Status farewell(Transport& transport, CallChecker* checker, Deadline deadline,
                std::int64_t spinNs, ExecutorPool& pool) {
  if (transport.size() < 2) return Status::Ok();
  TUTTI_RETURN_IF_ERROR(transport.health());
  if (checker != nullptr) {
    // From here a message of a call this rank never began fails on arrival (a peer's probe
    // included), so a peer still waiting in such a call learns of it now.
    Status unbegun = checker->close();
    if (!unbegun.ok()) {
      transport.fail(unbegun);
      return transport.health();
    }
  }
  const Schedule schedule = goodbyes(transport.rank(), transport.size());
  TUTTI_RETURN_IF_ERROR(runRound(transport, schedule, 1, deadline, spinNs, pool));
  return runRound(transport, schedule, 2, deadline, spinNs, pool);
}

}  // namespace tutti
