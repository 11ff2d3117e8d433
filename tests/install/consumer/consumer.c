/* An installed tutti's C API, from a separate project: every rank all-reduces rank + i and
   checks every element against the sum it computes itself. */
#include <stdio.h>

#include <tutti/tutti.h>

int main(void) {
  tuttiComm_t comm;
  int rank = -1, size = 0;
  float v[256];
  if (tuttiCommInitFromEnv(&comm) != tuttiSuccess) {
    fprintf(stderr, "tuttiCommInitFromEnv failed\n");
    return 1;
  }
  if (tuttiCommUserRank(comm, &rank) != tuttiSuccess || tuttiCommCount(comm, &size) != tuttiSuccess)
    return 1;
  for (int i = 0; i < 256; ++i) v[i] = (float)(rank + i);
  if (tuttiAllReduce(v, v, 256, tuttiFloat, tuttiSum, comm) != tuttiSuccess) {
    fprintf(stderr, "tuttiAllReduce: %s\n", tuttiCommGetLastError(comm));
    return 1;
  }
  for (int i = 0; i < 256; ++i) {
    const float want = (float)(size * (size - 1) / 2 + i * size);
    if (v[i] != want) {
      fprintf(stderr, "rank %d: element %d is %g, want %g\n", rank, i, v[i], want);
      return 1;
    }
  }
  if (tuttiCommDestroy(comm) != tuttiSuccess) return 1;
  printf("consumer_c rank %d of %d: ok\n", rank, size);
  return 0;
}
