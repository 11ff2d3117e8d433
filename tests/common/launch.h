#pragma once
// Command lines for multi-process tests: a job of real processes started by the real
// tutti-run, over one of the transports every multi-process test covers.

#include <string>
#include <vector>

namespace tutti::test {

/// The transports multi-process tests run over: shared memory (what "auto" picks on one
/// host), TCP, and both at once: "hybrid" gives ranks 2k and 2k+1 a host of their own
/// (TUTTI_SHM_HOST), so pairs share memory and reach the other pairs over TCP.
extern const std::vector<std::string> kTransports;

/// tutti-run's arguments for `n` ranks of `program` over `transport` (one of kTransports, or
/// "tcp4": TCP with TUTTI_TCP_STREAMS=4),
/// with `tuttiRunOptions` (e.g. "--timeout", "100") before the program.
std::vector<std::string> launch(int n, const std::string& transport,
                                const std::vector<std::string>& tuttiRunOptions,
                                const std::vector<std::string>& program);

}  // namespace tutti::test
