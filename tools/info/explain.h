#pragma once
// tutti-info explain: the tuner's whole ranking for one call shape (src/tuning/tuner.h),
// with predicted times, without running anything: on this host's model (its cache, or a
// probe) or a model file, a synthetic placement or a topology file, and a network.

#include <cstdint>
#include <string>

#include "tutti/status.h"

namespace tutti::info {

struct ExplainRequest {
  std::string collective;   // "allreduce", ...
  std::string size;         // bytes per rank (K/M/G suffixes), as tutti-bench's sizes
  std::string dtype = "float32";
  int ranks = 0;
  int hosts = 1;            // ranks split in consecutive blocks over this many hosts
  std::string topoFile;     // a TUTTI_TOPO_DUMP_FILE view: its hosts, repeated to `hosts`
  std::string modelFile;    // a model file (model_json.h); empty: this host's model
  std::string network = "flat";  // network.h's text or a file
  std::string transport;    // shm, tcp or hybrid; empty: shm on one host, hybrid across
  std::uint64_t segmentBytes = 512 << 10;  // the communicator's default segment
  std::size_t flatRoom = 8192;             // the shared-memory transport's flat exchange
};

/// The ranking as a table: one line per candidate, fastest first, with its time over the
/// best's; the chosen one and the old table's choice named. kInvalidArgument naming a bad
/// argument.
Result<std::string> explainCall(const ExplainRequest& request);

}  // namespace tutti::info
