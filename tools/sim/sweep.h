#pragma once
// tutti-sim's work, apart from its command line: the sizes of a sweep, the call a row
// simulates, the model used when no file is given, and the table and the plot's data.
// Kept in a library so that tests check it without the tool.

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "tuning/model.h"
#include "tuning/network.h"
#include "tuning/placement.h"
#include "tuning/simulate.h"
#include "tutti/status.h"

namespace tutti::sim {

/// "64M" (one size) or "8:256M" (from 8 bytes to 256 MiB, doubling): bytes per row.
Result<std::vector<std::uint64_t>> parseSizes(const std::string& text);

/// The model tutti-sim uses without --model: tuning::defaults() on a network of 100 Gbit/s
/// NICs, 8 cores a host.
tuning::MachineModel simDefaultModel();

struct Row {
  std::string algorithm;
  std::uint64_t bytes = 0;  // the row's size, as tutti-bench prints it
  double seconds = 0;
  double algbw = 0;  // GB/s
  double busbw = 0;  // GB/s
  bool fastPath = false;
  int ranksRun = 0;  // ranks whose schedules were run (fewer than all: the fast path)
  std::uint64_t messages = 0;
  double simSeconds = 0;  // what the simulation itself took
};

struct SweepRequest {
  std::string collective;  // a name tutti-bench takes ("allreduce", "all_reduce", ...)
  std::vector<std::uint64_t> sizes;
  std::string algorithm;   // empty: every one that applies
  DataType dtype = DataType::kFloat32;
  std::uint64_t segmentBytes = 512 * 1024;  // TUTTI_SEGMENT_BYTES' default
  tuning::SimOptions options;
};

/// Predicts every row: each size, each applicable algorithm (or the one named). An
/// algorithm that does not apply to a size is skipped; none at all is kInvalidArgument.
Result<std::vector<Row>> runSweep(const SweepRequest& request, const tuning::MachineModel& model,
                                  const tuning::Placement& placement,
                                  const tuning::Network& network);

/// The table: one line per row, the fastest algorithm of each size marked.
std::string formatTable(const std::vector<Row>& rows);

/// CSV for the plot: algorithm,bytes,seconds,algbw,busbw.
std::string formatCsv(const std::vector<Row>& rows);

}  // namespace tutti::sim
