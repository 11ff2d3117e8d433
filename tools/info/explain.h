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
  std::string size;         // bytes (K/M/G suffixes) as tutti-bench's sizes: the larger of
                            // a rank's input and output (an all-gather's whole output)
  std::string dtype = "float32";
  int ranks = 0;
  int hosts = 1;            // ranks split in consecutive blocks over this many hosts
  std::string topoFile;     // a TUTTI_TOPO_DUMP_FILE view: its hosts, repeated to `hosts`
  std::string modelFile;    // a model file (model_json.h); empty: this host's model
  std::string network = "flat";  // network.h's text or a file
  std::string transport;    // shm, tcp or hybrid; empty: shm on one host, hybrid across
  std::uint64_t segmentBytes = 512 << 10;  // the communicator's default segment
  bool fixedSegment = false;               // TUTTI_SEGMENT_BYTES set: no segment is chosen
  std::size_t flatRoom = 8192;             // the shared-memory transport's flat exchange
  bool json = false;                       // one JSON object on one line, not the table
};

/// The ranking as a table: one line per candidate, fastest first, with its time over the
/// best's; the chosen one and the old table's choice named. With `json`, the same as one
/// JSON object on one line (for scripts: bench/regret.sh):
///   {"collective": "allreduce", "bytes": 67108864, "count": 16777216, "dtype": "float32",
///    "ranks": 8, "hosts": 2, "transport": "hybrid", "network": "flat", "model": ORIGIN,
///    "segment_bytes": 524288, "fixed_segment": false, "flat_room": 0,
///    "ranking": [{"algorithm": "hier_rs_ag", "segment_bytes": 262144,
///                 "segment_matters": true, "flat": false, "seconds": 0.0123}, ...],
///    "chosen": {... as a ranking entry ...}, "by": "model", "table": "ring"}
/// ("ranking" is empty and "chosen" the table's where the model does not price the call).
/// kInvalidArgument naming a bad argument.
Result<std::string> explainCall(const ExplainRequest& request);

}  // namespace tutti::info
