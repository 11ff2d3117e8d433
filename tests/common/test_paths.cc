#include "common/test_paths.h"

namespace tutti::test {

std::string binPath(const std::string& name) { return std::string(TUTTI_BIN_DIR) + "/" + name; }

std::string testProgramPath(const std::string& name) {
  return std::string(TUTTI_TEST_DIR) + "/" + name;
}

}  // namespace tutti::test
