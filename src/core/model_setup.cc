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

namespace tutti::detail {
namespace {

// What rank 0 sets when it has no model: the others fail with its reason.
constexpr std::string_view kErrorMark = "error\n";

std::vector<std::uint8_t> bytesOf(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

}  // namespace

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
