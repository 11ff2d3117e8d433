/* capi_smoke: the C API from C99, one process per rank, started by tutti-run.
     tutti_capi_smoke [store-port]
   Calls every collective, blocking and then non-blocking, with distinct data per rank and
   checks every output element against the MPI definition computed here; splits the
   communicator; checks error paths (NULL handles and pointers, bad datatype, operator and
   root, a timed-out receive) and their messages. With a port, it also joins a second world
   through tuttiCommInitRank at 127.0.0.1:<port>.
   Prints "CAPI OK rank R of N (C checks)" when every check passed, else one "CAPI FAIL"
   line per failed check and exits 1. Every rank runs the same collectives in the same order
   whatever fails, so one failure never hangs the others. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

static int gRank = -1;
static int gSize = 0;
static int gChecks = 0;
static int gFailures = 0;

/* ---- checking -------------------------------------------------------------------------- */

static void expectTrue(int ok, const char* what) {
  ++gChecks;
  if (!ok) {
    ++gFailures;
    printf("CAPI FAIL rank %d: %s\n", gRank, what);
  }
}

static void expectResult(tuttiResult_t got, tuttiResult_t want, const char* what,
                         tuttiComm_t comm) {
  ++gChecks;
  if (got != want) {
    ++gFailures;
    printf("CAPI FAIL rank %d: %s: got %s (%d), expected %s; last error: %s\n", gRank, what,
           tuttiGetErrorString(got), (int)got, tuttiGetErrorString(want),
           tuttiCommGetLastError(comm));
  }
}

/* The last error of `comm` contains every one of the (up to two) fragments. */
static void expectLastError(tuttiComm_t comm, const char* fragment, const char* other,
                            const char* what) {
  const char* message = tuttiCommGetLastError(comm);
  int ok = message != NULL && strstr(message, fragment) != NULL &&
           (other == NULL || strstr(message, other) != NULL);
  ++gChecks;
  if (!ok) {
    ++gFailures;
    printf("CAPI FAIL rank %d: %s: last error '%s' does not name '%s'%s%s\n", gRank, what,
           message == NULL ? "(NULL)" : message, fragment, other ? " and " : "",
           other ? other : "");
  }
}

/* Compares `count` elements of `size` bytes, reporting the first difference. */
static void expectElements(const void* got, const void* want, size_t count, size_t size,
                           const char* what) {
  size_t i;
  size_t wrong = 0;
  size_t first = 0;
  for (i = 0; i < count; ++i) {
    if (memcmp((const char*)got + i * size, (const char*)want + i * size, size) != 0) {
      if (wrong++ == 0) first = i;
    }
  }
  ++gChecks;
  if (wrong != 0) {
    ++gFailures;
    printf("CAPI FAIL rank %d: %s: %lu of %lu elements wrong, first at %lu\n", gRank, what,
           (unsigned long)wrong, (unsigned long)count, (unsigned long)first);
  }
}

static void* allocate(size_t bytes) {
  void* p = calloc(bytes == 0 ? 1 : bytes, 1);
  if (p == NULL) {
    printf("CAPI FAIL rank %d: out of memory\n", gRank);
    exit(1);
  }
  return p;
}

/* ---- distinct values per rank and index --------------------------------------------------- */

static int32_t v32(int rank, size_t i) { return (int32_t)(rank * 100003 + (int)i * 7 + 1); }
static int64_t v64(int rank, size_t i) {
  return (int64_t)rank * 10000000019LL + (int64_t)i * 13 - 5;
}
static double vdbl(int rank, size_t i) { return rank * 1000.25 + (double)i * 0.5 - 3.0; }
static uint8_t v8(int rank, size_t i) { return (uint8_t)(rank * 37 + (int)i * 3 + 1); }
/* Small integers: every sum over ranks is exact in float. */
static float vflt(int rank, size_t i) { return (float)((rank * 7 + (int)i) % 23) - 11.0f; }
/* +-1, +-2, +-3: products over a few ranks stay small and nonzero. */
static int64_t vprod(int rank, size_t i) {
  return (int64_t)(((rank + (int)i) % 3) + 1) * ((i % 2) != 0 ? -1 : 1);
}

/* ---- issuing a call blocking or non-blocking ------------------------------------------- */

/* Finishes a non-blocking call: tuttiTest (done or not: no timing is assumed), tuttiWait,
   then tuttiTest again, which must say done with the same result. The request is read
   through a pointer because C leaves the order of argument evaluation open: in
   finish(tuttiXAsync(..., &req), &req, ...) it is read only once the call has set it. */
static tuttiResult_t finish(tuttiResult_t started, tuttiRequest_t* slot, const char* what) {
  tuttiRequest_t request = *slot;
  int done = -1;
  tuttiResult_t waited;
  tuttiResult_t tested;
  *slot = NULL;
  if (started != tuttiSuccess) {
    expectTrue(request == NULL, "a request that failed to start is NULL");
    return started;
  }
  tested = tuttiTest(request, &done);
  expectTrue(done == 0 || done == 1, what);
  waited = tuttiWait(request);
  done = -1;
  tested = tuttiTest(request, &done);
  expectTrue(done == 1 && tested == waited, "tuttiTest after tuttiWait reports done, same result");
  expectResult(tuttiRequestFree(request), tuttiSuccess, "tuttiRequestFree", NULL);
  return waited;
}

/* ---- collectives --------------------------------------------------------------------------- */

static void checkAllReduce(tuttiComm_t comm, int async) {
  const size_t count = 37;
  int32_t* in = allocate(count * sizeof *in);
  int32_t* out = allocate(count * sizeof *out);
  int32_t* want = allocate(count * sizeof *want);
  double* dbl = allocate(19 * sizeof *dbl);
  double* dblWant = allocate(19 * sizeof *dblWant);
  int64_t* prod = allocate(8 * sizeof *prod);
  int64_t* prodOut = allocate(8 * sizeof *prodOut);
  int64_t* prodWant = allocate(8 * sizeof *prodWant);
  float* flt = allocate(11 * sizeof *flt);
  float* fltOut = allocate(11 * sizeof *fltOut);
  float* fltWant = allocate(11 * sizeof *fltWant);
  tuttiRequest_t req = NULL;
  size_t i;
  int r;
  for (i = 0; i < count; ++i) {
    int64_t sum = 0;
    in[i] = v32(gRank, i);
    for (r = 0; r < gSize; ++r) sum += v32(r, i);
    want[i] = (int32_t)sum;
  }
  expectResult(async ? finish(tuttiAllReduceAsync(in, out, count, tuttiInt32, tuttiSum, comm, &req),
                              &req, "allreduce")
                     : tuttiAllReduce(in, out, count, tuttiInt32, tuttiSum, comm),
               tuttiSuccess, "allreduce int32 sum", comm);
  expectElements(out, want, count, sizeof *out, "allreduce int32 sum");
  /* avg of positive integers: the sum divided by n, truncated */
  for (i = 0; i < count; ++i) want[i] = (int32_t)(want[i] / gSize);
  expectResult(tuttiAllReduce(in, out, count, tuttiInt, tuttiAvg, comm), tuttiSuccess,
               "allreduce int avg", comm);
  expectElements(out, want, count, sizeof *out, "allreduce int avg");
  /* max of doubles, in place */
  for (i = 0; i < 19; ++i) {
    dbl[i] = vdbl(gRank, i);
    dblWant[i] = vdbl(gSize - 1, i);
  }
  expectResult(async ? finish(tuttiAllReduceAsync(dbl, dbl, 19, tuttiDouble, tuttiMax, comm, &req),
                              &req, "allreduce in place")
                     : tuttiAllReduce(dbl, dbl, 19, tuttiDouble, tuttiMax, comm),
               tuttiSuccess, "allreduce double max in place", comm);
  expectElements(dbl, dblWant, 19, sizeof *dbl, "allreduce double max in place");
  /* product of int64 */
  for (i = 0; i < 8; ++i) {
    prod[i] = vprod(gRank, i);
    prodWant[i] = 1;
    for (r = 0; r < gSize; ++r) prodWant[i] *= vprod(r, i);
  }
  expectResult(tuttiAllReduce(prod, prodOut, 8, tuttiInt64, tuttiProd, comm), tuttiSuccess,
               "allreduce int64 prod", comm);
  expectElements(prodOut, prodWant, 8, sizeof *prodOut, "allreduce int64 prod");
  /* min and avg of floats (the average divides in float, as the library does) */
  for (i = 0; i < 11; ++i) {
    float low = vflt(0, i);
    flt[i] = vflt(gRank, i);
    for (r = 1; r < gSize; ++r)
      if (vflt(r, i) < low) low = vflt(r, i);
    fltWant[i] = low;
  }
  expectResult(tuttiAllReduce(flt, fltOut, 11, tuttiFloat, tuttiMin, comm), tuttiSuccess,
               "allreduce float min", comm);
  expectElements(fltOut, fltWant, 11, sizeof *fltOut, "allreduce float min");
  for (i = 0; i < 11; ++i) {
    float sum = 0.0f;
    for (r = 0; r < gSize; ++r) sum += vflt(r, i);
    fltWant[i] = sum / (float)gSize;
  }
  expectResult(tuttiAllReduce(flt, fltOut, 11, tuttiFloat32, tuttiAvg, comm), tuttiSuccess,
               "allreduce float avg", comm);
  expectElements(fltOut, fltWant, 11, sizeof *fltOut, "allreduce float avg");
  free(in); free(out); free(want); free(dbl); free(dblWant); free(prod); free(prodOut);
  free(prodWant); free(flt); free(fltOut); free(fltWant);
}

static void checkBroadcastAndReduce(tuttiComm_t comm, int async) {
  const size_t count = 33;
  const int root = gSize - 1;
  const int reduceRoot = gSize / 2;
  uint8_t* bytes = allocate(count);
  uint8_t* bytesWant = allocate(count);
  int32_t* in = allocate(21 * sizeof *in);
  int32_t* out = allocate(21 * sizeof *out);
  int32_t* want = allocate(21 * sizeof *want);
  tuttiRequest_t req = NULL;
  size_t i;
  int r;
  for (i = 0; i < count; ++i) {
    bytes[i] = gRank == root ? v8(root, i) : 0;
    bytesWant[i] = v8(root, i);
  }
  /* In place, as NCCL's broadcast is when sendbuff == recvbuff. */
  expectResult(async ? finish(tuttiBroadcastAsync(bytes, bytes, count, tuttiUint8, root, comm,
                                                  &req),
                              &req, "broadcast")
                     : tuttiBroadcast(bytes, bytes, count, tuttiUint8, root, comm),
               tuttiSuccess, "broadcast uint8", comm);
  expectElements(bytes, bytesWant, count, 1, "broadcast uint8");
  for (i = 0; i < 21; ++i) {
    int64_t sum = 0;
    in[i] = v32(gRank, i);
    for (r = 0; r < gSize; ++r) sum += v32(r, i);
    want[i] = (int32_t)sum;
  }
  /* The receive buffer matters on the root only; the others pass NULL. */
  expectResult(
      async ? finish(tuttiReduceAsync(in, gRank == reduceRoot ? out : NULL, 21, tuttiInt32,
                                      tuttiSum, reduceRoot, comm, &req),
                     &req, "reduce")
            : tuttiReduce(in, gRank == reduceRoot ? out : NULL, 21, tuttiInt32, tuttiSum,
                          reduceRoot, comm),
      tuttiSuccess, "reduce int32 sum", comm);
  if (gRank == reduceRoot) expectElements(out, want, 21, sizeof *out, "reduce int32 sum");
  free(bytes); free(bytesWant); free(in); free(out); free(want);
}

/* counts[b] elements for rank b, blocks separated by one-element gaps; returns the total
   extent. zeroEvery: every rank b with b % 3 == 1 gets no elements. */
static size_t layout(size_t* counts, size_t* displs, int n, size_t base, int zeroEvery) {
  size_t offset = 0;
  int b;
  for (b = 0; b < n; ++b) {
    counts[b] = zeroEvery && b % 3 == 1 ? 0 : base + (size_t)b;
    displs[b] = offset;
    offset += counts[b] + 1;
  }
  return offset;
}

static void checkGathers(tuttiComm_t comm, int async) {
  const size_t k = 5;
  const size_t n = (size_t)gSize;
  const int root = gSize - 1;
  int64_t* in = allocate(k * sizeof *in);
  int64_t* out = allocate(n * k * sizeof *out);
  int64_t* want = allocate(n * k * sizeof *want);
  size_t* counts = allocate(n * sizeof *counts);
  size_t* displs = allocate(n * sizeof *displs);
  double* vin;
  double* vout;
  double* vwant;
  size_t extent;
  size_t i;
  size_t b;
  tuttiRequest_t req = NULL;
  for (i = 0; i < k; ++i) in[i] = v64(gRank, i);
  for (b = 0; b < n; ++b)
    for (i = 0; i < k; ++i) want[b * k + i] = v64((int)b, i);
  expectResult(async ? finish(tuttiAllGatherAsync(in, out, k, tuttiInt64, comm, &req), &req,
                              "allgather")
                     : tuttiAllGather(in, out, k, tuttiInt64, comm),
               tuttiSuccess, "allgather int64", comm);
  expectElements(out, want, n * k, sizeof *out, "allgather int64");
  memset(out, 0, n * k * sizeof *out);
  expectResult(async ? finish(tuttiGatherAsync(in, out, k, tuttiInt64, root, comm, &req), &req,
                              "gather")
                     : tuttiGather(in, out, k, tuttiInt64, root, comm),
               tuttiSuccess, "gather int64", comm);
  if (gRank == root) expectElements(out, want, n * k, sizeof *out, "gather int64");
  /* v-variants: uneven counts, some zero, gaps between blocks */
  extent = layout(counts, displs, gSize, 2, 1);
  vin = allocate((counts[gRank] + 1) * sizeof *vin);
  vout = allocate(extent * sizeof *vout);
  vwant = allocate(extent * sizeof *vwant);
  for (i = 0; i < counts[gRank]; ++i) vin[i] = vdbl(gRank, i);
  for (b = 0; b < n; ++b)
    for (i = 0; i < counts[b]; ++i) vwant[displs[b] + i] = vdbl((int)b, i);
  expectResult(async ? finish(tuttiAllGathervAsync(vin, counts[gRank], vout, counts, displs,
                                                   tuttiFloat64, comm, &req),
                              &req, "allgatherv")
                     : tuttiAllGatherv(vin, counts[gRank], vout, counts, displs, tuttiFloat64,
                                       comm),
               tuttiSuccess, "allgatherv double", comm);
  for (b = 0; b < n; ++b) {
    expectElements(vout + displs[b], vwant + displs[b], counts[b], sizeof *vout,
                   "allgatherv double block");
  }
  memset(vout, 0, extent * sizeof *vout);
  expectResult(async ? finish(tuttiGathervAsync(vin, counts[gRank], vout, counts, displs,
                                                tuttiFloat64, 0, comm, &req),
                              &req, "gatherv")
                     : tuttiGatherv(vin, counts[gRank], vout, counts, displs, tuttiFloat64, 0,
                                    comm),
               tuttiSuccess, "gatherv double", comm);
  if (gRank == 0) {
    for (b = 0; b < n; ++b) {
      expectElements(vout + displs[b], vwant + displs[b], counts[b], sizeof *vout,
                     "gatherv double block");
    }
  }
  free(in); free(out); free(want); free(counts); free(displs); free(vin); free(vout);
  free(vwant);
}

static void checkScatters(tuttiComm_t comm, int async) {
  const size_t k = 3;
  const size_t n = (size_t)gSize;
  const int root = gSize > 1 ? 1 : 0;
  double* in = allocate(n * k * sizeof *in);
  double* out = allocate(k * sizeof *out);
  double* want = allocate(k * sizeof *want);
  size_t* counts = allocate(n * sizeof *counts);
  size_t* displs = allocate(n * sizeof *displs);
  int64_t* vin;
  int64_t* vout;
  int64_t* vwant;
  size_t extent;
  size_t i;
  tuttiRequest_t req = NULL;
  for (i = 0; i < n * k; ++i) in[i] = vdbl(gRank, i);
  for (i = 0; i < k; ++i) want[i] = vdbl(root, (size_t)gRank * k + i);
  expectResult(async ? finish(tuttiScatterAsync(in, out, k, tuttiDouble, root, comm, &req), &req,
                              "scatter")
                     : tuttiScatter(in, out, k, tuttiDouble, root, comm),
               tuttiSuccess, "scatter double", comm);
  expectElements(out, want, k, sizeof *out, "scatter double");
  extent = layout(counts, displs, gSize, 1, 0);
  vin = allocate(extent * sizeof *vin);
  vout = allocate((counts[gRank] + 1) * sizeof *vout);
  vwant = allocate((counts[gRank] + 1) * sizeof *vwant);
  for (i = 0; i < extent; ++i) vin[i] = v64(gRank, i);
  for (i = 0; i < counts[gRank]; ++i) vwant[i] = v64(0, displs[gRank] + i);
  expectResult(async ? finish(tuttiScattervAsync(vin, counts, displs, vout, counts[gRank],
                                                 tuttiInt64, 0, comm, &req),
                              &req, "scatterv")
                     : tuttiScatterv(vin, counts, displs, vout, counts[gRank], tuttiInt64, 0,
                                     comm),
               tuttiSuccess, "scatterv int64", comm);
  expectElements(vout, vwant, counts[gRank], sizeof *vout, "scatterv int64");
  free(in); free(out); free(want); free(counts); free(displs); free(vin); free(vout);
  free(vwant);
}

static void checkReduceScatters(tuttiComm_t comm, int async) {
  const size_t k = 6;
  const size_t n = (size_t)gSize;
  int32_t* in = allocate(n * k * sizeof *in);
  int32_t* out = allocate(k * sizeof *out);
  int32_t* want = allocate(k * sizeof *want);
  size_t* counts = allocate(n * sizeof *counts);
  float* vin;
  float* vout;
  float* vwant;
  size_t total = 0;
  size_t offset = 0;
  size_t i;
  size_t b;
  int r;
  tuttiRequest_t req = NULL;
  for (i = 0; i < n * k; ++i) in[i] = v32(gRank, i);
  for (i = 0; i < k; ++i) {
    int64_t sum = 0;
    for (r = 0; r < gSize; ++r) sum += v32(r, (size_t)gRank * k + i);
    want[i] = (int32_t)sum;
  }
  expectResult(async ? finish(tuttiReduceScatterAsync(in, out, k, tuttiInt32, tuttiSum, comm,
                                                      &req),
                              &req, "reducescatter")
                     : tuttiReduceScatter(in, out, k, tuttiInt32, tuttiSum, comm),
               tuttiSuccess, "reducescatter int32 sum", comm);
  expectElements(out, want, k, sizeof *out, "reducescatter int32 sum");
  for (b = 0; b < n; ++b) {
    counts[b] = b + 1;
    if ((int)b < gRank) offset += counts[b];
    total += counts[b];
  }
  vin = allocate(total * sizeof *vin);
  vout = allocate(counts[gRank] * sizeof *vout);
  vwant = allocate(counts[gRank] * sizeof *vwant);
  for (i = 0; i < total; ++i) vin[i] = vflt(gRank, i);
  for (i = 0; i < counts[gRank]; ++i) {
    float high = vflt(0, offset + i);
    for (r = 1; r < gSize; ++r)
      if (vflt(r, offset + i) > high) high = vflt(r, offset + i);
    vwant[i] = high;
  }
  expectResult(async ? finish(tuttiReduceScattervAsync(vin, vout, counts, tuttiFloat, tuttiMax,
                                                       comm, &req),
                              &req, "reducescatterv")
                     : tuttiReduceScatterv(vin, vout, counts, tuttiFloat, tuttiMax, comm),
               tuttiSuccess, "reducescatterv float max", comm);
  expectElements(vout, vwant, counts[gRank], sizeof *vout, "reducescatterv float max");
  free(in); free(out); free(want); free(counts); free(vin); free(vout); free(vwant);
}

/* Elements rank `from` sends rank `to` in the alltoallv check. */
static size_t pairCount(int from, int to) { return (size_t)((from + 2 * to) % 3 + 1); }

static void checkAlltoalls(tuttiComm_t comm, int async) {
  const size_t k = 4;
  const size_t n = (size_t)gSize;
  int32_t* in = allocate(n * k * sizeof *in);
  int32_t* out = allocate(n * k * sizeof *out);
  int32_t* want = allocate(n * k * sizeof *want);
  size_t* scounts = allocate(n * sizeof *scounts);
  size_t* sdispls = allocate(n * sizeof *sdispls);
  size_t* rcounts = allocate(n * sizeof *rcounts);
  size_t* rdispls = allocate(n * sizeof *rdispls);
  size_t sent = 0;
  size_t received = 0;
  size_t i;
  size_t b;
  int c;
  tuttiRequest_t req = NULL;
  for (i = 0; i < n * k; ++i) in[i] = v32(gRank, i);
  for (b = 0; b < n; ++b)
    for (i = 0; i < k; ++i) want[b * k + i] = v32((int)b, (size_t)gRank * k + i);
  expectResult(async ? finish(tuttiAlltoallAsync(in, out, k, tuttiInt32, comm, &req), &req,
                              "alltoall")
                     : tuttiAlltoall(in, out, k, tuttiInt32, comm),
               tuttiSuccess, "alltoall int32", comm);
  expectElements(out, want, n * k, sizeof *out, "alltoall int32");
  for (b = 0; b < n; ++b) {
    scounts[b] = pairCount(gRank, (int)b);
    sdispls[b] = sent;
    sent += scounts[b];
    rcounts[b] = pairCount((int)b, gRank);
    rdispls[b] = received;
    received += rcounts[b];
  }
  free(in);
  free(out);
  free(want);
  in = allocate(sent * sizeof *in);
  out = allocate(received * sizeof *out);
  want = allocate(received * sizeof *want);
  for (i = 0; i < sent; ++i) in[i] = v32(gRank, i);
  for (b = 0; b < n; ++b) {
    /* where rank b's block for this rank starts in b's send buffer */
    size_t from = 0;
    for (c = 0; c < gRank; ++c) from += pairCount((int)b, c);
    for (i = 0; i < rcounts[b]; ++i) want[rdispls[b] + i] = v32((int)b, from + i);
  }
  expectResult(async ? finish(tuttiAlltoallvAsync(in, scounts, sdispls, out, rcounts, rdispls,
                                                  tuttiInt32, comm, &req),
                              &req, "alltoallv")
                     : tuttiAlltoallv(in, scounts, sdispls, out, rcounts, rdispls, tuttiInt32,
                                      comm),
               tuttiSuccess, "alltoallv int32", comm);
  expectElements(out, want, received, sizeof *out, "alltoallv int32");
  free(in); free(out); free(want); free(scounts); free(sdispls); free(rcounts); free(rdispls);
}

/* A ring of messages (rank+1 receives from rank) and a barrier. */
/* A rank sends to itself: a blocking send before its blocking receive (tutti buffers it),
   and a receive posted first (tuttiRecvAsync) with a blocking send after it. */
static void checkSendToSelf(tuttiComm_t comm, int async) {
  const size_t count = 1000;
  int64_t* out = allocate(count * sizeof *out);
  int64_t* in = allocate(count * sizeof *in);
  tuttiRequest_t req = NULL;
  size_t i;
  for (i = 0; i < count; ++i) {
    out[i] = v64(gRank + 7, i);
    in[i] = -1;
  }
  if (async) {
    expectResult(tuttiRecvAsync(in, count, tuttiInt64, gRank, comm, &req), tuttiSuccess,
                 "tuttiRecvAsync from self", comm);
    expectResult(tuttiSend(out, count, tuttiInt64, gRank, comm), tuttiSuccess,
                 "tuttiSend to self, its receive posted", comm);
    expectResult(finish(tuttiSuccess, &req, "recv from self"), tuttiSuccess, "recv from self",
                 comm);
  } else {
    expectResult(tuttiSend(out, count, tuttiInt64, gRank, comm), tuttiSuccess,
                 "tuttiSend to self before its receive", comm);
    expectResult(tuttiRecv(in, count, tuttiInt64, gRank, comm), tuttiSuccess,
                 "tuttiRecv from self", comm);
  }
  expectElements(in, out, count, sizeof *in, "a message to self");
  free(out); free(in);
}

static void checkPointToPointAndBarrier(tuttiComm_t comm, int async) {
  const size_t count = 300;
  tuttiRequest_t req = NULL;
  expectResult(async ? finish(tuttiBarrierAsync(comm, &req), &req, "barrier")
                     : tuttiBarrier(comm),
               tuttiSuccess, "barrier", comm);
  if (gSize > 1) {
    const int next = (gRank + 1) % gSize;
    const int prev = (gRank + gSize - 1) % gSize;
    int64_t* out = allocate(count * sizeof *out);
    int64_t* in = allocate(count * sizeof *in);
    int64_t* want = allocate(count * sizeof *want);
    tuttiRequest_t sendReq = NULL;
    size_t i;
    for (i = 0; i < count; ++i) {
      out[i] = v64(gRank, i);
      want[i] = v64(prev, i);
    }
    expectResult(tuttiSendAsync(out, count, tuttiInt64, next, comm, &sendReq), tuttiSuccess,
                 "tuttiSendAsync", comm);
    expectResult(async ? finish(tuttiRecvAsync(in, count, tuttiInt64, prev, comm, &req), &req,
                                "recv")
                       : tuttiRecv(in, count, tuttiInt64, prev, comm),
                 tuttiSuccess, "recv from the previous rank", comm);
    expectResult(finish(tuttiSuccess, &sendReq, "send"), tuttiSuccess, "send to the next rank",
                 comm);
    expectElements(in, want, count, sizeof *in, "recv from the previous rank");
    /* blocking send, then blocking receive, on alternate sides of pair (0, 1) */
    if (gRank < 2) {
      if (gRank == 0) {
        expectResult(tuttiSend(out, 7, tuttiInt64, 1, comm), tuttiSuccess, "tuttiSend", comm);
      } else {
        expectResult(tuttiRecv(in, 7, tuttiInt64, 0, comm), tuttiSuccess, "tuttiRecv", comm);
        for (i = 0; i < 7; ++i) want[i] = v64(0, i);
        expectElements(in, want, 7, sizeof *in, "tuttiRecv from rank 0");
      }
    }
    free(out); free(in); free(want);
  }
  checkSendToSelf(comm, async);
}

/* ---- communicators ------------------------------------------------------------------------ */

/* Splits by parity with keys reversing the order, then leaves rank 0 out of a second split. */
/* Buffers from tuttiMemAlloc: a large all-reduce between them (peers read them through
   their own mappings) and the allocator's errors. */
static void checkMemAlloc(tuttiComm_t comm) {
  const size_t count = 300000; /* 1.2 MB: past the rendezvous threshold */
  int32_t* in = NULL;
  int32_t* out = NULL;
  size_t i;
  int r, wrong = 0;
  void* none = &wrong;
  expectResult(tuttiMemAlloc((void**)&in, count * sizeof *in), tuttiSuccess, "tuttiMemAlloc", NULL);
  expectResult(tuttiMemAlloc((void**)&out, count * sizeof *out), tuttiSuccess, "tuttiMemAlloc",
               NULL);
  if (in != NULL && out != NULL) {
    for (i = 0; i < count; ++i) in[i] = v32(gRank, i);
    expectResult(tuttiAllReduce(in, out, count, tuttiInt32, tuttiSum, comm), tuttiSuccess,
                 "allreduce of tuttiMemAlloc buffers", comm);
    for (i = 0; i < count; ++i) {
      int64_t sum = 0;
      for (r = 0; r < gSize; ++r) sum += v32(r, i);
      wrong += out[i] != (int32_t)sum;
    }
    expectTrue(wrong == 0, "allreduce of tuttiMemAlloc buffers: every element");
  }
  expectResult(tuttiMemFree(in), tuttiSuccess, "tuttiMemFree", NULL);
  expectResult(tuttiMemFree(out), tuttiSuccess, "tuttiMemFree", NULL);
  expectResult(tuttiMemFree(NULL), tuttiSuccess, "tuttiMemFree(NULL)", NULL);
  expectResult(tuttiMemAlloc(NULL, 64), tuttiInvalidArgument, "tuttiMemAlloc(NULL, ...)", NULL);
  expectResult(tuttiMemAlloc(&none, 0), tuttiInvalidArgument, "tuttiMemAlloc of 0 bytes", NULL);
  expectTrue(none == NULL, "a failed tuttiMemAlloc stores NULL");
  expectResult(tuttiMemFree(&wrong), tuttiInvalidArgument, "tuttiMemFree of a stack address", NULL);
}

static void checkSplit(tuttiComm_t comm) {
  tuttiComm_t half = NULL;
  tuttiComm_t rest = NULL;
  int count = -1;
  int rank = -1;
  int expectedCount = 0;
  int expectedRank = 0;
  int r;
  int32_t mine;
  int32_t sum = 0;
  int32_t wantSum = 0;
  expectResult(tuttiCommSplit(comm, gRank % 2, gSize - gRank, &half), tuttiSuccess,
               "split by parity", comm);
  for (r = 0; r < gSize; ++r) {
    if (r % 2 != gRank % 2) continue;
    ++expectedCount;
    wantSum += r;
    if (r > gRank) ++expectedRank; /* higher ranks have lower keys: they come first */
  }
  if (half != NULL) {
    expectResult(tuttiCommCount(half, &count), tuttiSuccess, "tuttiCommCount(half)", half);
    expectResult(tuttiCommUserRank(half, &rank), tuttiSuccess, "tuttiCommUserRank(half)", half);
    expectTrue(count == expectedCount, "split: size of the parity group");
    expectTrue(rank == expectedRank, "split: rank ordered by key");
    mine = gRank;
    expectResult(tuttiAllReduce(&mine, &sum, 1, tuttiInt32, tuttiSum, half), tuttiSuccess,
                 "allreduce on the split", half);
    expectTrue(sum == wantSum, "allreduce on the split sums the group's parent ranks");
    expectResult(tuttiCommDestroy(half), tuttiSuccess, "destroy the split", comm);
  } else {
    expectTrue(0, "split with a color gave no communicator");
  }
  expectResult(tuttiCommSplit(comm, gRank == 0 ? TUTTI_SPLIT_NOCOLOR : 0, gRank, &rest),
               tuttiSuccess, "split leaving rank 0 out", comm);
  if (gRank == 0) {
    expectTrue(rest == NULL, "TUTTI_SPLIT_NOCOLOR yields NULL");
  } else if (rest != NULL) {
    expectResult(tuttiCommCount(rest, &count), tuttiSuccess, "tuttiCommCount(rest)", rest);
    expectTrue(count == gSize - 1, "split without rank 0 has n-1 ranks");
    expectResult(tuttiBarrier(rest), tuttiSuccess, "barrier without rank 0", rest);
    expectResult(tuttiCommDestroy(rest), tuttiSuccess, "destroy", comm);
  } else {
    expectTrue(0, "split with color 0 gave no communicator");
  }
}

/* Rank 0 waits for a message nobody sends, on a copy of the world with a short timeout; the
   others wait at a barrier of the world, so they leave the copy only after rank 0 timed out. */
static void checkTimeout(tuttiComm_t comm) {
  tuttiComm_t copy = NULL;
  int32_t value = 0;
  if (gSize < 2) return;
  expectResult(tuttiCommSplit(comm, 0, gRank, &copy), tuttiSuccess, "split a copy", comm);
  if (copy == NULL) return;
  expectResult(tuttiSetTimeout(copy, 0.3), tuttiSuccess, "tuttiSetTimeout(0.3)", copy);
  if (gRank == 0) {
    expectResult(tuttiRecv(&value, 1, tuttiInt32, 1, copy), tuttiTimeout,
                 "a receive nobody sends to times out", copy);
    expectLastError(copy, "tuttiRecv", "timeout", "the timeout is named");
  }
  expectResult(tuttiBarrier(comm), tuttiSuccess, "barrier after the timeout", comm);
  expectResult(tuttiCommDestroy(copy), tuttiSuccess, "destroy the timed-out copy", comm);
}

/* Rank 0 aborts a copy of the world; every other rank, blocked in a barrier of the copy
   that rank 0 never enters, gets tuttiAborted naming rank 0 (long before the copy's
   timeout). Then all meet again on the world. */
static void checkAbort(tuttiComm_t comm) {
  tuttiComm_t copy = NULL;
  expectResult(tuttiCommAbort(NULL), tuttiInvalidArgument, "abort NULL", NULL);
  if (gSize < 2) return;
  expectResult(tuttiCommSplit(comm, 0, gRank, &copy), tuttiSuccess, "split a copy to abort", comm);
  if (copy == NULL) return;
  if (gRank == 0) {
    expectResult(tuttiCommAbort(copy), tuttiSuccess, "tuttiCommAbort", comm);
  } else {
    expectResult(tuttiSetTimeout(copy, 120), tuttiSuccess, "tuttiSetTimeout(120)", copy);
    expectResult(tuttiBarrier(copy), tuttiAborted, "a barrier rank 0 aborted", copy);
    expectLastError(copy, "tuttiBarrier", "aborted by rank 0", "the aborting rank is named");
    expectResult(tuttiCommDestroy(copy), tuttiSuccess, "destroy the aborted copy", comm);
  }
  expectResult(tuttiBarrier(comm), tuttiSuccess, "the world still works after the abort", comm);
}

/* Every error here is in an argument every rank passes alike, found before any
   communication, so ranks stay in step and comm stays usable. Errors in what is one rank's
   own (NULL buffers, peers), which fail the communicator, are in capi_errors.c. */
static void checkErrors(tuttiComm_t comm) {
  int32_t buffer[4] = {1, 2, 3, 4};
  int32_t out[64];
  size_t counts[64];
  int value = 0;
  int done = 0;
  int version = 0;
  tuttiComm_t none = NULL;
  tuttiRequest_t req = (tuttiRequest_t)&value; /* must be overwritten with NULL */
  double nan = strtod("nan", NULL);
  int i;
  int j;
  /* NULL handles and out-parameters */
  expectResult(tuttiAllReduce(buffer, out, 4, tuttiInt32, tuttiSum, NULL), tuttiInvalidArgument,
               "allreduce on a NULL comm", NULL);
  expectResult(tuttiBarrier(NULL), tuttiInvalidArgument, "barrier on a NULL comm", NULL);
  expectResult(tuttiCommCount(NULL, &value), tuttiInvalidArgument, "count of NULL", NULL);
  expectResult(tuttiCommCount(comm, NULL), tuttiInvalidArgument, "count into NULL", comm);
  expectLastError(comm, "tuttiCommCount", "NULL", "a NULL out-parameter is named");
  expectResult(tuttiCommUserRank(comm, NULL), tuttiInvalidArgument, "rank into NULL", comm);
  expectResult(tuttiCommSplit(NULL, 0, 0, &none), tuttiInvalidArgument, "split NULL", NULL);
  expectResult(tuttiCommSplit(comm, 0, 0, NULL), tuttiInvalidArgument, "split into NULL", comm);
  expectResult(tuttiSetTimeout(NULL, 1.0), tuttiInvalidArgument, "timeout of NULL", NULL);
  expectResult(tuttiCommDestroy(NULL), tuttiInvalidArgument, "destroy NULL", NULL);
  expectResult(tuttiWait(NULL), tuttiInvalidArgument, "wait on NULL", NULL);
  expectResult(tuttiTest(NULL, &done), tuttiInvalidArgument, "test NULL", NULL);
  expectResult(tuttiRequestFree(NULL), tuttiInvalidArgument, "free NULL", NULL);
  expectResult(tuttiGetVersion(NULL), tuttiInvalidArgument, "version into NULL", NULL);
  expectResult(tuttiCommInitFromEnv(NULL), tuttiInvalidArgument, "init into NULL", NULL);
  expectResult(tuttiCommInitRank(NULL, 2, "127.0.0.1:1", 0), tuttiInvalidArgument,
               "init rank into NULL", NULL);
  expectResult(tuttiAllReduceAsync(buffer, out, 4, tuttiInt32, tuttiSum, NULL, &req),
               tuttiInvalidArgument, "async on a NULL comm", NULL);
  expectResult(tuttiAllReduceAsync(buffer, out, 4, tuttiInt32, tuttiSum, comm, NULL),
               tuttiInvalidArgument, "async into a NULL request pointer", comm);
  expectTrue(tuttiCommGetLastError(NULL) != NULL, "last error of NULL is a message");
  /* bad arguments the library names */
  expectResult(tuttiBroadcast(buffer, out, 4, tuttiInt32, gSize, comm), tuttiInvalidArgument,
               "broadcast with root = size", comm);
  expectLastError(comm, "tuttiBroadcast", "root", "a bad root is named");
  expectResult(tuttiReduce(buffer, out, 4, tuttiInt32, tuttiSum, -1, comm),
               tuttiInvalidArgument, "reduce with root -1", comm);
  expectLastError(comm, "root", NULL, "a negative root is named");
  expectResult(tuttiBroadcastAsync(buffer, out, 4, tuttiInt32, gSize + 3, comm, &req),
               tuttiInvalidArgument, "async broadcast with a bad root", comm);
  expectTrue(req == NULL, "a refused async call leaves *request NULL");
  /* 12 and 7 are no datatype and no operator (capi_errors.c tries negative ones too) */
  expectResult(tuttiAllReduce(buffer, out, 4, (tuttiDataType_t)12, tuttiSum, comm),
               tuttiInvalidArgument, "bad datatype", comm);
  expectLastError(comm, "datatype 12", NULL, "a bad datatype is named");
  expectResult(tuttiAllReduce(buffer, out, 4, tuttiInt32, (tuttiRedOp_t)7, comm),
               tuttiInvalidArgument, "bad operator", comm);
  expectLastError(comm, "op 7", NULL, "a bad operator is named");
  expectResult(tuttiAllGatherv(buffer, 1, out, NULL, counts, tuttiInt32, comm),
               tuttiInvalidArgument, "NULL recvcounts", comm);
  expectLastError(comm, "recvcounts", NULL, "a NULL array is named");
  expectResult(tuttiSetTimeout(comm, 0.0), tuttiInvalidArgument, "timeout 0", comm);
  expectResult(tuttiSetTimeout(comm, -2.0), tuttiInvalidArgument, "negative timeout", comm);
  expectResult(tuttiSetTimeout(comm, nan), tuttiInvalidArgument, "NaN timeout", comm);
  expectLastError(comm, "tuttiSetTimeout", NULL, "a bad timeout is named");
  /* init arguments refused before any connection */
  expectResult(tuttiCommInitRank(&none, 0, "127.0.0.1:1", 0), tuttiInvalidArgument,
               "init with 0 ranks", NULL);
  expectResult(tuttiCommInitRank(&none, 2, "127.0.0.1:1", 2), tuttiInvalidArgument,
               "init with rank = nranks", NULL);
  expectResult(tuttiCommInitRank(&none, 2, "no-port-here", 1), tuttiInvalidArgument,
               "init with a malformed address", NULL);
  expectResult(tuttiCommInitRank(&none, 2, NULL, 1), tuttiInvalidArgument,
               "init with a NULL address", NULL);
  expectTrue(none == NULL, "a failed init leaves *comm NULL");
  /* error strings: one distinct text per code, and a text for unknown codes */
  for (i = 0; i < (int)tuttiNumResults; ++i) {
    const char* text = tuttiGetErrorString((tuttiResult_t)i);
    expectTrue(text != NULL && text[0] != '\0', "tuttiGetErrorString gives a text");
    for (j = 0; j < i && text != NULL; ++j) {
      expectTrue(strcmp(text, tuttiGetErrorString((tuttiResult_t)j)) != 0,
                 "tuttiGetErrorString texts are distinct");
    }
  }
  expectTrue(tuttiGetErrorString((tuttiResult_t)13) != NULL, "text for an unknown code");
  expectResult(tuttiGetVersion(&version), tuttiSuccess, "tuttiGetVersion", NULL);
  expectTrue(version > 0 && version == TUTTI_VERSION_CODE(version / 10000, version / 100 % 100,
                                                          version % 100),
             "the version is a version code");
}

/* A second world of the same processes, joined through a store rank 0 serves at `port`. */
static void checkInitRank(const char* port) {
  char address[64];
  tuttiComm_t second = NULL;
  int count = -1;
  int rank = -1;
  int32_t mine = gRank + 1;
  int32_t sum = 0;
  snprintf(address, sizeof address, "127.0.0.1:%s", port);
  expectResult(tuttiCommInitRank(&second, gSize, address, gRank), tuttiSuccess,
               "tuttiCommInitRank", NULL);
  if (second == NULL) return;
  expectResult(tuttiCommCount(second, &count), tuttiSuccess, "count of the second world", second);
  expectResult(tuttiCommUserRank(second, &rank), tuttiSuccess, "rank in the second world", second);
  expectTrue(count == gSize && rank == gRank, "the second world has the same ranks");
  expectResult(tuttiAllReduce(&mine, &sum, 1, tuttiInt32, tuttiSum, second), tuttiSuccess,
               "allreduce in the second world", second);
  expectTrue(sum == gSize * (gSize + 1) / 2, "allreduce in the second world sums 1..n");
  expectResult(tuttiCommDestroy(second), tuttiSuccess, "destroy the second world", NULL);
}

int main(int argc, char** argv) {
  tuttiComm_t comm = NULL;
  int async;
  tuttiResult_t init = tuttiCommInitFromEnv(&comm);
  if (init != tuttiSuccess || comm == NULL) {
    printf("CAPI FAIL: tuttiCommInitFromEnv: %s\n", tuttiGetErrorString(init));
    return 1;
  }
  expectResult(tuttiCommCount(comm, &gSize), tuttiSuccess, "tuttiCommCount", comm);
  expectResult(tuttiCommUserRank(comm, &gRank), tuttiSuccess, "tuttiCommUserRank", comm);
  if (gSize < 1 || gRank < 0 || gRank >= gSize) {
    printf("CAPI FAIL: rank %d of %d\n", gRank, gSize);
    return 1;
  }
  for (async = 0; async <= 1; ++async) {
    checkAllReduce(comm, async);
    checkBroadcastAndReduce(comm, async);
    checkGathers(comm, async);
    checkScatters(comm, async);
    checkReduceScatters(comm, async);
    checkAlltoalls(comm, async);
    checkPointToPointAndBarrier(comm, async);
  }
  checkErrors(comm);
  checkMemAlloc(comm);
  checkSplit(comm);
  checkTimeout(comm);
  checkAbort(comm);
  if (argc > 1) checkInitRank(argv[1]);
  expectResult(tuttiCommDestroy(comm), tuttiSuccess, "tuttiCommDestroy", NULL);
  if (gFailures != 0) {
    printf("CAPI FAILED rank %d: %d of %d checks\n", gRank, gFailures, gChecks);
    return 1;
  }
  printf("CAPI OK rank %d of %d (%d checks)\n", gRank, gSize, gChecks);
  return 0;
}
