#pragma once
// The simulator's shared resources (simulate.cc): a link, NIC port or memory bus that carries
// one message at a time at its bandwidth (Fifo), optionally shaped by a token bucket, and a
// message's passage through the resources of its path, cut-through (Passage).

#include <algorithm>
#include <cmath>
#include <limits>

namespace tutti::tuning {

// A link, port or bus that carries one message's bytes at a time at its bandwidth.
struct Fifo {
  double bandwidth = std::numeric_limits<double>::infinity();  // bytes/s
  double free = 0;
  double carried = 0;  // bytes, over the run
  // A shaped link's token bucket (MachineModel::nicBurstBytes): up to `burst` bytes pass at
  // `line` bytes/s, the bucket refilled at `bandwidth`; full when the call starts.
  double burst = 0;
  double line = std::numeric_limits<double>::infinity();
  double tokens = 0;
  double tokensAt = 0;  // when `tokens` was counted
  // Seconds `bytes` take from `start` (the fifo free then), taking tokens.
  double pass(double start, double bytes) {
    carried += bytes;
    if (burst <= 0) return bytes / bandwidth;
    double have = std::min(burst, tokens + (start - tokensAt) * bandwidth);
    double seconds = 0;
    if (line <= bandwidth) {
      seconds = bytes / bandwidth;  // no faster than the rate: the bucket does not matter
    } else if (std::isinf(line)) {
      seconds = bytes <= have ? 0 : (bytes - have) / bandwidth;
      have = std::max(0.0, have - bytes);
    } else {
      // At the line's rate while tokens last (taken at line - bandwidth net), then at the
      // rate.
      const double lasts = have / (line - bandwidth);
      if (bytes <= lasts * line) {
        seconds = bytes / line;
        have -= bytes - seconds * bandwidth;
      } else {
        seconds = lasts + (bytes - lasts * line) / bandwidth;
        have = 0;
      }
    }
    tokens = have;
    tokensAt = start + seconds;
    return seconds;
  }
};

// A message through a sequence of resources, cut-through: it starts on each when that is
// free (and not before it started on the one before) and ends on each no earlier than on
// the one before; each is busy until the message's end on it.
struct Passage {
  double start;
  double end;
  double bytes;
  void through(Fifo& f) {
    start = std::max(start, f.free);
    end = std::max(end, start + f.pass(start, bytes));
    f.free = end;
  }
};

}  // namespace tutti::tuning
