#pragma once
// Where the built tools and test helper programs live (set by CMake).

#include <string>

namespace tutti::test {

/// build/bin/<name>: tutti-run, tutti-bench, ...
std::string binPath(const std::string& name);
/// build/tests/<name>: helper programs built for tests.
std::string testProgramPath(const std::string& name);

}  // namespace tutti::test
