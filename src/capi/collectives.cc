// The C API's point-to-point and collective functions (tutti.h), blocking and
// non-blocking, each a thin wrapper over the tutti::Communicator call of the same name.

#include <span>

#include "base/macros.h"
#include "capi/handles.h"
#include "tutti/tutti.h"

namespace tutti::capi {
namespace {

// One call's converted arguments.
struct Args {
  Communicator& comm;
  DataType dtype;
  ReduceOp op;
  CallOptions options;

  /// A v-collective's array of comm-size entries. NULL becomes an empty array, which the
  /// C++ checks refuse naming it: they also know whether the array is one every rank passes
  /// alike or this rank's own (alltoallv's), and so whether the communicator must fail.
  std::span<const std::size_t> array(const std::size_t* values) const {
    if (values == nullptr) return {};
    return std::span<const std::size_t>(values, static_cast<std::size_t>(comm.size()));
  }
};

// Converts the C enums (kInvalidArgument for values outside them); collectives without an
// operator pass tuttiSum.
Result<Args> convert(tuttiComm& c, tuttiDataType_t datatype, tuttiRedOp_t op) {
  TUTTI_ASSIGN_OR_RETURN(DataType dtype, toDataType(datatype));
  TUTTI_ASSIGN_OR_RETURN(ReduceOp rop, toReduceOp(op));
  return Args{c.comm, dtype, rop, c.callOptions()};
}

// A blocking call: `call(args)` returns the Status.
template <typename Call>
tuttiResult_t blocking(tuttiComm_t comm, const char* function, tuttiDataType_t datatype,
                       tuttiRedOp_t op, Call&& call) {
  return guarded(comm, function, [&](tuttiComm& c) -> Status {
    TUTTI_ASSIGN_OR_RETURN(Args args, convert(c, datatype, op));
    return call(args);
  });
}

// A non-blocking call: `call(args)` returns the Work (or an argument error).
template <typename Call>
tuttiResult_t async(tuttiComm_t comm, tuttiRequest_t* request, const char* function,
                    tuttiDataType_t datatype, tuttiRedOp_t op, Call&& call) {
  return startRequest(comm, request, function, [&](tuttiComm& c) -> Result<Work> {
    TUTTI_ASSIGN_OR_RETURN(Args args, convert(c, datatype, op));
    return call(args);
  });
}

}  // namespace
}  // namespace tutti::capi

using namespace tutti;
using namespace tutti::capi;

extern "C" {

// ---- point to point (tag 0, as NCCL's have none)

tuttiResult_t tuttiSend(const void* sendbuff, size_t count, tuttiDataType_t datatype, int peer,
                        tuttiComm_t comm) {
  return blocking(comm, "tuttiSend", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.send(sendbuff, count, a.dtype, peer, 0, a.options);
  });
}

tuttiResult_t tuttiRecv(void* recvbuff, size_t count, tuttiDataType_t datatype, int peer,
                        tuttiComm_t comm) {
  return blocking(comm, "tuttiRecv", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.recv(recvbuff, count, a.dtype, peer, 0, a.options);
  });
}

tuttiResult_t tuttiSendAsync(const void* sendbuff, size_t count, tuttiDataType_t datatype,
                             int peer, tuttiComm_t comm, tuttiRequest_t* request) {
  return async(comm, request, "tuttiSendAsync", datatype, tuttiSum, [&](Args& a) -> Result<Work> {
    return a.comm.sendAsync(sendbuff, count, a.dtype, peer, 0, a.options);
  });
}

tuttiResult_t tuttiRecvAsync(void* recvbuff, size_t count, tuttiDataType_t datatype, int peer,
                             tuttiComm_t comm, tuttiRequest_t* request) {
  return async(comm, request, "tuttiRecvAsync", datatype, tuttiSum, [&](Args& a) -> Result<Work> {
    return a.comm.recvAsync(recvbuff, count, a.dtype, peer, 0, a.options);
  });
}

// ---- collectives without data type or operator

tuttiResult_t tuttiBarrier(tuttiComm_t comm) {
  return blocking(comm, "tuttiBarrier", tuttiUint8, tuttiSum,
                  [&](Args& a) -> Status { return a.comm.barrier(a.options); });
}

tuttiResult_t tuttiBarrierAsync(tuttiComm_t comm, tuttiRequest_t* request) {
  return async(comm, request, "tuttiBarrierAsync", tuttiUint8, tuttiSum,
               [&](Args& a) -> Result<Work> { return a.comm.barrierAsync(a.options); });
}

// ---- reductions

tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm) {
  return blocking(comm, "tuttiAllReduce", datatype, op, [&](Args& a) -> Status {
    return a.comm.allreduce(sendbuff, recvbuff, count, a.dtype, a.op, a.options);
  });
}

tuttiResult_t tuttiAllReduceAsync(const void* sendbuff, void* recvbuff, size_t count,
                                  tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                                  tuttiRequest_t* request) {
  return async(comm, request, "tuttiAllReduceAsync", datatype, op, [&](Args& a) -> Result<Work> {
    return a.comm.allreduceAsync(sendbuff, recvbuff, count, a.dtype, a.op, a.options);
  });
}

tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                          tuttiDataType_t datatype, tuttiRedOp_t op, int root, tuttiComm_t comm) {
  return blocking(comm, "tuttiReduce", datatype, op, [&](Args& a) -> Status {
    return a.comm.reduce(sendbuff, recvbuff, count, a.dtype, a.op, root, a.options);
  });
}

tuttiResult_t tuttiReduceAsync(const void* sendbuff, void* recvbuff, size_t count,
                               tuttiDataType_t datatype, tuttiRedOp_t op, int root,
                               tuttiComm_t comm, tuttiRequest_t* request) {
  return async(comm, request, "tuttiReduceAsync", datatype, op, [&](Args& a) -> Result<Work> {
    return a.comm.reduceAsync(sendbuff, recvbuff, count, a.dtype, a.op, root, a.options);
  });
}

tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm) {
  return blocking(comm, "tuttiReduceScatter", datatype, op, [&](Args& a) -> Status {
    return a.comm.reduceScatter(sendbuff, recvbuff, recvcount, a.dtype, a.op, a.options);
  });
}

tuttiResult_t tuttiReduceScatterAsync(const void* sendbuff, void* recvbuff, size_t recvcount,
                                      tuttiDataType_t datatype, tuttiRedOp_t op,
                                      tuttiComm_t comm, tuttiRequest_t* request) {
  return async(comm, request, "tuttiReduceScatterAsync", datatype, op,
               [&](Args& a) -> Result<Work> {
                 return a.comm.reduceScatterAsync(sendbuff, recvbuff, recvcount, a.dtype, a.op,
                                                  a.options);
               });
}

tuttiResult_t tuttiReduceScatterv(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                  tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm) {
  return blocking(comm, "tuttiReduceScatterv", datatype, op, [&](Args& a) -> Status {
    const auto counts = a.array(recvcounts);
    return a.comm.reduceScatterv(sendbuff, recvbuff, counts, a.dtype, a.op, a.options);
  });
}

tuttiResult_t tuttiReduceScattervAsync(const void* sendbuff, void* recvbuff,
                                       const size_t* recvcounts, tuttiDataType_t datatype,
                                       tuttiRedOp_t op, tuttiComm_t comm,
                                       tuttiRequest_t* request) {
  return async(comm, request, "tuttiReduceScattervAsync", datatype, op,
               [&](Args& a) -> Result<Work> {
                 const auto counts = a.array(recvcounts);
                 return a.comm.reduceScattervAsync(sendbuff, recvbuff, counts, a.dtype, a.op,
                                                   a.options);
               });
}

// ---- rooted data movement

tuttiResult_t tuttiBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             tuttiDataType_t datatype, int root, tuttiComm_t comm) {
  return blocking(comm, "tuttiBroadcast", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.broadcast(sendbuff, recvbuff, count, a.dtype, root, a.options);
  });
}

tuttiResult_t tuttiBroadcastAsync(const void* sendbuff, void* recvbuff, size_t count,
                                  tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                  tuttiRequest_t* request) {
  return async(comm, request, "tuttiBroadcastAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 return a.comm.broadcastAsync(sendbuff, recvbuff, count, a.dtype, root, a.options);
               });
}

tuttiResult_t tuttiGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                          tuttiDataType_t datatype, int root, tuttiComm_t comm) {
  return blocking(comm, "tuttiGather", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.gather(sendbuff, recvbuff, sendcount, a.dtype, root, a.options);
  });
}

tuttiResult_t tuttiGatherAsync(const void* sendbuff, void* recvbuff, size_t sendcount,
                               tuttiDataType_t datatype, int root, tuttiComm_t comm,
                               tuttiRequest_t* request) {
  return async(comm, request, "tuttiGatherAsync", datatype, tuttiSum, [&](Args& a) -> Result<Work> {
    return a.comm.gatherAsync(sendbuff, recvbuff, sendcount, a.dtype, root, a.options);
  });
}

tuttiResult_t tuttiGatherv(const void* sendbuff, size_t sendcount, void* recvbuff,
                           const size_t* recvcounts, const size_t* displs,
                           tuttiDataType_t datatype, int root, tuttiComm_t comm) {
  return blocking(comm, "tuttiGatherv", datatype, tuttiSum, [&](Args& a) -> Status {
    const auto counts = a.array(recvcounts);
    const auto offsets = a.array(displs);
    return a.comm.gatherv(sendbuff, sendcount, recvbuff, counts, offsets, a.dtype, root,
                          a.options);
  });
}

tuttiResult_t tuttiGathervAsync(const void* sendbuff, size_t sendcount, void* recvbuff,
                                const size_t* recvcounts, const size_t* displs,
                                tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                tuttiRequest_t* request) {
  return async(comm, request, "tuttiGathervAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 const auto counts = a.array(recvcounts);
                 const auto offsets = a.array(displs);
                 return a.comm.gathervAsync(sendbuff, sendcount, recvbuff, counts, offsets,
                                            a.dtype, root, a.options);
               });
}

tuttiResult_t tuttiScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                           tuttiDataType_t datatype, int root, tuttiComm_t comm) {
  return blocking(comm, "tuttiScatter", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.scatter(sendbuff, recvbuff, recvcount, a.dtype, root, a.options);
  });
}

tuttiResult_t tuttiScatterAsync(const void* sendbuff, void* recvbuff, size_t recvcount,
                                tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                tuttiRequest_t* request) {
  return async(comm, request, "tuttiScatterAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 return a.comm.scatterAsync(sendbuff, recvbuff, recvcount, a.dtype, root,
                                            a.options);
               });
}

tuttiResult_t tuttiScatterv(const void* sendbuff, const size_t* sendcounts, const size_t* displs,
                            void* recvbuff, size_t recvcount, tuttiDataType_t datatype, int root,
                            tuttiComm_t comm) {
  return blocking(comm, "tuttiScatterv", datatype, tuttiSum, [&](Args& a) -> Status {
    const auto counts = a.array(sendcounts);
    const auto offsets = a.array(displs);
    return a.comm.scatterv(sendbuff, counts, offsets, recvbuff, recvcount, a.dtype, root,
                           a.options);
  });
}

tuttiResult_t tuttiScattervAsync(const void* sendbuff, const size_t* sendcounts,
                                 const size_t* displs, void* recvbuff, size_t recvcount,
                                 tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                 tuttiRequest_t* request) {
  return async(comm, request, "tuttiScattervAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 const auto counts = a.array(sendcounts);
                 const auto offsets = a.array(displs);
                 return a.comm.scattervAsync(sendbuff, counts, offsets, recvbuff, recvcount,
                                             a.dtype, root, a.options);
               });
}

// ---- all-to-all data movement

tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             tuttiDataType_t datatype, tuttiComm_t comm) {
  return blocking(comm, "tuttiAllGather", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.allgather(sendbuff, recvbuff, sendcount, a.dtype, a.options);
  });
}

tuttiResult_t tuttiAllGatherAsync(const void* sendbuff, void* recvbuff, size_t sendcount,
                                  tuttiDataType_t datatype, tuttiComm_t comm,
                                  tuttiRequest_t* request) {
  return async(comm, request, "tuttiAllGatherAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 return a.comm.allgatherAsync(sendbuff, recvbuff, sendcount, a.dtype, a.options);
               });
}

tuttiResult_t tuttiAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff,
                              const size_t* recvcounts, const size_t* displs,
                              tuttiDataType_t datatype, tuttiComm_t comm) {
  return blocking(comm, "tuttiAllGatherv", datatype, tuttiSum, [&](Args& a) -> Status {
    const auto counts = a.array(recvcounts);
    const auto offsets = a.array(displs);
    return a.comm.allgatherv(sendbuff, sendcount, recvbuff, counts, offsets, a.dtype, a.options);
  });
}

tuttiResult_t tuttiAllGathervAsync(const void* sendbuff, size_t sendcount, void* recvbuff,
                                   const size_t* recvcounts, const size_t* displs,
                                   tuttiDataType_t datatype, tuttiComm_t comm,
                                   tuttiRequest_t* request) {
  return async(comm, request, "tuttiAllGathervAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 const auto counts = a.array(recvcounts);
                 const auto offsets = a.array(displs);
                 return a.comm.allgathervAsync(sendbuff, sendcount, recvbuff, counts, offsets,
                                               a.dtype, a.options);
               });
}

tuttiResult_t tuttiAlltoall(const void* sendbuff, void* recvbuff, size_t count,
                            tuttiDataType_t datatype, tuttiComm_t comm) {
  return blocking(comm, "tuttiAlltoall", datatype, tuttiSum, [&](Args& a) -> Status {
    return a.comm.alltoall(sendbuff, recvbuff, count, a.dtype, a.options);
  });
}

tuttiResult_t tuttiAlltoallAsync(const void* sendbuff, void* recvbuff, size_t count,
                                 tuttiDataType_t datatype, tuttiComm_t comm,
                                 tuttiRequest_t* request) {
  return async(comm, request, "tuttiAlltoallAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 return a.comm.alltoallAsync(sendbuff, recvbuff, count, a.dtype, a.options);
               });
}

tuttiResult_t tuttiAlltoallv(const void* sendbuff, const size_t* sendcounts,
                             const size_t* sdispls, void* recvbuff, const size_t* recvcounts,
                             const size_t* rdispls, tuttiDataType_t datatype, tuttiComm_t comm) {
  return blocking(comm, "tuttiAlltoallv", datatype, tuttiSum, [&](Args& a) -> Status {
    const auto scounts = a.array(sendcounts);
    const auto soffsets = a.array(sdispls);
    const auto rcounts = a.array(recvcounts);
    const auto roffsets = a.array(rdispls);
    return a.comm.alltoallv(sendbuff, scounts, soffsets, recvbuff, rcounts, roffsets, a.dtype,
                            a.options);
  });
}

tuttiResult_t tuttiAlltoallvAsync(const void* sendbuff, const size_t* sendcounts,
                                  const size_t* sdispls, void* recvbuff,
                                  const size_t* recvcounts, const size_t* rdispls,
                                  tuttiDataType_t datatype, tuttiComm_t comm,
                                  tuttiRequest_t* request) {
  return async(comm, request, "tuttiAlltoallvAsync", datatype, tuttiSum,
               [&](Args& a) -> Result<Work> {
                 const auto scounts = a.array(sendcounts);
                 const auto soffsets = a.array(sdispls);
                 const auto rcounts = a.array(recvcounts);
                 const auto roffsets = a.array(rdispls);
                 return a.comm.alltoallvAsync(sendbuff, scounts, soffsets, recvbuff, rcounts,
                                              roffsets, a.dtype, a.options);
               });
}

}  // extern "C"
