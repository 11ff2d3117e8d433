#include "core/failure_reporter.h"

#include "base/log.h"
#include "base/strings.h"
#include "core/hang_report.h"

namespace tutti::detail {

FailureReporter::FailureReporter(Setup setup, Transport& transport)
    : setup_(std::move(setup)),
      transport_(transport),
      recorder_(setup_.name, setup_.rank, setup_.recorderSize) {
  addLiveRecorder(&recorder_, setup_.recorderSignal);
}

FailureReporter::~FailureReporter() { removeLiveRecorder(&recorder_); }

Status FailureReporter::refusal(const OpDescriber& what, const Status& health) const {
  return Status(health.code(),
                strFormat("%s refused: communicator '%s' failed earlier: %s",
                          what.describe().c_str(), setup_.name.c_str(),
                          health.message().c_str()),
                health.peerRank());
}

Status FailureReporter::failed(const OpRequest& r, const OpDescriber& what, const Status& status,
                               const ExecReport& report, bool refused) {
  // The communicator's first failure decides, not this call's symptom of it.
  const Status root = transport_.health();
  reported_ = true;
  Status result = withPeerHost(status);
  bool reported = false;
  if (root.code() == ErrorCode::kTimeout && !hangReported_ && setup_.size > 1 &&
      setup_.hangReportSec > 0) {
    // Once per communicator: later calls are refused with the same root cause, and the
    // others have stopped looking by then.
    hangReported_ = true;
    HangPosition mine;
    mine.collective = !isPointToPoint(r.spec.kind);
    mine.seq = r.seq;
    mine.late = refused;
    mine.call = what.describe();
    mine.waitingOn = report.waitingOn;
    mine.completedSteps = report.completedSteps;
    mine.totalSteps = report.totalSteps;
    HangView view =
        exchangeHangPositions(*setup_.store, setup_.prefix, setup_.rank, setup_.size, mine,
                              Deadline::afterSeconds(setup_.hangReportSec));
    view.hosts = hostLabels();
    int blame = Status::kNoRank;
    const std::string summary = summarizeHang(view, &blame);
    result = Status(status.code(), result.message() + "; " + summary,
                    blame != Status::kNoRank ? blame : status.peerRank());
    reported = true;
  }
  // A refused call repeats a failure already reported; one line per failure is enough.
  if (!refused || reported) TUTTI_WARN(kColl, "%s", result.message().c_str());
  if (root.code() == ErrorCode::kTimeout) dumpOnFailure("timeout");
  if (root.code() == ErrorCode::kAborted) dumpOnFailure("aborted");
  return result;
}

void FailureReporter::invalidArgument(const OpRequest& r, const Status& error) {
  const Status failure(ErrorCode::kAborted,
                       strFormat("rank %d passed an invalid argument to its %s, which fails "
                                 "communicator '%s': %s",
                                 setup_.rank, collectiveName(r.spec.kind), setup_.name.c_str(),
                                 error.message().c_str()),
                       setup_.rank);
  TUTTI_WARN(kColl, "%s", failure.message().c_str());
  transport_.fail(failure);
}

void FailureReporter::abort() {
  TUTTI_WARN(kColl, "communicator '%s' aborted by rank %d", setup_.name.c_str(), setup_.rank);
  transport_.fail(Status(ErrorCode::kAborted,
                         strFormat("communicator '%s' was aborted by rank %d (abort())",
                                   setup_.name.c_str(), setup_.rank),
                         setup_.rank));
  // After failing the transport: abort() returns promptly whatever the dump costs peers.
  dumpOnFailure("abort()");
}

Status FailureReporter::withPeerHost(const Status& status) const {
  const topo::View* view = setup_.view.get();
  const int peer = status.peerRank();
  if (view == nullptr || view->hosts.size() < 2 || view->size() != setup_.size || peer < 0 ||
      peer >= setup_.size)
    return status;
  const int host = view->ranks[static_cast<std::size_t>(peer)].host;
  if (host == view->ranks[static_cast<std::size_t>(setup_.rank)].host) return status;
  std::vector<int> onHost;
  for (int r = 0; r < view->size(); ++r)
    if (view->ranks[static_cast<std::size_t>(r)].host == host) onHost.push_back(r);
  return Status(status.code(),
                strFormat("%s; rank %d is on %s (%s %s)", status.message().c_str(), peer,
                          view->hostLabel(host).c_str(), onHost.size() == 1 ? "rank" : "ranks",
                          formatRankList(onHost).c_str()),
                peer);
}

std::vector<std::string> FailureReporter::hostLabels() const {
  const topo::View* view = setup_.view.get();
  if (view == nullptr || view->hosts.size() < 2 || view->size() != setup_.size) return {};
  std::vector<std::string> labels;
  for (std::size_t h = 0; h < view->hosts.size(); ++h)
    labels.push_back(view->hostLabel(static_cast<int>(h)));
  std::vector<std::string> perRank;
  for (const topo::RankInfo& r : view->ranks)
    perRank.push_back(labels[static_cast<std::size_t>(r.host)]);
  return perRank;
}

void FailureReporter::dumpOnFailure(const char* reason) {
  if (!dumped_.exchange(true, std::memory_order_acq_rel))
    recorder_.dump(reason, FlightRecorder::kFailureDumpRecords);
}

}  // namespace tutti::detail
