#pragma once
// What tutti-info prints: the topology view in words, and the algorithm table. Pure
// functions of their inputs, so that tests check them without the tool.

#include <string>

#include "topology/view.h"
#include "tutti/status.h"

namespace tutti::info {

/// `view` for a person: a line per host (with its NICs and ranks), a line per rank.
std::string describeView(const topo::View& view);

/// Every collective's algorithms with their one-line summaries. With `ranks` > 0, each is
/// marked as applying to a communicator of that many ranks spread over `hosts` hosts
/// (as evenly as they go; 1: one host, shared memory) or not, with the reason, and the
/// default is marked. kInvalidArgument for hosts outside 1..ranks.
Result<std::string> describeAlgorithms(int ranks, int hosts);

}  // namespace tutti::info
