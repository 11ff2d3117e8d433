#pragma once
// STAND-IN (tuner branch only, never merged): the model helper's defaults replace it.

#include "tuning/model.h"

namespace tutti::tuning {
MachineModel standInModel();
}
