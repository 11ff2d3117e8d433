#pragma once
// What the benchmark needs from a communicator. The driver talks to this interface rather
// than to tutti::Communicator directly, so that the whole sweep (timing, checking,
// reporting) is unit-tested with fakes, and the executable adds only a thin adapter
// (tutti_comm.h).

#include <cstddef>
#include <string>

#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti::bench {

/// A group of ranks running the benchmark together. Calls follow the collective rules of
/// tutti::Communicator: issued from one thread, in the same order on every rank, and each
/// returns only when the operation finished locally or failed (bounded by the
/// communicator's deadlines).
class BenchComm {
 public:
  virtual ~BenchComm() = default;

  /// This process's rank in [0, size()).
  virtual int rank() const = 0;
  /// Number of ranks.
  virtual int size() const = 0;

  /// Returns once every rank has entered the barrier, or an error.
  virtual Status barrier() = 0;

  /// recv[i] = op over ranks of send[i]; in place when send == recv. `algorithm` forces an
  /// algorithm by name; empty lets the library choose.
  virtual Status allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                           ReduceOp op, const std::string& algorithm) = 0;

  /// The algorithm that would run for this call, or an error when `forced` is not empty
  /// and does not apply. Never blocks on peers.
  virtual Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                           const std::string& forced) const = 0;
};

}  // namespace tutti::bench
