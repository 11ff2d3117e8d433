#ifndef TUTTI_TUTTI_H_
#define TUTTI_TUTTI_H_
/* The C API of tutti: NCCL-style names, result codes and opaque handles over the C++ API
   (tutti/communicator.h), so that any language with a C FFI can bind to it. C99.

   Conventions
   - Every function returns a tuttiResult_t (tuttiGetErrorString excepted); nothing aborts or
     crashes on an argument tutti can check. A NULL communicator, request or out-parameter is
     tuttiInvalidArgument. After a failure, tuttiCommGetLastError(comm) says what went wrong.
   - Counts are elements of `datatype`, never bytes. Argument order follows NCCL: buffers,
     count, datatype, [op], [root], comm; async forms add a tuttiRequest_t* last.
   - Every rank must issue the same collectives in the same order with matching arguments;
     one communicator takes calls from one thread at a time (requests may be waited on from
     any thread). A communicator whose peer died or timed out stays failed: later calls on it
     return the same error.
   - In place follows NCCL (see communicator.h): sendbuff == recvbuff, or for allgather(v) and
     gather(v) sendbuff is this rank's block of recvbuff, and for reducescatter(v) and
     scatter(v) recvbuff is this rank's block of sendbuff. Other buffers must not overlap.
   - v-variants take arrays of tuttiCommCount() entries, the same arrays on every rank
     (unlike MPI, where some matter only at the root).
   - Every blocking call is bounded by the communicator's timeout (TUTTI_TIMEOUT, or
     tuttiSetTimeout).
   - Bad arguments are tuttiInvalidArgument naming the argument and its value (see
     communicator.h and docs/errors.md): a datatype or operator outside its enum, a root,
     count or shared array that is wrong the same way on every rank, a buffer over 2^40
     bytes, a NULL array, are refused on each rank alone and comm stays usable; an error
     in what is this rank's own (a NULL or overlapping buffer, a peer, its own count in a
     v-variant, alltoallv's arrays) also fails comm, so the other ranks' calls fail at once
     with tuttiAborted naming this rank instead of waiting for their timeout.
   - A NULL comm or request is tuttiInvalidArgument (with no last error to read). A handle
     that tuttiCommDestroy, tuttiCommAbort or tuttiRequestFree freed is gone, like memory
     after free(): using it again, a second destroy included, is undefined.
   - After a timeout, the call returns tuttiTimeout once the ranks have exchanged where they
     were (TUTTI_HANG_REPORT_SEC), and tuttiCommGetLastError ends with that hang report. */

#include <limits.h>
#include <stddef.h>

#include "tutti/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Result codes; one per tutti::ErrorCode, in its order. */
typedef enum {
  tuttiSuccess = 0,
  tuttiInvalidArgument = 1, /* bad input on this rank: NULL pointer, bad count, rank, root */
  tuttiInvalidUsage = 2,    /* a call in the wrong order or state */
  tuttiMismatch = 3,        /* ranks disagree on a collective's shape */
  tuttiTimeout = 4,         /* a deadline passed */
  tuttiPeerFailure = 5,     /* a peer died or its connection broke (NCCL: ncclRemoteError) */
  tuttiProtocolError = 6,   /* bytes that do not parse or are not authenticated */
  tuttiSystemError = 7,     /* a system call failed */
  tuttiNotSupported = 8,    /* a valid request this build or algorithm cannot serve */
  tuttiAborted = 9,         /* the communicator was aborted, locally or by another rank */
  tuttiInternalError = 10,  /* a bug in tutti */
  tuttiNumResults = 11,
  /* Not results: these make the type hold every int (see tuttiDataTypeIntMin). */
  tuttiResultIntMin = INT_MIN,
  tuttiResultIntMax = INT_MAX
} tuttiResult_t;

/* Element types; the values are tutti::DataType's. */
typedef enum {
  tuttiInt8 = 0,
  tuttiChar = 0,
  tuttiUint8 = 1,
  tuttiInt32 = 2,
  tuttiInt = 2,
  tuttiUint32 = 3,
  tuttiInt64 = 4,
  tuttiUint64 = 5,
  tuttiFloat16 = 6, /* IEEE 754 binary16 */
  tuttiHalf = 6,
  tuttiBfloat16 = 7,
  tuttiFloat32 = 8,
  tuttiFloat = 8,
  tuttiFloat64 = 9,
  tuttiDouble = 9,
  tuttiNumTypes = 10,
  /* Not types: they make the type hold every int, so that a value cast from any int reaches
     the library well defined in C++ too, where it is refused (tuttiInvalidArgument). */
  tuttiDataTypeIntMin = INT_MIN,
  tuttiDataTypeIntMax = INT_MAX
} tuttiDataType_t;

/* Reduction operators; the values are tutti::ReduceOp's. tuttiAvg is the sum divided by the
   number of ranks (integer division for integer types). */
typedef enum {
  tuttiSum = 0,
  tuttiProd = 1,
  tuttiMin = 2,
  tuttiMax = 3,
  tuttiAvg = 4,
  tuttiNumOps = 5,
  /* Not operators: these make the type hold every int (see tuttiDataTypeIntMin). */
  tuttiRedOpIntMin = INT_MIN,
  tuttiRedOpIntMax = INT_MAX
} tuttiRedOp_t;

/* A communicator: a group of ranks. Created by tuttiCommInit*, freed by tuttiCommDestroy. */
typedef struct tuttiComm* tuttiComm_t;
/* An operation started by an ...Async call. Freed by tuttiRequestFree. */
typedef struct tuttiRequest* tuttiRequest_t;

/* The color of a rank that joins no communicator in tuttiCommSplit. */
#define TUTTI_SPLIT_NOCOLOR (-1)
/* Encodes a version as tuttiGetVersion reports it: 0.1.0 is 100, 2.3.4 is 20304. */
#define TUTTI_VERSION_CODE(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))

/* ---- library ------------------------------------------------------------------------- */

/* Stores the loaded library's version, TUTTI_VERSION_CODE(major, minor, patch), in *version. */
TUTTI_API tuttiResult_t tuttiGetVersion(int* version);
/* A static, distinct description of `result` ("invalid argument", ...); never NULL. */
TUTTI_API const char* tuttiGetErrorString(tuttiResult_t result);

/* Allocates `size` (> 0) bytes that peers on the same host read and write directly, and
   stores the page-aligned, zeroed buffer in *ptr: large messages from or into it are
   copied without the kernel (tutti/memory.h tells the costs). Any buffer works with every
   call; this one is faster for large messages between ranks of one machine. */
TUTTI_API tuttiResult_t tuttiMemAlloc(void** ptr, size_t size);
/* Frees a buffer from tuttiMemAlloc; NULL is a no-op, any other pointer is
   tuttiInvalidArgument. */
TUTTI_API tuttiResult_t tuttiMemFree(void* ptr);

/* ---- communicators ------------------------------------------------------------------- */

/* Joins the world communicator described by the launcher's environment (tutti-run,
   torchrun, Open MPI, MPICH, Slurm); blocks until every rank joined or
   TUTTI_CONNECT_TIMEOUT passes. */
TUTTI_API tuttiResult_t tuttiCommInitFromEnv(tuttiComm_t* comm);
/* Joins a communicator of `nranks` ranks as `rank`, rendezvousing through a tutti store at
   storeAddr ("host:port" or "[v6]:port"): rank 0 serves the store there and the others
   connect to it (retrying until TUTTI_CONNECT_TIMEOUT). The port must be 1 to 65535. */
TUTTI_API tuttiResult_t tuttiCommInitRank(tuttiComm_t* comm, int nranks, const char* storeAddr,
                                          int rank);
/* Waits for this rank's issued operations (bounded by their deadlines) and for every other
   rank to destroy comm too (at most its timeout: destroy communicators in the same order on
   every rank), leaves the group and frees `comm`; NULL is tuttiInvalidArgument. Requests it
   issued remain valid. tuttiMismatch when a mismatch between the ranks' calls came to light
   only now, which no call on this rank had returned (a broadcast root that only sent while
   another rank took another root): the message naming both calls is logged at WARN. */
TUTTI_API tuttiResult_t tuttiCommDestroy(tuttiComm_t comm);
/* Aborts and frees `comm` (NCCL's ncclCommAbort): operations in progress on other threads
   fail with tuttiAborted, every peer's pending and later operations fail naming this rank,
   and nothing waits on the peers. It frees comm once the calls in progress on other threads
   have returned; none may start after it returns. NULL is tuttiInvalidArgument. */
TUTTI_API tuttiResult_t tuttiCommAbort(tuttiComm_t comm);
/* Stores the number of ranks of `comm` in *count. */
TUTTI_API tuttiResult_t tuttiCommCount(tuttiComm_t comm, int* count);
/* Stores this process's rank in `comm` in *rank. */
TUTTI_API tuttiResult_t tuttiCommUserRank(tuttiComm_t comm, int* rank);
/* The message of the last call that failed on `comm` (or on a request it issued), "" when
   none did; a fixed message when comm is NULL. Never NULL. The string belongs to `comm` and
   stays valid until this thread calls tuttiCommGetLastError on it again or it is destroyed. */
TUTTI_API const char* tuttiCommGetLastError(tuttiComm_t comm);
/* Collective over `comm`: ranks passing the same color >= 0 form *newcomm, ordered by key
   (ties by rank in comm); TUTTI_SPLIT_NOCOLOR yields *newcomm = NULL. The new communicator
   inherits comm's timeout. */
TUTTI_API tuttiResult_t tuttiCommSplit(tuttiComm_t comm, int color, int key,
                                       tuttiComm_t* newcomm);
/* Sets the deadline of every later call on `comm` to `seconds` after it starts
   (finite, > 0); the default is TUTTI_TIMEOUT. Local: other ranks keep their own. */
TUTTI_API tuttiResult_t tuttiSetTimeout(tuttiComm_t comm, double seconds);

/* ---- point to point (messages between two ranks arrive in the order they were sent) -- */

/* Sends `count` elements to rank `peer` of comm; returns once the buffer may be reused. */
TUTTI_API tuttiResult_t tuttiSend(const void* sendbuff, size_t count, tuttiDataType_t datatype,
                                  int peer, tuttiComm_t comm);
/* Receives `count` elements from rank `peer` of comm into recvbuff. */
TUTTI_API tuttiResult_t tuttiRecv(void* recvbuff, size_t count, tuttiDataType_t datatype,
                                  int peer, tuttiComm_t comm);

/* ---- collectives (blocking) ---------------------------------------------------------- */

/* Returns once every rank of comm has entered the barrier. */
TUTTI_API tuttiResult_t tuttiBarrier(tuttiComm_t comm);
/* recvbuff[i] = op over ranks of sendbuff[i], on every rank (count elements each). */
TUTTI_API tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, tuttiRedOp_t op,
                                       tuttiComm_t comm);
/* recvbuff = root's sendbuff on every rank (sendbuff is read on the root only). */
TUTTI_API tuttiResult_t tuttiBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, int root, tuttiComm_t comm);
/* root's recvbuff[i] = op over ranks of sendbuff[i] (recvbuff is written on the root only). */
TUTTI_API tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    tuttiDataType_t datatype, tuttiRedOp_t op, int root,
                                    tuttiComm_t comm);
/* recvbuff (nranks * sendcount elements) = every rank's sendbuff, in rank order. */
TUTTI_API tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       tuttiDataType_t datatype, tuttiComm_t comm);
/* recvbuff[displs[r] ...] = rank r's sendbuff (recvcounts[r] elements; sendcount must equal
   recvcounts[rank]). */
TUTTI_API tuttiResult_t tuttiAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff,
                                        const size_t* recvcounts, const size_t* displs,
                                        tuttiDataType_t datatype, tuttiComm_t comm);
/* recvbuff (recvcount elements) = op over ranks of block `rank` of their sendbuff
   (nranks * recvcount elements). */
TUTTI_API tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff,
                                           size_t recvcount, tuttiDataType_t datatype,
                                           tuttiRedOp_t op, tuttiComm_t comm);
/* Like tuttiReduceScatter with recvcounts[r] elements for rank r; sendbuff holds their sum,
   block r starting at recvcounts[0] + ... + recvcounts[r-1]. */
TUTTI_API tuttiResult_t tuttiReduceScatterv(const void* sendbuff, void* recvbuff,
                                            const size_t* recvcounts, tuttiDataType_t datatype,
                                            tuttiRedOp_t op, tuttiComm_t comm);
/* root's recvbuff (nranks * sendcount elements) = every rank's sendbuff, in rank order. */
TUTTI_API tuttiResult_t tuttiGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    tuttiDataType_t datatype, int root, tuttiComm_t comm);
/* root's recvbuff[displs[r] ...] = rank r's sendbuff (recvcounts[r] elements; sendcount must
   equal recvcounts[rank]). */
TUTTI_API tuttiResult_t tuttiGatherv(const void* sendbuff, size_t sendcount, void* recvbuff,
                                     const size_t* recvcounts, const size_t* displs,
                                     tuttiDataType_t datatype, int root, tuttiComm_t comm);
/* recvbuff (recvcount elements) = block `rank` of the root's sendbuff. */
TUTTI_API tuttiResult_t tuttiScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     tuttiDataType_t datatype, int root, tuttiComm_t comm);
/* recvbuff = the root's sendbuff[displs[rank] ...] (sendcounts[rank] elements, which must
   equal recvcount). */
TUTTI_API tuttiResult_t tuttiScatterv(const void* sendbuff, const size_t* sendcounts,
                                      const size_t* displs, void* recvbuff, size_t recvcount,
                                      tuttiDataType_t datatype, int root, tuttiComm_t comm);
/* recvbuff block b = block `rank` of rank b's sendbuff (both nranks * count elements). */
TUTTI_API tuttiResult_t tuttiAlltoall(const void* sendbuff, void* recvbuff, size_t count,
                                      tuttiDataType_t datatype, tuttiComm_t comm);
/* Sends sendcounts[b] elements at sdispls[b] to rank b and receives recvcounts[b] elements
   from rank b at rdispls[b]. */
TUTTI_API tuttiResult_t tuttiAlltoallv(const void* sendbuff, const size_t* sendcounts,
                                       const size_t* sdispls, void* recvbuff,
                                       const size_t* recvcounts, const size_t* rdispls,
                                       tuttiDataType_t datatype, tuttiComm_t comm);

/* ---- non-blocking forms: same arguments, plus *request to wait on. Buffers must stay
   valid until the request completes. Operations on a communicator run in issue order,
   blocking and non-blocking alike, except that point-to-point operations issued back to
   back are in flight together (a receive from the left, then a send to the right, then a
   wait on both completes on every rank of a ring); a collective starts once everything
   issued before it has ended. An argument error is returned at once and no request is
   made (*request = NULL). ---------------------------------------------------------------- */

/* Starts tuttiSend. */
TUTTI_API tuttiResult_t tuttiSendAsync(const void* sendbuff, size_t count,
                                       tuttiDataType_t datatype, int peer, tuttiComm_t comm,
                                       tuttiRequest_t* request);
/* Starts tuttiRecv. */
TUTTI_API tuttiResult_t tuttiRecvAsync(void* recvbuff, size_t count, tuttiDataType_t datatype,
                                       int peer, tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiBarrier. */
TUTTI_API tuttiResult_t tuttiBarrierAsync(tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiAllReduce. */
TUTTI_API tuttiResult_t tuttiAllReduceAsync(const void* sendbuff, void* recvbuff, size_t count,
                                            tuttiDataType_t datatype, tuttiRedOp_t op,
                                            tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiBroadcast. */
TUTTI_API tuttiResult_t tuttiBroadcastAsync(const void* sendbuff, void* recvbuff, size_t count,
                                            tuttiDataType_t datatype, int root,
                                            tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiReduce. */
TUTTI_API tuttiResult_t tuttiReduceAsync(const void* sendbuff, void* recvbuff, size_t count,
                                         tuttiDataType_t datatype, tuttiRedOp_t op, int root,
                                         tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiAllGather. */
TUTTI_API tuttiResult_t tuttiAllGatherAsync(const void* sendbuff, void* recvbuff,
                                            size_t sendcount, tuttiDataType_t datatype,
                                            tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiAllGatherv. */
TUTTI_API tuttiResult_t tuttiAllGathervAsync(const void* sendbuff, size_t sendcount,
                                             void* recvbuff, const size_t* recvcounts,
                                             const size_t* displs, tuttiDataType_t datatype,
                                             tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiReduceScatter. */
TUTTI_API tuttiResult_t tuttiReduceScatterAsync(const void* sendbuff, void* recvbuff,
                                                size_t recvcount, tuttiDataType_t datatype,
                                                tuttiRedOp_t op, tuttiComm_t comm,
                                                tuttiRequest_t* request);
/* Starts tuttiReduceScatterv. */
TUTTI_API tuttiResult_t tuttiReduceScattervAsync(const void* sendbuff, void* recvbuff,
                                                 const size_t* recvcounts,
                                                 tuttiDataType_t datatype, tuttiRedOp_t op,
                                                 tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiGather. */
TUTTI_API tuttiResult_t tuttiGatherAsync(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                         tuttiRequest_t* request);
/* Starts tuttiGatherv. */
TUTTI_API tuttiResult_t tuttiGathervAsync(const void* sendbuff, size_t sendcount,
                                          void* recvbuff, const size_t* recvcounts,
                                          const size_t* displs, tuttiDataType_t datatype,
                                          int root, tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiScatter. */
TUTTI_API tuttiResult_t tuttiScatterAsync(const void* sendbuff, void* recvbuff,
                                          size_t recvcount, tuttiDataType_t datatype, int root,
                                          tuttiComm_t comm, tuttiRequest_t* request);
/* Starts tuttiScatterv. */
TUTTI_API tuttiResult_t tuttiScattervAsync(const void* sendbuff, const size_t* sendcounts,
                                           const size_t* displs, void* recvbuff,
                                           size_t recvcount, tuttiDataType_t datatype,
                                           int root, tuttiComm_t comm,
                                           tuttiRequest_t* request);
/* Starts tuttiAlltoall. */
TUTTI_API tuttiResult_t tuttiAlltoallAsync(const void* sendbuff, void* recvbuff, size_t count,
                                           tuttiDataType_t datatype, tuttiComm_t comm,
                                           tuttiRequest_t* request);
/* Starts tuttiAlltoallv. */
TUTTI_API tuttiResult_t tuttiAlltoallvAsync(const void* sendbuff, const size_t* sendcounts,
                                            const size_t* sdispls, void* recvbuff,
                                            const size_t* recvcounts, const size_t* rdispls,
                                            tuttiDataType_t datatype, tuttiComm_t comm,
                                            tuttiRequest_t* request);

/* ---- requests ------------------------------------------------------------------------ */

/* Blocks until the operation finishes (bounded by its deadline) and returns its result;
   may be called again, returning the same result. */
TUTTI_API tuttiResult_t tuttiWait(tuttiRequest_t request);
/* Never blocks: *done = 1 and the operation's result once it finished, else *done = 0 and
   tuttiSuccess. */
TUTTI_API tuttiResult_t tuttiTest(tuttiRequest_t request, int* done);
/* Frees the handle. An unfinished operation still runs to completion (by its deadline), so
   its buffers must stay valid until then; wait first to know when. */
TUTTI_API tuttiResult_t tuttiRequestFree(tuttiRequest_t request);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TUTTI_TUTTI_H_ */
