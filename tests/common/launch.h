#pragma once
// tutti-run command lines for the multi-process tests, over each transport.

#include <string>
#include <vector>

namespace tutti::test {

/// Every multi-process test runs over each transport: shared memory (what "auto" picks on
/// one host), TCP, and both at once: "hybrid" gives ranks 2k and 2k+1 a host of their own
/// (TUTTI_SHM_HOST), so pairs share memory and reach the other pairs over TCP.
extern const std::vector<std::string> kTransports;

/// tutti-run's arguments for `n` ranks of `program` over `transport` (one of kTransports).
std::vector<std::string> launch(int n, const std::string& transport,
                                const std::vector<std::string>& tuttiRunOptions,
                                const std::vector<std::string>& program);

}  // namespace tutti::test
