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

  // The collectives, with tutti::Communicator's definitions and in-place conventions.
  // `algorithm` forces an algorithm by name; empty lets the library choose.

  /// Returns once every rank has entered the barrier, or an error.
  virtual Status barrier(const std::string& algorithm) = 0;
  /// The runner's own barrier, which lines the ranks up before a block of timed calls: a
  /// barrier the library chooses for, apart from the barriers a row measures.
  virtual Status align() { return barrier(std::string()); }

  /// recv[i] = op over ranks of send[i]; in place when send == recv.
  virtual Status allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                           ReduceOp op, const std::string& algorithm) = 0;

  /// recv = root's send on every rank.
  virtual Status broadcast(const void* send, void* recv, std::size_t count, DataType dtype,
                           int root, const std::string& algorithm) = 0;

  /// root's recv[i] = op over ranks of send[i].
  virtual Status reduce(const void* send, void* recv, std::size_t count, DataType dtype,
                        ReduceOp op, int root, const std::string& algorithm) = 0;

  /// recv (size() * count) = every rank's send (count), in rank order.
  virtual Status allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                           const std::string& algorithm) = 0;

  /// recv (count) = op over ranks of block rank() of their send (size() * count).
  virtual Status reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype,
                               ReduceOp op, const std::string& algorithm) = 0;

  /// root's recv (size() * count) = every rank's send (count), in rank order.
  virtual Status gather(const void* send, void* recv, std::size_t count, DataType dtype,
                        int root, const std::string& algorithm) = 0;

  /// recv (count) = block rank() of the root's send (size() * count).
  virtual Status scatter(const void* send, void* recv, std::size_t count, DataType dtype,
                         int root, const std::string& algorithm) = 0;

  /// recv block b = block rank() of rank b's send (both size() * count).
  virtual Status alltoall(const void* send, void* recv, std::size_t count, DataType dtype,
                          const std::string& algorithm) = 0;

  /// Sends `send` to rank `sendPeer` while receiving `recv` from rank `recvPeer` (count
  /// elements each), returning once both finished; the peers are other ranks.
  virtual Status sendRecv(const void* send, void* recv, std::size_t count, DataType dtype,
                          int sendPeer, int recvPeer, const std::string& algorithm) = 0;

  /// The algorithm that would run for this call, or an error when `forced` is not empty
  /// and does not apply. Never blocks on peers.
  virtual Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                           const std::string& forced) const = 0;

  /// Proves the call right without running it (tutti::Communicator::verifyCall): OK, or
  /// the verifier's finding. Local, never blocks on peers.
  virtual Status verifyCall(const CallShape& call, const std::string& forced) const = 0;
};

}  // namespace tutti::bench
