#pragma once
// The algorithm registry (src/algorithms/registry.cc) as tests iterate it: a test that means
// "every algorithm of these collectives" takes its list from here, so an algorithm added to
// the registry is tested the day it is registered, without editing the test. Tests about
// one algorithm's own behaviour (its cost, its diagram) name it instead. The lists leave out
// the hierarchical algorithms, which apply only to ranks on several hosts (a host map these
// tests' one-host worlds do not have): verify_all_test.cc verifies them on host layouts, and
// the multihost tier runs them across network namespaces.

#include <ostream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"

namespace tutti::test {

/// The collectives with at least one registered algorithm, in Collective order, without
/// send and recv (point-to-point calls, which tests pair up themselves).
std::vector<Collective> registeredCollectives();

/// The names of the flat algorithms registered for `kind`, in registry order.
std::vector<std::string> algorithmsOf(Collective kind);

/// One registry entry, for parameterized tests.
struct RegisteredAlgorithm {
  Collective kind;
  std::string name;
  const AlgorithmInfo* info;
  /// "<collective>_<algorithm>", e.g. "allreduce_rs_ag": a gtest parameter name.
  std::string testName() const;
};

/// Shows a parameter as its test name (gtest's PrintTo, found by argument lookup).
inline void PrintTo(const RegisteredAlgorithm& algorithm, std::ostream* os) {
  *os << algorithm.testName();
}

/// Every flat registry entry whose collective is one of `kinds`, in registry order.
std::vector<RegisteredAlgorithm> registeredAlgorithms(const std::vector<Collective>& kinds);

/// The registry entry named `name` for `kind`; a gtest failure and null when there is none.
const AlgorithmInfo* findAlgorithm(Collective kind, const std::string& name);

}  // namespace tutti::test
