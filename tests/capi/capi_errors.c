/* capi_errors: bad input through the C API, from C99, one process per rank under tutti-run.
     tutti_capi_errors
   Two tables of cases, each checked for the exact result code and a fragment of the
   communicator's last error (which names the argument and its value):
   - shared: every rank makes the same bad call on the world communicator; each refuses it
     alone (nothing moves), and the world still works afterwards;
   - only here: on a fresh copy of the world per case, the last rank makes the bad call
     while the others make the call it should have made, with a two-minute timeout. The
     last rank gets tuttiInvalidArgument; the others get tuttiAborted naming it (not
     tuttiTimeout: they learn from it, not from their timeout), in that call when it needs
     the last rank, else in the next; every later call on the copy is refused.
   Prints "ERRORS OK rank R of N (K checks)" when every check passed, else one "ERRORS FAIL"
   line per failed check, and exits 1. */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tutti/tutti.h>

#define MAX_RANKS 16
#define ELEMS 64

static int gRank = -1;
static int gSize = 0;
static int gChecks = 0;
static int gFailures = 0;

/* Buffers and arrays every case may point into: room for MAX_RANKS blocks of 2 elements
   and 4-element calls on up to 16 ranks. */
static float gIn[ELEMS * 4];
static float gOut[ELEMS * 4];
static size_t gTwos[MAX_RANKS];   /* 2 elements per rank */
static size_t gEvens[MAX_RANKS];  /* displacements 0, 2, 4, ... */
static size_t gOnes[MAX_RANKS];   /* 1 element per rank */
static size_t gSeq[MAX_RANKS];    /* displacements 0, 1, 2, ... */
static size_t gShifted[MAX_RANKS]; /* displacements 1, 2, 3, ... */
static size_t gOverlap[MAX_RANKS]; /* 0, 1, 4, 6, ...: blocks 0 and 1 overlap */

static void expectTrue(int ok, const char* what) {
  ++gChecks;
  if (!ok) {
    ++gFailures;
    printf("ERRORS FAIL rank %d: %s\n", gRank, what);
  }
}

/* `got` is `want`, and the last error of comm contains `fragment` (unless NULL). */
static void expectError(tuttiResult_t got, tuttiResult_t want, tuttiComm_t comm,
                        const char* fragment, const char* what) {
  const char* message = tuttiCommGetLastError(comm);
  ++gChecks;
  if (got != want || (fragment != NULL && strstr(message, fragment) == NULL)) {
    ++gFailures;
    printf("ERRORS FAIL rank %d: %s: got %s, expected %s with '%s'; last error: %s\n", gRank,
           what, tuttiGetErrorString(got), tuttiGetErrorString(want),
           fragment ? fragment : "", message);
  }
}

typedef tuttiResult_t (*CallFn)(tuttiComm_t comm);

/* ---- shared errors: every rank makes the call ------------------------------------------- */

static tuttiResult_t datatype12(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gOut, 4, (tuttiDataType_t)12, tuttiSum, c);
}
static tuttiResult_t datatypeMinus1(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gOut, 4, (tuttiDataType_t)-1, tuttiSum, c);
}
static tuttiResult_t op7(tuttiComm_t c) {
  return tuttiReduce(gIn, gOut, 4, tuttiFloat, (tuttiRedOp_t)7, 0, c);
}
static tuttiResult_t opMinus3(tuttiComm_t c) {
  return tuttiReduceScatter(gIn, gOut, 1, tuttiFloat, (tuttiRedOp_t)-3, c);
}
static tuttiResult_t opIntMin(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gOut, 4, tuttiFloat, (tuttiRedOp_t)INT_MIN, c);
}
static tuttiResult_t broadcastRootSize(tuttiComm_t c) {
  return tuttiBroadcast(gIn, gOut, 4, tuttiFloat, gSize, c);
}
static tuttiResult_t reduceRootMinus1(tuttiComm_t c) {
  return tuttiReduce(gIn, gOut, 4, tuttiFloat, tuttiSum, -1, c);
}
static tuttiResult_t gatherRoot99(tuttiComm_t c) {
  return tuttiGather(gIn, gOut, 4, tuttiFloat, 99, c);
}
static tuttiResult_t scatterRootMinus7(tuttiComm_t c) {
  return tuttiScatter(gIn, gOut, 1, tuttiFloat, -7, c);
}
static tuttiResult_t gathervRootSize(tuttiComm_t c) {
  return tuttiGatherv(gIn, 2, gOut, gTwos, gEvens, tuttiFloat, gSize, c);
}
static tuttiResult_t scattervRootMinus1(tuttiComm_t c) {
  return tuttiScatterv(gIn, gTwos, gEvens, gOut, 2, tuttiFloat, -1, c);
}
static tuttiResult_t countOverflows(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gOut, SIZE_MAX / 2, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t countOverLimit(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gOut, ((size_t)1 << 38) + 1, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t allgathervNullCounts(tuttiComm_t c) {
  return tuttiAllGatherv(gIn, 2, gOut, NULL, gEvens, tuttiFloat, c);
}
static tuttiResult_t allgathervNullDispls(tuttiComm_t c) {
  return tuttiAllGatherv(gIn, 2, gOut, gTwos, NULL, tuttiFloat, c);
}
static tuttiResult_t scattervNullCounts(tuttiComm_t c) {
  return tuttiScatterv(gIn, NULL, gEvens, gOut, 2, tuttiFloat, 0, c);
}
static tuttiResult_t reduceScattervNullCounts(tuttiComm_t c) {
  return tuttiReduceScatterv(gIn, gOut, NULL, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t allgathervOverlap(tuttiComm_t c) {
  return tuttiAllGatherv(gIn, 2, gOut, gTwos, gOverlap, tuttiFloat, c);
}
static tuttiResult_t sendDatatype(tuttiComm_t c) {
  return tuttiSend(gIn, 1, (tuttiDataType_t)77, (gRank + 1) % gSize, c);
}
/* The request is left NULL by a call refused at once. */
static tuttiResult_t asyncDatatype(tuttiComm_t c) {
  tuttiRequest_t request = (tuttiRequest_t)&gChecks;
  tuttiResult_t result = tuttiAllReduceAsync(gIn, gOut, 4, (tuttiDataType_t)10, tuttiSum, c,
                                             &request);
  expectTrue(request == NULL, "a refused async call leaves *request NULL");
  return result;
}

struct SharedCase {
  const char* name;
  CallFn call;
  const char* fragment;
  int minSize; /* 2 when the case needs a peer */
};

static const struct SharedCase kShared[] = {
    {"datatype 12", datatype12, "datatype 12 is not a tuttiDataType_t (0 to 9)", 1},
    {"datatype -1", datatypeMinus1, "datatype -1 is not a tuttiDataType_t", 1},
    {"op 7", op7, "op 7 is not a tuttiRedOp_t (0 to 4)", 1},
    {"op -3", opMinus3, "op -3 is not a tuttiRedOp_t", 1},
    {"op INT_MIN", opIntMin, "op -2147483648 is not a tuttiRedOp_t", 1},
    {"broadcast root = nranks", broadcastRootSize, "broadcast: root", 1},
    {"reduce root -1", reduceRootMinus1, "reduce: root -1 is not a rank", 1},
    {"gather root 99", gatherRoot99, "gather: root 99 is not a rank", 1},
    {"scatter root -7", scatterRootMinus7, "scatter: root -7 is not a rank", 1},
    {"gatherv root = nranks", gathervRootSize, "gatherv: root", 1},
    {"scatterv root -1", scattervRootMinus1, "scatterv: root -1 is not a rank", 1},
    {"count that overflows", countOverflows, "allreduce: count 9223372036854775807 is too large", 1},
    {"count over the buffer limit", countOverLimit, "(kMaxBufferBytes)", 1},
    {"allgatherv NULL recvcounts", allgathervNullCounts,
     "tuttiAllGatherv: invalid argument: allgatherv: recvcounts is empty or NULL", 1},
    {"allgatherv NULL displs", allgathervNullDispls, "allgatherv: displs is empty or NULL", 1},
    {"scatterv NULL sendcounts", scattervNullCounts, "scatterv: sendcounts is empty or NULL", 1},
    {"reducescatterv NULL recvcounts", reduceScattervNullCounts,
     "reducescatterv: recvcounts is empty or NULL", 1},
    {"allgatherv receive blocks that overlap", allgathervOverlap,
     "allgatherv: the receive buffer's blocks 0 (at 0, 2 elements) and 1 (at 1, 2 elements) "
     "overlap", 2},
    {"send datatype 77", sendDatatype, "tuttiSend: invalid argument: datatype 77", 2},
    {"async allreduce datatype 10", asyncDatatype, "tuttiAllReduceAsync: invalid argument", 1},
};

static void checkShared(tuttiComm_t world) {
  size_t i;
  char what[160];
  tuttiComm_t none = NULL;
  float mine = (float)(gRank + 1);
  float sum = 0.0f;
  for (i = 0; i < sizeof kShared / sizeof kShared[0]; ++i) {
    if (gSize < kShared[i].minSize) continue;
    snprintf(what, sizeof what, "shared: %s", kShared[i].name);
    expectError(kShared[i].call(world), tuttiInvalidArgument, world, kShared[i].fragment, what);
    /* refused everywhere before any message: the ranks are still in step */
    expectError(tuttiBarrier(world), tuttiSuccess, world, NULL, what);
  }
  /* One rank's bad color is every rank's error: the colors are exchanged first. */
  expectError(tuttiCommSplit(world, gRank == gSize - 1 ? -7 : 0, gRank, &none),
              tuttiInvalidArgument, world, "passed color -7", "split with color -7 on one rank");
  expectTrue(none == NULL, "a refused split leaves *newcomm NULL");
  expectError(tuttiAllReduce(&mine, &sum, 1, tuttiFloat, tuttiSum, world), tuttiSuccess, world,
              NULL, "allreduce after the shared errors");
  expectTrue(sum == (float)(gSize * (gSize + 1) / 2), "the world still sums right");
}

/* ---- errors only the last rank sees ------------------------------------------------------- */

static int erring(void) { return gSize - 1; }

static tuttiResult_t goodAllReduce(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gOut, 4, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t nullSend(tuttiComm_t c) {
  return tuttiAllReduce(NULL, gOut, 4, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t nullRecv(tuttiComm_t c) {
  return tuttiAllReduce(gIn, NULL, 4, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t partOverlap(tuttiComm_t c) {
  return tuttiAllReduce(gIn, gIn + 2, 4, tuttiFloat, tuttiSum, c);
}
static tuttiResult_t wraps(tuttiComm_t c) {
  return tuttiAllReduce((const void*)(uintptr_t)(UINTPTR_MAX - 7), gOut, 4, tuttiFloat,
                        tuttiSum, c);
}
static tuttiResult_t goodAllGather(tuttiComm_t c) {
  return tuttiAllGather(gIn, gOut, 4, tuttiFloat, c);
}
static tuttiResult_t allGatherOffByOne(tuttiComm_t c) {
  return tuttiAllGather(gOut + 1, gOut, 4, tuttiFloat, c);
}
static tuttiResult_t goodAllGatherv(tuttiComm_t c) {
  return tuttiAllGatherv(gIn, 2, gOut, gTwos, gEvens, tuttiFloat, c);
}
static tuttiResult_t allGathervOwnCount(tuttiComm_t c) {
  return tuttiAllGatherv(gIn, 3, gOut, gTwos, gEvens, tuttiFloat, c);
}
static tuttiResult_t goodAlltoallv(tuttiComm_t c) {
  return tuttiAlltoallv(gIn, gOnes, gSeq, gOut, gOnes, gSeq, tuttiFloat, c);
}
static tuttiResult_t alltoallvNullCounts(tuttiComm_t c) {
  return tuttiAlltoallv(gIn, NULL, gSeq, gOut, gOnes, gSeq, tuttiFloat, c);
}
static tuttiResult_t alltoallvInPlaceMismatch(tuttiComm_t c) {
  return tuttiAlltoallv(gIn, gOnes, gSeq, gIn, gOnes, gShifted, tuttiFloat, c);
}
static tuttiResult_t recvFromErring(tuttiComm_t c) {
  return tuttiRecv(gOut, 4, tuttiFloat, erring(), c);
}
static tuttiResult_t sendOutside(tuttiComm_t c) { return tuttiSend(gIn, 4, tuttiFloat, gSize, c); }
static tuttiResult_t sendNull(tuttiComm_t c) { return tuttiSend(NULL, 4, tuttiFloat, 0, c); }
static tuttiResult_t goodAllReduceAsync(tuttiComm_t c) {
  tuttiRequest_t request = NULL;
  tuttiResult_t started = tuttiAllReduceAsync(gIn, gOut, 4, tuttiFloat, tuttiSum, c, &request);
  tuttiResult_t waited;
  if (started != tuttiSuccess) return started;
  waited = tuttiWait(request);
  expectTrue(tuttiRequestFree(request) == tuttiSuccess, "tuttiRequestFree");
  return waited;
}
static tuttiResult_t nullSendAsync(tuttiComm_t c) {
  tuttiRequest_t request = (tuttiRequest_t)&gChecks;
  tuttiResult_t result = tuttiAllReduceAsync(NULL, gOut, 4, tuttiFloat, tuttiSum, c, &request);
  expectTrue(request == NULL, "a refused async call leaves *request NULL");
  return result;
}

struct LocalCase {
  const char* name;
  CallFn bad;  /* the last rank's call */
  CallFn good; /* the others' */
  const char* fragment;
  int peersWait; /* the good call needs the last rank, so it must fail itself */
  int minSize;
};

static const struct LocalCase kLocal[] = {
    {"NULL sendbuff", nullSend, goodAllReduce,
     "tuttiAllReduce: invalid argument: allreduce: the send buffer (sendbuf) is null", 1, 1},
    {"NULL recvbuff", nullRecv, goodAllReduce, "the receive buffer (recvbuf) is null", 1, 1},
    {"buffers that partly overlap", partOverlap, goodAllReduce,
     "overlap without being in place; in place needs sendbuf == recvbuf + 0 elements", 1, 1},
    {"a buffer that wraps around", wraps, goodAllReduce, "wrap around the address space", 1, 1},
    {"allgather input one element into the output", allGatherOffByOne, goodAllGather,
     "allgather: the send buffer", 1, 1},
    {"allgatherv own count", allGathervOwnCount, goodAllGatherv,
     "sendcount 3 differs from this rank's entry recvcounts", 1, 1},
    {"alltoallv NULL sendcounts on one rank", alltoallvNullCounts, goodAlltoallv,
     "alltoallv: sendcounts is empty or NULL", 1, 1},
    {"alltoallv in place with other receive displacements", alltoallvInPlaceMismatch,
     goodAlltoallv, "alltoallv in place needs the same counts and displacements", 1, 1},
    {"send to peer nranks", sendOutside, recvFromErring, "send: peer", 1, 1},
    {"send from NULL", sendNull, recvFromErring, "send: the send buffer (sendbuf) is null", 1, 2},
    {"async allreduce from NULL", nullSendAsync, goodAllReduceAsync,
     "tuttiAllReduceAsync: invalid argument: allreduce: the send buffer", 1, 1},
};

static void checkLocal(tuttiComm_t world) {
  size_t i;
  char what[160];
  char blame[64];
  snprintf(blame, sizeof blame, "rank %d passed an invalid argument", erring());
  for (i = 0; i < sizeof kLocal / sizeof kLocal[0]; ++i) {
    const struct LocalCase* c = &kLocal[i];
    tuttiComm_t copy = NULL;
    tuttiResult_t got;
    if (gSize < c->minSize) continue;
    expectError(tuttiCommSplit(world, 0, gRank, &copy), tuttiSuccess, world, NULL, "split a copy");
    if (copy == NULL) return;
    expectError(tuttiSetTimeout(copy, 120), tuttiSuccess, copy, NULL, "tuttiSetTimeout(120)");
    got = gRank == erring() ? c->bad(copy) : c->good(copy);
    if (gRank == erring()) {
      snprintf(what, sizeof what, "only here: %s: the erring rank", c->name);
      expectError(got, tuttiInvalidArgument, copy, c->fragment, what);
    } else if (c->peersWait || got != tuttiSuccess) {
      snprintf(what, sizeof what, "only here: %s: a peer", c->name);
      expectError(got, tuttiAborted, copy, blame, what);
    }
    snprintf(what, sizeof what, "only here: %s: the next call", c->name);
    expectError(tuttiBarrier(copy), tuttiAborted, copy, blame, what);
    expectError(tuttiCommDestroy(copy), tuttiSuccess, world, NULL, "destroy the failed copy");
    expectError(tuttiBarrier(world), tuttiSuccess, world, NULL, "the world is untouched");
  }
}

int main(void) {
  tuttiComm_t world = NULL;
  int i;
  tuttiResult_t init = tuttiCommInitFromEnv(&world);
  if (init != tuttiSuccess || world == NULL) {
    printf("ERRORS FAIL: tuttiCommInitFromEnv: %s\n", tuttiGetErrorString(init));
    return 1;
  }
  expectError(tuttiCommCount(world, &gSize), tuttiSuccess, world, NULL, "tuttiCommCount");
  expectError(tuttiCommUserRank(world, &gRank), tuttiSuccess, world, NULL, "tuttiCommUserRank");
  if (gSize < 1 || gSize > MAX_RANKS || gRank < 0 || gRank >= gSize) {
    printf("ERRORS FAIL: rank %d of %d (at most %d ranks)\n", gRank, gSize, MAX_RANKS);
    return 1;
  }
  for (i = 0; i < MAX_RANKS; ++i) {
    gTwos[i] = 2;
    gEvens[i] = 2 * (size_t)i;
    gOnes[i] = 1;
    gSeq[i] = (size_t)i;
    gShifted[i] = (size_t)i + 1;
    gOverlap[i] = i == 1 ? 1 : 2 * (size_t)i;
  }
  checkShared(world);
  checkLocal(world);
  expectError(tuttiCommDestroy(world), tuttiSuccess, NULL, NULL, "tuttiCommDestroy");
  if (gFailures != 0) {
    printf("ERRORS FAILED rank %d: %d of %d checks\n", gRank, gFailures, gChecks);
    return 1;
  }
  printf("ERRORS OK rank %d of %d (%d checks)\n", gRank, gSize, gChecks);
  return 0;
}
