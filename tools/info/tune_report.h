#pragma once
// What `tutti-info tune` prints: the machine model's parameters for a person (docs/tuning.md).
// A pure function of its inputs, so that tests check it without the tool.

#include <string>
#include <vector>

#include "tuning/model.h"

namespace tutti::info {

/// `model` as a table: each path class's latency, bandwidth and per-message overhead; the
/// reduction's speed per dtype; copy, memory and NIC bandwidths; cores; the flat
/// exchange; then where it came from, and `notes` (the probe's, one per line) where given.
std::string describeModel(const tuning::MachineModel& model,
                          const std::vector<std::string>& notes = {});

}  // namespace tutti::info
