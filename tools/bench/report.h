#pragma once
// What tutti-bench prints (nccl-tests' table, plus the algorithm of each row) and the JSON
// file it writes. Pure formatting: the runner decides what to print and where.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/options.h"
#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti::bench {

/// The measurement of one row in one placement (out of place or in place).
struct PlacementResult {
  /// Time per operation, combined over ranks as -a says, in microseconds.
  double timeUs = 0;
  /// Algorithm and bus bandwidth in GB/s (1e9 bytes per second).
  double algbwGBs = 0;
  double busbwGBs = 0;
  /// Wrong elements summed over ranks; nullopt when checking is off.
  std::optional<std::int64_t> wrong;
};

/// One line of the table: a size of one (collective, data type, operator, root).
struct RowResult {
  /// Canonical collective name.
  std::string collective;
  /// Size column: the larger of the input and output, in bytes.
  std::uint64_t bytes = 0;
  /// Count column: the call's count argument, in elements.
  std::uint64_t count = 0;
  DataType dtype = DataType::kFloat32;
  /// False for a collective that moves no data (barrier): the type prints as "none".
  bool sized = true;
  /// nullopt for collectives that take no reduction operator.
  std::optional<ReduceOp> op;
  /// -1 for collectives without a root.
  int root = -1;
  /// The algorithm the library ran (or was forced to run).
  std::string algorithm;
  /// Where the run compares several --algo candidates: the one that ran this row, as
  /// written ("auto" for the library's choice, whose row prints "auto:" before the
  /// algorithm it chose); empty in a run of one candidate.
  std::string candidate;
  /// The run's settings, repeated in every JSON object so each stands alone.
  int ranks = 1;
  int iters = 0;
  int warmupIters = 0;
  TimeAverage average = TimeAverage::kMean;
  /// The measurements of the row; inPlace is nullopt for collectives without an in-place
  /// form (sendrecv, barrier), whose in-place cells print "N/A".
  PlacementResult outOfPlace;
  std::optional<PlacementResult> inPlace;
};

/// The settings block printed before the table of `collective`: its name, ranks, sweep,
/// iterations, checking, time averaging, algorithm and the command line; every line starts
/// with '#'.
std::string formatSettings(const BenchOptions& options, std::string_view collective,
                           int nranks);

/// The three '#' lines naming the table's columns and their units.
std::string formatColumnHeader();

/// One table line (with its newline).
std::string formatRow(const RowResult& row);

/// nccl-tests' time column: 7 characters, fewer decimals as the time grows.
std::string formatTime(double timeUs);

/// The closing lines: "# Out of bounds values : N OK|FAILED" and the mean bus bandwidth.
std::string formatSummary(std::int64_t wrong, bool checked, double avgBusbwGBs);

/// `text` as a JSON string literal, quotes included: '"' and '\' escaped, control
/// characters as \b \f \n \r \t or \u00XX; other bytes (UTF-8) unchanged.
std::string jsonString(std::string_view text);

/// A JSON number, or null for infinities and NaN (which JSON cannot express).
std::string jsonNumber(double value);

/// A JSON array with one object per row and placement: out of place, then in place (when
/// the row has it); "dtype" is null for rows that move no data.
std::string formatJson(const std::vector<RowResult>& rows);

/// Writes `contents` to `path` through a temporary file renamed over it, so a reader never
/// sees half a file. kSystemError naming the path and errno on failure.
Status writeFileAtomically(const std::string& path, const std::string& contents);

}  // namespace tutti::bench
