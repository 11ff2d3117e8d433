// Entry points of libtutti.so that belong to no particular layer.

#include "tutti/build_config.h"
#include "tutti/version.h"

namespace tutti {

const char* versionString() { return TUTTI_VERSION_STRING; }

}  // namespace tutti
