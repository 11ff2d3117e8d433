/* Test tuner plugins (tests/unit/tuning/plugin_test.cc), one MODULE library per
 * TEST_PLUGIN_KIND, written in C against include/tutti/tuner_plugin.h as a site's would be:
 *   1 good: the last candidate (slowest), by index, with its segment
 *   2 by_name: "ring" by name with a 128 KiB segment
 *   3 no_symbol: exports no plugin object
 *   4 init_fails: init returns an error
 *   5 unknown: names an algorithm that does not exist
 *   6 not_applicable: names hier_rs_ag on one host
 *   7 bad_segment: a segment of 1 byte
 *   8 choice_fails: getChoice returns an error
 *   9 bad_index: candidate 999
 *  10 old_version: version 0
 * Every plugin counts its getChoice calls (testPluginCalls), so the test can see the cache. */
#include <stddef.h>
#include <string.h>

#include "tutti/tuner_plugin.h"

static int calls = 0;
static int state = 42;

__attribute__((visibility("default"))) int testPluginCalls(void) { return calls; }

static int init(const tutti_tuner_context_v1* context, void** out) {
  if (TEST_PLUGIN_KIND == 4) return 7;
  if (context == NULL || context->ranks < 1) return 1;
  *out = &state;
  return 0;
}

static int getChoice(void* s, const tutti_tuner_shape_v1* shape,
                     const tutti_tuner_candidate_v1* candidates, int numCandidates,
                     tutti_tuner_choice_v1* choice) {
  ++calls;
  if (s != &state || shape == NULL || numCandidates < 1 || candidates == NULL) return 2;
  switch (TEST_PLUGIN_KIND) {
    case 1:
      choice->index = numCandidates - 1;
      return 0;
    case 2:
      choice->index = -1;
      choice->algorithm = "ring";
      choice->segmentBytes = 128 << 10;
      return 0;
    case 5:
      choice->index = -1;
      choice->algorithm = "warp_drive";
      return 0;
    case 6:
      choice->index = -1;
      choice->algorithm = "hier_rs_ag";
      return 0;
    case 7:
      choice->index = 0;
      choice->segmentBytes = 1;
      return 0;
    case 8:
      return 5;
    case 9:
      choice->index = 999;
      return 0;
    default:
      choice->index = 0;
      return 0;
  }
}

static void destroy(void* s) { (void)s; }

#if TEST_PLUGIN_KIND != 3
__attribute__((visibility("default"))) const tutti_tuner_plugin_v1 tuttiTunerPlugin_v1 = {
    TEST_PLUGIN_KIND == 10 ? 0 : TUTTI_TUNER_PLUGIN_VERSION, "test", init, getChoice, destroy};
#endif
