/* The tuner plugin interface: a shared library that chooses tutti's algorithm and segment
 * for each new call shape, in place of the built-in tuner's choice (TUTTI_TUNER_PLUGIN
 * names it; tutti dlopen()s it at communicator creation). A C ABI, versioned: the library
 * exports one object, `tuttiTunerPlugin_v1`, of type tutti_tuner_plugin_v1.
 *
 * tutti calls init() once per communicator with the topology summary and the model's cost
 * table, getChoice() once per new call shape with the candidates the built-in tuner priced
 * (fastest first), and destroy() when the communicator ends. Every callback returns 0 on
 * success; anything else is an error.
 *
 * THE PLUGIN MUST BE DETERMINISTIC: every rank of a communicator asks it separately, and
 * every rank must get the same answer for the same shape or the ranks run different
 * algorithms and never meet. Decide from the arguments only (no timing, no randomness, no
 * per-process state such as the pid or the rank).
 *
 * A plugin that fails to load, lacks the symbol or a callback, has another version, fails
 * init, or returns an error, an unknown algorithm, one that does not apply to the call, or
 * a segment outside [element size, 1 GiB] is refused with a warning naming the problem, and
 * the built-in choice stands. A refused init disables the plugin for the communicator; a
 * refused choice only for that shape. */
#ifndef TUTTI_TUNER_PLUGIN_H_
#define TUTTI_TUNER_PLUGIN_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_TUNER_PLUGIN_VERSION 1
/* Path classes of the cost table, nearest first (tuning/model.h's PathClass). */
#define TUTTI_TUNER_PATH_SAME_L3 0
#define TUTTI_TUNER_PATH_SAME_SOCKET 1
#define TUTTI_TUNER_PATH_SAME_HOST 2
#define TUTTI_TUNER_PATH_NETWORK 3
#define TUTTI_TUNER_NUM_PATHS 4
#define TUTTI_TUNER_NUM_DTYPES 16 /* room for more; tutti has 10 today, the rest 0 */

/* The communicator as the tuner sees it, and the model's parameters (seconds, bytes). */
typedef struct {
  int ranks;
  int hosts;
  int ranksPerHost;       /* the largest host's */
  int coresPerHost;
  const char* transport;  /* "shm", "tcp" or "hybrid" */
  double alpha[TUTTI_TUNER_NUM_PATHS];     /* latency per message */
  double beta[TUTTI_TUNER_NUM_PATHS];      /* seconds per byte */
  double overhead[TUTTI_TUNER_NUM_PATHS];  /* CPU time per message at each end */
  double gamma[TUTTI_TUNER_NUM_DTYPES];    /* reduction, seconds per byte, by tutti's DataType */
  double copyBeta;            /* local copy, seconds per byte */
  double hostMemoryBandwidth; /* bytes/s, 0: no limit */
  double nicBandwidth;        /* bytes/s, 0: the network path's beta alone */
} tutti_tuner_context_v1;

/* One call shape. */
typedef struct {
  const char* collective; /* "allreduce", "broadcast", ... (tutti's collectiveName) */
  uint64_t count;         /* elements per rank block, as the collective defines count */
  const char* dtype;      /* "float32", ... */
  uint64_t bytes;         /* count x the element size */
  int elementSize;
  int ranks;
  int hosts;
  int sharedBuffers; /* every rank's buffers come from memAlloc (the same on every rank) */
} tutti_tuner_shape_v1;

/* One priced candidate. */
typedef struct {
  const char* algorithm;  /* registry name: "ring", "hier_rs_ag", ... */
  uint64_t segmentBytes;  /* the pipelining segment it was priced with */
  int segmentMatters;     /* 0: the algorithm's schedule does not depend on it */
  double seconds;         /* predicted time of the call */
} tutti_tuner_candidate_v1;

/* The plugin's answer: a candidate by index, or (index < 0) an algorithm by name, with a
 * segment in bytes (0: the candidate's, or the communicator's default). */
typedef struct {
  int index;
  const char* algorithm;  /* used when index < 0; must stay valid until destroy() */
  uint64_t segmentBytes;
} tutti_tuner_choice_v1;

typedef struct {
  int version; /* TUTTI_TUNER_PLUGIN_VERSION */
  const char* name;
  int (*init)(const tutti_tuner_context_v1* context, void** state);
  int (*getChoice)(void* state, const tutti_tuner_shape_v1* shape,
                   const tutti_tuner_candidate_v1* candidates, int numCandidates,
                   tutti_tuner_choice_v1* choice);
  void (*destroy)(void* state);
} tutti_tuner_plugin_v1;

/* The one symbol a plugin exports. */
#define TUTTI_TUNER_PLUGIN_SYMBOL "tuttiTunerPlugin_v1"

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_TUNER_PLUGIN_H_ */
