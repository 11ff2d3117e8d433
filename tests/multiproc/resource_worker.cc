// The rank program of the resource-release tests (build/tests/tutti_resource_worker),
// started by tutti-run. Modes:
//   cycles <n> <abort-every> <shm>
//                             creates the world communicator from the environment n times
//                             (over TUTTI_TRANSPORT), runs a barrier on each and destroys it;
//                             every <abort-every>-th cycle (0: never) rank (cycle % size)
//                             aborts instead of entering the barrier, and the others' barrier
//                             must fail with kAborted naming it. After two warm-up cycles it takes this
//                             process's open descriptors, threads and shared-memory mappings
//                             as the baseline, and at the end (and every 100 cycles) none of
//                             them may exceed it; the shared memory must be memfds, never
//                             files in /dev/shm (<shm> 1: segments must be mapped while a
//                             communicator of several ranks lives).
//   killed <victim> <dir>     creates the world over shared memory, shows its segments are
//                             memfds, and <victim> kills itself (SIGKILL) after a barrier;
//                             the others' next barrier must fail naming it. The victim dies
//                             only once every other rank has left the first barrier (each
//                             creates <dir>/passed.<rank>): a rank that sees the death while
//                             still in the first barrier may rightly fail that one instead.
// Output lines meant for the tests start with "RESULT", "SEGMENTS" or "SURVIVOR".

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "base/strings.h"
#include "tutti/communicator.h"

namespace {

using namespace tutti;

// What this process holds, as /proc shows it.
struct Held {
  int fds = 0;              // open descriptors
  int threads = 0;          // threads (tasks)
  int memfdFds = 0;         // descriptors of tutti's shared-memory segments
  int memfdMappings = 0;    // mappings of those segments
  int devShmMappings = 0;   // mappings of files in /dev/shm (tutti must have none)

  std::string toString() const {
    return strFormat("fds %d threads %d segment-fds %d segment-mappings %d dev-shm-mappings %d",
                     fds, threads, memfdFds, memfdMappings, devShmMappings);
  }
};

// Entries of a /proc directory; `targetPrefix` non-empty counts only the links that point
// at a path starting with it. The directory's own descriptor is not counted.
int countEntries(const char* path, const std::string& targetPrefix) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || std::atoi(name.c_str()) == dirfd(dir)) continue;
    if (targetPrefix.empty()) {
      ++n;
      continue;
    }
    char target[256] = {};
    const std::string link = std::string(path) + "/" + name;
    const ssize_t len = readlink(link.c_str(), target, sizeof target - 1);
    if (len > 0 && std::string(target, static_cast<std::size_t>(len)).rfind(targetPrefix, 0) == 0) ++n;
  }
  closedir(dir);
  return n;
}

Held held() {
  Held h;
  h.fds = countEntries("/proc/self/fd", "");
  h.threads = countEntries("/proc/self/task", "");
  h.memfdFds = countEntries("/proc/self/fd", "/memfd:tutti-shm");
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:tutti-shm") != std::string::npos) ++h.memfdMappings;
    if (line.find("/dev/shm/") != std::string::npos) ++h.devShmMappings;
  }
  return h;
}

// What the process holds once a thread that was joined has also left /proc/self/task. The
// kernel wakes pthread_join (clearing the thread's id) before it removes the exiting task,
// so a joined thread can still be listed for a moment: a count above `base` is read again,
// for up to a few seconds, before it counts as a thread left running. Descriptors and
// mappings are released before destroy returns and get no such grace.
Held settled(const Held& base) {
  Held now = held();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (now.threads > base.threads && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    now = held();
  }
  return now;
}

// "" when `now` holds no more than `base` and nothing of a communicator is left.
std::string grew(const Held& base, const Held& now) {
  if (now.fds > base.fds || now.threads > base.threads || now.memfdFds != 0 ||
      now.memfdMappings != 0 || now.devShmMappings != 0)
    return "baseline " + base.toString() + ", now " + now.toString();
  return "";
}

// One cycle: create, barrier, maybe abort, destroy. "" or what went wrong. The first
// cycle records what a live communicator holds in *during, and this rank.
std::string cycle(int index, int abortEvery, bool wantShm, Held* during, int* rank) {
  auto comm = Communicator::fromEnv();
  if (!comm.ok()) return "create: " + comm.status().toString();
  if (during != nullptr) *during = held();
  *rank = comm->rank();
  if (wantShm && during != nullptr && comm->size() > 1 && during->memfdMappings == 0)
    return "no shared-memory segment is mapped while the communicator lives";
  if (abortEvery > 0 && index % abortEvery == abortEvery - 1) {
    // The aborting rank never enters the barrier, so the others can only leave it by
    // learning of the abort.
    const int aborter = index % comm->size();
    if (comm->rank() == aborter) {
      comm->abort();
      return "";
    }
    Status s = comm->barrier();
    if (s.code() != ErrorCode::kAborted || s.peerRank() != aborter)
      return strFormat("barrier while rank %d aborts: %s", aborter, s.toString().c_str());
    return "";
  }
  Status s = comm->barrier();
  return s.ok() ? "" : "barrier: " + s.toString();  // destroyed on return
}

int runCycles(int cycles, int abortEvery, bool wantShm) {
  constexpr int kWarmUp = 2;  // lazily made process state (the log, the config) settles
  Held base;
  Held during;
  int rank = -1;
  for (int i = 0; i < cycles; ++i) {
    std::string failure = cycle(i, abortEvery, wantShm, i == 0 ? &during : nullptr, &rank);
    if (!failure.empty()) {
      std::printf("RESULT FAILED cycle %d: %s\n", i, failure.c_str());
      return 1;
    }
    if (i + 1 == kWarmUp) base = held();
    if (i + 1 > kWarmUp && ((i + 1) % 100 == 0 || i + 1 == cycles)) {
      failure = grew(base, settled(base));
      if (!failure.empty()) {
        std::printf("RESULT FAILED after %d cycles: %s\n", i + 1, failure.c_str());
        return 1;
      }
    }
  }
  if (during.devShmMappings != 0) {
    std::printf("RESULT FAILED: %d mappings of /dev/shm files\n", during.devShmMappings);
    return 1;
  }
  std::printf("RESULT OK rank %d: %d cycles (abort every %d); while alive: %s; after: %s\n", rank,
              cycles, abortEvery, during.toString().c_str(), held().toString().c_str());
  return 0;
}

// Waits (bounded) until every rank but `self` has created <dir>/passed.<rank>.
bool othersPassed(const std::string& dir, int size, int self) {
  for (int tries = 0; tries < 60000; ++tries) {
    int present = 0;
    for (int r = 0; r < size; ++r)
      present += r != self && access((dir + "/passed." + std::to_string(r)).c_str(), F_OK) == 0;
    if (present == size - 1) return true;
    usleep(1000);
  }
  return false;
}

int runKilled(int victim, const std::string& dir) {
  auto comm = Communicator::fromEnv();
  if (!comm.ok()) {
    std::printf("RESULT FAILED create: %s\n", comm.status().toString().c_str());
    return 1;
  }
  const Held h = held();
  std::printf("SEGMENTS rank %d: %s\n", comm->rank(), h.toString().c_str());
  Status s = comm->barrier();
  if (!s.ok()) {
    std::printf("RESULT FAILED barrier: %s\n", s.toString().c_str());
    return 1;
  }
  if (comm->rank() == victim) {
    if (!othersPassed(dir, comm->size(), victim)) {
      std::printf("RESULT FAILED: the other ranks did not report leaving the first barrier\n");
      return 1;
    }
    std::fflush(stdout);
    raise(SIGKILL);
  }
  std::ofstream(dir + "/passed." + std::to_string(comm->rank())) << "passed\n";
  CallOptions options;
  options.timeout = std::chrono::seconds(60);
  s = comm->barrier(options);
  std::printf("SURVIVOR rank %d: code=%s peer=%d\n", comm->rank(), errorCodeName(s.code()),
              s.peerRank());
  return s.code() == ErrorCode::kPeerFailure && s.peerRank() == victim ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "cycles" && argc > 4)
    return runCycles(std::atoi(argv[2]), std::atoi(argv[3]), std::string(argv[4]) == "1");
  if (mode == "killed" && argc > 3) return runKilled(std::atoi(argv[2]), argv[3]);
  std::fprintf(stderr, "usage: %s cycles <n> <abort-every> <shm> | killed <victim> <dir>\n",
               argv[0]);
  return 2;
}
