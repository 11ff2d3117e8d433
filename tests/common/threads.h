#pragma once
// Ranks as threads (Gloo's BaseTest::spawn): runs fn(rank, communicator) on `size` threads,
// each with its own Communicator over the real TCP transport, rendezvousing through one
// in-memory store. Failures inside fn are reported as strings per rank, so a test can check
// every rank's outcome.

#include <functional>
#include <string>
#include <vector>

#include "tutti/communicator.h"

namespace tutti::test {

/// Returns one string per rank: empty on success, else what went wrong on that rank.
std::vector<std::string> runRanks(int size,
                                  const std::function<std::string(int, Communicator&)>& fn,
                                  const CommOptions& options = {});

/// Joins the per-rank failures into one message ("" when all ranks succeeded).
std::string joinFailures(const std::vector<std::string>& failures);

}  // namespace tutti::test
