// Agreeing on the machine model at creation (model_setup.h).
#include "core/model_setup.h"

#include <utility>
#include <vector>

#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/bounded_store.h"
#include "tuning/model_cache.h"
#include "tuning/model_json.h"
#include "tuning/probe_network.h"

namespace tutti::detail {
namespace {

// What rank 0 sets when it has no model: the others fail with its reason.
constexpr std::string_view kErrorMark = "error\n";

std::vector<std::uint8_t> bytesOf(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

// What rank 0 sets under the network result when the model stays as agreed.
constexpr std::string_view kUnchanged = "unchanged";

// Why rank 0 does not probe the network of a communicator spanning hosts; empty: it does.
std::string whyNoNetworkProbe(const tuning::MachineModel& model, const Config& config) {
  if (!config.netProbe) return "TUTTI_NET_PROBE is off";
  if (model.origin.rfind("file", 0) == 0) return "the model comes from TUTTI_TUNING_FILE";
  if (!config.topoFile.empty()) return "the hosts come from TUTTI_TOPO_FILE";
  return "";
}

// Rank 0's side: probes with `follower` or not, and publishes the outcome.
Result<std::shared_ptr<const tuning::MachineModel>> leadNetwork(
    const NetworkRequest& q, std::shared_ptr<const tuning::MachineModel> model, int follower,
    const Config& config) {
  const std::string key = q.prefix + "tuning/network";
  const std::string skip = whyNoNetworkProbe(*model, config);
  if (!skip.empty()) {
    TUTTI_RETURN_IF_ERROR(setBefore(*q.store, key, bytesOf(std::string(kUnchanged)), q.deadline));
    TUTTI_RETURN_IF_ERROR(setBefore(*q.store, key + "/plan", bytesOf("skip"), q.deadline));
    TUTTI_INFO(kTune, "network: not measured (%s): %.0f Mbit/s, %.1f us", skip.c_str(),
               model->nicBandwidth * 8 / 1e6,
               model->path(tuning::PathClass::kNetwork).alpha * 1e6);
    return model;
  }
  TUTTI_RETURN_IF_ERROR(setBefore(*q.store, key + "/plan", bytesOf("probe"), q.deadline));
  std::string why;
  q.transport->setDriving(true);
  const auto costs = tuning::leadNetworkProbe(*q.transport, follower, q.deadline, &why);
  q.transport->setDriving(false);
  if (!costs) {
    const std::string message = strFormat("the network probe with rank %d: %s", follower,
                                          why.c_str());
    (void)setBefore(*q.store, key, bytesOf(std::string(kErrorMark) + message), q.deadline);
    return Status(q.transport->health().ok() ? ErrorCode::kTimeout : ErrorCode::kPeerFailure,
                  message, follower);
  }
  const std::string implausible = tuning::implausibleNetwork(*costs);
  if (!implausible.empty()) {
    TUTTI_WARN(kTune, "network: the probe with rank %d measured what no network gives (%s); "
               "the model keeps %.0f Mbit/s", follower, implausible.c_str(),
               model->nicBandwidth * 8 / 1e6);
    TUTTI_RETURN_IF_ERROR(setBefore(*q.store, key, bytesOf(std::string(kUnchanged)), q.deadline));
    return model;
  }
  tuning::MachineModel measured = *model;
  tuning::applyNetworkCosts(*costs, measured);
  measured.origin += strFormat("; network measured with rank %d", follower);
  TUTTI_RETURN_IF_ERROR(setBefore(*q.store, key, bytesOf(encodeModel(measured)), q.deadline));
  const std::string bucket =
      costs->burstBytes > 0
          ? strFormat("; a shaped link's bucket of %llu KiB at %.0f Mbit/s",
                      static_cast<unsigned long long>(costs->burstBytes >> 10),
                      measured.nicLineBandwidth * 8e-6)
          : std::string();
  TUTTI_INFO(kTune,
             "network: measured with rank %d: %.1f us one way (alpha %.1f us), %.0f Mbit/s "
             "sustained over %zu KiB%s (%.1f ms)",
             follower, costs->oneWay * 1e6,
             measured.path(tuning::PathClass::kNetwork).alpha * 1e6, 8e-6 / costs->beta,
             costs->roundBytes >> 10, bucket.c_str(), costs->seconds * 1e3);
  return std::make_shared<const tuning::MachineModel>(std::move(measured));
}

}  // namespace

Result<std::shared_ptr<const tuning::MachineModel>> agreeOnNetwork(
    const NetworkRequest& q, std::shared_ptr<const tuning::MachineModel> model,
    const Config& config) {
  if (q.view == nullptr || q.view->hosts.size() < 2) return model;
  const std::vector<int> hostOf = q.view->hostOfRanks();
  int follower = -1;
  for (int r = 1; r < q.size && follower < 0; ++r)
    if (hostOf[static_cast<std::size_t>(r)] != hostOf[0]) follower = r;
  if (follower < 0) return model;
  if (q.rank == 0) return leadNetwork(q, std::move(model), follower, config);
  const std::string key = q.prefix + "tuning/network";
  if (q.rank == follower) {
    auto plan = q.store->get(key + "/plan", q.deadline);
    if (!plan.ok()) return plan.status().withContext("waiting for rank 0's network plan");
    if (std::string(plan->begin(), plan->end()) == "probe") {
      std::string why;
      q.transport->setDriving(true);
      const bool ok = tuning::followNetworkProbe(*q.transport, 0, q.deadline, &why);
      q.transport->setDriving(false);
      if (!ok)
        return Status(q.transport->health().ok() ? ErrorCode::kTimeout : ErrorCode::kPeerFailure,
                      "the network probe with rank 0: " + why, 0);
    }
  }
  auto raw = q.store->get(key, q.deadline);
  if (!raw.ok()) return raw.status().withContext("waiting for rank 0's network figures");
  const std::string value(raw->begin(), raw->end());
  if (value == kUnchanged) return model;
  if (value.rfind(kErrorMark, 0) == 0)
    return Status(ErrorCode::kPeerFailure,
                  "rank 0 could not measure the network: " + value.substr(kErrorMark.size()), 0);
  TUTTI_ASSIGN_OR_RETURN(tuning::MachineModel measured, decodeModel(value));
  return std::make_shared<const tuning::MachineModel>(std::move(measured));
}

std::string encodeModel(const tuning::MachineModel& model) {
  std::string origin = model.origin;
  for (char& c : origin)
    if (c == '\n') c = ' ';
  return origin + "\n" + tuning::toJson(model);
}

Result<tuning::MachineModel> decodeModel(const std::string& value) {
  const std::size_t newline = value.find('\n');
  if (newline == std::string::npos)
    return Status(ErrorCode::kProtocolError, "the store holds a malformed machine model");
  auto model = tuning::fromJson(std::string_view(value).substr(newline + 1));
  if (!model.ok())
    return Status(ErrorCode::kProtocolError,
                  "rank 0 published a malformed machine model: " + model.status().message());
  model->origin = value.substr(0, newline);
  return model;
}

Result<std::shared_ptr<const tuning::MachineModel>> agreeOnModel(const ModelRequest& q,
                                                                 const Config& config) {
  if (q.size == 1) return std::make_shared<const tuning::MachineModel>(tuning::defaults());
  const std::string key = q.prefix + "tuning/model";
  if (q.rank == 0) {
    auto model = tuning::processHostModel(config, q.hostId);
    const std::string value = model.ok() ? encodeModel(**model)
                                         : std::string(kErrorMark) + model.status().message();
    TUTTI_RETURN_IF_ERROR(setBefore(*q.store, key, bytesOf(value), q.deadline));
    if (model.ok())
      TUTTI_INFO(kTune, "machine model: %s", (*model)->origin.c_str());
    return model;
  }
  auto raw = q.store->get(key, q.deadline);
  if (!raw.ok()) return raw.status().withContext("waiting for rank 0's machine model");
  const std::string value(raw->begin(), raw->end());
  if (value.rfind(kErrorMark, 0) == 0)
    return Status(ErrorCode::kInvalidArgument,
                  "rank 0 has no machine model: " + value.substr(kErrorMark.size()));
  TUTTI_ASSIGN_OR_RETURN(tuning::MachineModel model, decodeModel(value));
  return std::make_shared<const tuning::MachineModel>(std::move(model));
}

}  // namespace tutti::detail
