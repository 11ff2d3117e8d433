#pragma once
/// \file
/// Communicator: a group of ranks that perform point-to-point operations and collectives
/// together.
///
/// Threading: a communicator's operations must be issued from one thread at a time, in the
/// same order on every rank for collectives (as with NCCL and MPI). Work handles may be
/// waited on from any thread. Blocking calls and `...Async` calls are executed in the order
/// they are issued.
///
/// Errors: every call returns a Status. A peer that dies or misbehaves makes the pending and
/// all later operations fail with kPeerFailure naming that rank; a communicator that failed
/// stays failed.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "tutti/export.h"
#include "tutti/status.h"
#include "tutti/store.h"
#include "tutti/types.h"
#include "tutti/work.h"

namespace tutti {

namespace detail {
class CommImpl;
}

/// Options of one call.
struct CallOptions {
  /// Overrides the communicator's default timeout for this call.
  std::optional<std::chrono::milliseconds> timeout;
  /// Forces an algorithm by name ("ring", ...); empty lets tutti choose.
  std::string algorithm;
};

/// Options of a communicator.
struct CommOptions {
  /// Default deadline of every call; unset means TUTTI_TIMEOUT (seconds).
  std::optional<std::chrono::milliseconds> timeout;
  /// Name shown in logs and errors.
  std::string name = "world";
};

class TUTTI_API Communicator {
 public:
  /// Builds the world communicator from the launcher's environment: tutti-run, torchrun,
  /// Open MPI, MPICH/PMI or Slurm (see LaunchEnv). Blocks until every rank has joined or
  /// the connect timeout (TUTTI_CONNECT_TIMEOUT) passes.
  static Result<Communicator> fromEnv(const CommOptions& options = {});

  /// Builds a communicator of `size` ranks that rendezvous through `store`. Every rank must
  /// call it with the same store contents and size and a distinct rank in [0, size).
  static Result<Communicator> create(std::shared_ptr<Store> store, int rank, int size,
                                     const CommOptions& options = {});

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  /// Waits for issued operations (bounded by their deadlines), tells the peers this rank is
  /// leaving, and releases sockets and threads.
  ~Communicator();

  int rank() const;
  int size() const;
  const std::string& name() const;

  /// The first error this communicator failed with, or OK.
  Status lastError() const;

  // ---- point to point: `count` elements of `dtype`; messages between a pair of ranks with
  // the same tag are received in the order they were sent (MPI's non-overtaking rule).
  Status send(const void* buf, std::size_t count, DataType dtype, int peer, int tag = 0,
              const CallOptions& options = {});
  Status recv(void* buf, std::size_t count, DataType dtype, int peer, int tag = 0,
              const CallOptions& options = {});
  Work sendAsync(const void* buf, std::size_t count, DataType dtype, int peer, int tag = 0,
                 const CallOptions& options = {});
  Work recvAsync(void* buf, std::size_t count, DataType dtype, int peer, int tag = 0,
                 const CallOptions& options = {});

  // ---- collectives
  /// Returns once every rank has entered the barrier.
  Status barrier(const CallOptions& options = {});
  Work barrierAsync(const CallOptions& options = {});

  /// recvbuf[i] = op over ranks of sendbuf[i], on every rank. In place when
  /// sendbuf == recvbuf; otherwise the buffers must not overlap.
  Status allreduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                   ReduceOp op, const CallOptions& options = {});
  Work allreduceAsync(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                      ReduceOp op, const CallOptions& options = {});

  /// The algorithm tutti would run for this call (name), or an error if `forced` is given
  /// and does not apply.
  Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                   const std::string& forced = "") const;

 private:
  explicit Communicator(std::unique_ptr<detail::CommImpl> impl);
  std::unique_ptr<detail::CommImpl> impl_;
};

}  // namespace tutti
