#include "base/assert.h"

#include <cstdio>
#include <cstdlib>

#include "base/log.h"

namespace tutti::detail {

void assertFailed(const char* file, int line, const char* expr, const std::string& detail) {
  // Write straight to stderr as well as the log: the log sink may be a file.
  std::fprintf(stderr, "tutti: internal assertion failed at %s:%d: %s %s\n", file, line, expr,
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tutti::detail
