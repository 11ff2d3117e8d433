#pragma once
/// \file
/// Umbrella header of tutti's C++ API.

#include "tutti/communicator.h"
#include "tutti/deadline.h"
#include "tutti/memory.h"
#include "tutti/status.h"
#include "tutti/store.h"
#include "tutti/types.h"
#include "tutti/version.h"
#include "tutti/work.h"
