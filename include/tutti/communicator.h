#pragma once
/// \file
/// Communicator: a group of ranks that perform point-to-point operations and collectives
/// together.
///
/// Threading: a communicator's operations must be issued from one thread at a time, in the
/// same order on every rank for collectives (as with NCCL and MPI). Work handles may be
/// waited on from any thread. Blocking calls and `...Async` calls are executed in the order
/// they are issued, except that point-to-point calls issued back to back (no collective
/// between them) are in flight together, as MPI's nonblocking calls are: a recvAsync from
/// the left, then a sendAsync to the right, then a wait on both completes on every rank of
/// a ring. A collective starts once every call issued before it has ended.
///
/// Errors: every call returns a Status. A peer that dies or misbehaves makes the pending and
/// all later operations fail with kPeerFailure naming that rank; a communicator that failed
/// stays failed.
///
/// Bad arguments are kInvalidArgument with a message naming the argument and its value,
/// found before any message moves (docs/errors.md lists every check). Arguments every rank
/// passes alike (a collective's dtype, op, count and root, the arrays the v-collectives
/// share; a send's and its receive's dtype, count and tag) are refused by each rank on its
/// own and the communicator stays usable. An error in what is this rank's own (a null
/// buffer that must hold data, buffers that overlap without being in place, the peer, the
/// count stated for its own block, alltoallv's arrays) cannot be seen by the others, who
/// would wait for this rank: it also fails the communicator, so their pending and later
/// calls fail at once with kAborted naming this rank. Each buffer of a call may hold at most
/// kMaxBufferBytes (types.h). A moved-from Communicator answers every call with
/// kInvalidUsage (rank() -1, size() 0).

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
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
  /// Overrides the communicator's default timeout for this call. A call that fails because
  /// the communicator timed out returns kTimeout after a short exchange with the other ranks
  /// (TUTTI_HANG_REPORT_SEC, 3 s by default), and its message ends with a hang report: which
  /// ranks were in this call, which in another one, and which did not report.
  std::optional<std::chrono::milliseconds> timeout;
  /// Forces an algorithm by name ("ring", ...), optionally with its pipeline's segment
  /// ("ring@256K"); empty lets tutti choose. Every rank must force the same.
  std::string algorithm;
};

/// Options of a communicator.
struct CommOptions {
  /// Default deadline of every call; unset means TUTTI_TIMEOUT (seconds).
  std::optional<std::chrono::milliseconds> timeout;
  /// Name shown in logs and errors.
  std::string name = "world";
  /// "auto" (shared memory when every rank is on this host, else TCP), "shm" or "tcp";
  /// empty means TUTTI_TRANSPORT. split() passes the parent's choice on unless set here.
  std::string transport;
  /// Who runs async calls: "thread" (the communicator's worker thread, woken for each
  /// call), "wait" (the thread that waits on a call's Work runs it and the calls queued
  /// before it; the worker takes a call nobody waited on within a grace period, 0.1 to 2
  /// ms, so that it progresses during a long computation), or "auto" (thread where every
  /// rank of the host has two cores, one for its worker, else wait). Empty means
  /// TUTTI_ASYNC_PROGRESS; split() passes the parent's choice on unless set here.
  std::string asyncProgress;
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

  /// Builds a communicator of `size` ranks that rendezvous through a TCP store at
  /// `storeAddress` ("host:port" or "[v6]:port"): rank 0 serves the store there, the others
  /// connect to it, retrying until TUTTI_CONNECT_TIMEOUT. Blocks until every rank has joined.
  /// kInvalidArgument for a malformed address (the port must be 1 to 65535: the other ranks
  /// could not learn a port rank 0 picked) or a rank outside [0, size); kSystemError when
  /// rank 0 cannot listen there; kTimeout when the store or a peer never answers.
  static Result<Communicator> connect(const std::string& storeAddress, int rank, int size,
                                      const CommOptions& options = {});

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  /// destroy(), when it was not called: its result is logged at WARN when it is an error.
  ~Communicator();

  /// Destroys the communicator now: waits for issued operations (bounded by their
  /// deadlines), then for every peer to destroy it too (at most the communicator's timeout:
  /// destroying is collective, in the same order on every rank, as MPI_Comm_free is), and
  /// releases sockets and threads. On the way the ranks confirm that every message of
  /// every collective met the call it was sent for: kMismatch, naming both calls, when a
  /// mismatch came to light that no call on this rank had returned (a broadcast root that
  /// only sent while another rank took another root); OK otherwise, failures that calls
  /// returned or that do not concern this rank's calls included (they are logged). The
  /// object is empty afterwards, as if moved from.
  Status destroy();

  /// This rank in [0, size()); -1 once moved from.
  int rank() const;
  /// The number of ranks; 0 once moved from.
  int size() const;
  /// The name given at creation (CommOptions::name, or derived by split); "" once moved from.
  const std::string& name() const;

  /// The first error this communicator failed with, or OK.
  Status lastError() const;

  /// Fails the communicator at once, from any thread, whatever the peers are doing:
  /// operations in progress here return kAborted, every peer's pending and later operations
  /// fail with kAborted naming this rank (the abort travels like any first failure), and
  /// later calls are refused saying why. Returns without waiting on anyone; destroying the
  /// communicator is still needed to release it. Idempotent; after another failure, that
  /// failure stays the one reported. Logs this communicator's flight recorder (its last
  /// operations) at WARN.
  void abort();

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

  // ---- collectives. Every rank must call the same collectives in the same order with
  // matching arguments. Counts are elements of `dtype`. In-place calls follow NCCL: the
  // input is the same pointer as the output (allreduce, broadcast, reduce, alltoall(v)), or
  // the rank's own block of it (allgather(v), gather(v) at the root: sendbuf == recvbuf +
  // offset of this rank's block); reducescatter(v) and scatter(v) are in place when recvbuf
  // is the rank's own block of sendbuf. Otherwise buffers must not overlap.
  // v-collectives: unlike MPI, tutti needs the count and displacement arrays on every rank
  // (the same arrays everywhere), because intermediate ranks of tree algorithms forward
  // other ranks' blocks. Counts are per block (reduceScatter's recvcount, alltoall's
  // count), so no count needs to divide by the number of ranks.

  /// Returns once every rank has entered the barrier.
  Status barrier(const CallOptions& options = {});
  Work barrierAsync(const CallOptions& options = {});

  /// recvbuf[i] = op over ranks of sendbuf[i], on every rank.
  Status allreduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                   ReduceOp op, const CallOptions& options = {});
  Work allreduceAsync(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                      ReduceOp op, const CallOptions& options = {});

  /// recvbuf = root's sendbuf on every rank (sendbuf is read on the root only).
  Status broadcast(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                   int root, const CallOptions& options = {});
  Work broadcastAsync(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                      int root, const CallOptions& options = {});

  /// root's recvbuf[i] = op over ranks of sendbuf[i] (recvbuf is written on the root only).
  Status reduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                ReduceOp op, int root, const CallOptions& options = {});
  Work reduceAsync(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                   ReduceOp op, int root, const CallOptions& options = {});

  /// recvbuf (size * sendcount elements) = every rank's sendbuf, in rank order.
  Status allgather(const void* sendbuf, void* recvbuf, std::size_t sendcount, DataType dtype,
                   const CallOptions& options = {});
  Work allgatherAsync(const void* sendbuf, void* recvbuf, std::size_t sendcount,
                      DataType dtype, const CallOptions& options = {});

  /// recvbuf[displs[r] ...] = rank r's sendbuf (recvcounts[r] elements; sendcount must equal
  /// recvcounts[rank]).
  Status allgatherv(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                    std::span<const std::size_t> recvcounts,
                    std::span<const std::size_t> displs, DataType dtype,
                    const CallOptions& options = {});
  Work allgathervAsync(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                       std::span<const std::size_t> recvcounts,
                       std::span<const std::size_t> displs, DataType dtype,
                       const CallOptions& options = {});

  /// recvbuf (recvcount elements) = op over ranks of their sendbuf block `rank`
  /// (sendbuf holds size * recvcount elements).
  Status reduceScatter(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                       DataType dtype, ReduceOp op, const CallOptions& options = {});
  Work reduceScatterAsync(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                          DataType dtype, ReduceOp op, const CallOptions& options = {});

  /// Like reduceScatter with recvcounts[r] elements for rank r; sendbuf holds their sum,
  /// block r starting at recvcounts[0] + ... + recvcounts[r-1].
  Status reduceScatterv(const void* sendbuf, void* recvbuf,
                        std::span<const std::size_t> recvcounts, DataType dtype, ReduceOp op,
                        const CallOptions& options = {});
  Work reduceScattervAsync(const void* sendbuf, void* recvbuf,
                           std::span<const std::size_t> recvcounts, DataType dtype,
                           ReduceOp op, const CallOptions& options = {});

  /// root's recvbuf (size * sendcount elements) = every rank's sendbuf, in rank order.
  Status gather(const void* sendbuf, void* recvbuf, std::size_t sendcount, DataType dtype,
                int root, const CallOptions& options = {});
  Work gatherAsync(const void* sendbuf, void* recvbuf, std::size_t sendcount, DataType dtype,
                   int root, const CallOptions& options = {});

  /// root's recvbuf[displs[r] ...] = rank r's sendbuf (recvcounts[r] elements).
  Status gatherv(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                 std::span<const std::size_t> recvcounts, std::span<const std::size_t> displs,
                 DataType dtype, int root, const CallOptions& options = {});
  Work gathervAsync(const void* sendbuf, std::size_t sendcount, void* recvbuf,
                    std::span<const std::size_t> recvcounts,
                    std::span<const std::size_t> displs, DataType dtype, int root,
                    const CallOptions& options = {});

  /// recvbuf (recvcount elements) = block `rank` of the root's sendbuf.
  Status scatter(const void* sendbuf, void* recvbuf, std::size_t recvcount, DataType dtype,
                 int root, const CallOptions& options = {});
  Work scatterAsync(const void* sendbuf, void* recvbuf, std::size_t recvcount, DataType dtype,
                    int root, const CallOptions& options = {});

  /// recvbuf = the root's sendbuf[displs[rank] ...] (sendcounts[rank] elements, which must
  /// equal recvcount).
  Status scatterv(const void* sendbuf, std::span<const std::size_t> sendcounts,
                  std::span<const std::size_t> displs, void* recvbuf, std::size_t recvcount,
                  DataType dtype, int root, const CallOptions& options = {});
  Work scattervAsync(const void* sendbuf, std::span<const std::size_t> sendcounts,
                     std::span<const std::size_t> displs, void* recvbuf,
                     std::size_t recvcount, DataType dtype, int root,
                     const CallOptions& options = {});

  /// recvbuf block b = block `rank` of rank b's sendbuf (both hold size * count elements).
  Status alltoall(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                  const CallOptions& options = {});
  Work alltoallAsync(const void* sendbuf, void* recvbuf, std::size_t count, DataType dtype,
                     const CallOptions& options = {});

  /// This rank sends sendcounts[b] elements at sdispls[b] to rank b and receives
  /// recvcounts[b] elements from rank b at rdispls[b]. In place (sendbuf == recvbuf) needs
  /// equal send and receive arrays.
  Status alltoallv(const void* sendbuf, std::span<const std::size_t> sendcounts,
                   std::span<const std::size_t> sdispls, void* recvbuf,
                   std::span<const std::size_t> recvcounts,
                   std::span<const std::size_t> rdispls, DataType dtype,
                   const CallOptions& options = {});
  Work alltoallvAsync(const void* sendbuf, std::span<const std::size_t> sendcounts,
                      std::span<const std::size_t> sdispls, void* recvbuf,
                      std::span<const std::size_t> recvcounts,
                      std::span<const std::size_t> rdispls, DataType dtype,
                      const CallOptions& options = {});

  /// Collective over this communicator: ranks that pass the same `color` (>= 0) form a new
  /// communicator, ranked by `key` (ties: by rank here). A rank passing kNoColor gets
  /// nullopt. The new communicator has its own connections and its own failure state.
  /// A color below kNoColor on any rank is kInvalidArgument on every rank (the colors are
  /// exchanged first), and no communicator is made.
  static constexpr int kNoColor = -1;
  Result<std::optional<Communicator>> split(int color, int key, const CommOptions& options = {});

  /// The algorithm tutti would run for this call (name), or an error if `forced` is given
  /// and does not apply. `sharedBuffers`: every rank's buffers come from memAlloc
  /// (CallShape::sharedBuffers).
  Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                   const std::string& forced = "",
                                   bool sharedBuffers = false) const;

  /// Proves, with no communication, that the call would be right: builds the schedule
  /// every rank of this communicator would run for `call` (the same algorithm choice,
  /// segment size and in-flight window as a real call) and runs the verifier (DESIGN.md 3)
  /// over all of them: every output element holds what the collective defines, every send
  /// meets one receive, no completion order deadlocks, nothing is read or written outside
  /// its buffer. Send and recv are verified as pairs (0 -> 1, 2 -> 3, ...). OK, the
  /// verifier's finding as kInternal naming the rank and step, or kInvalidArgument when
  /// `forced` does not apply. Local: any rank may call it at any time. Cost: building and
  /// walking size() schedules (about a microsecond per step).
  Status verifyCall(const CallShape& call, const std::string& forced = "") const;

 private:
  explicit Communicator(std::unique_ptr<detail::CommImpl> impl);
  std::unique_ptr<detail::CommImpl> impl_;
};

}  // namespace tutti
