#pragma once
/// \file
/// Library version.

#include "tutti/export.h"

namespace tutti {

/// "major.minor.patch" of the library actually loaded.
TUTTI_API const char* versionString();

}  // namespace tutti
