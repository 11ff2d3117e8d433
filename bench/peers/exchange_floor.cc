// The machine's floor for a small all-reduce on 2 ranks sharing memory: two processes, each
// round one 8-byte value each way through one cache line per direction (a value and a
// sequence number; two lines per direction, alternating, so that a writer never overwrites
// what its peer has not read), polled with pause, summed. No library, no checks, no
// deadlines: what any implementation's 8-byte all-reduce on 2 ranks pays for the data
// itself; everything above it is software.
//
//   exchange_floor [rounds=2000000] [repeats=5]
//
// Prints one line, the best of the repeats, in nanoseconds per round:
//   FLOOR exchange_8B_ns=..

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

struct alignas(64) Slot {
  std::atomic<std::uint64_t> seq;
  double value;
};

// Slots [2 * rank + (round & 1)]: each rank writes its own two, reads its peer's.
double run(Slot* slots, int rank, long rounds, long offset) {
  double sum = 0;
  for (long i = 1; i <= rounds; ++i) {
    const auto seq = static_cast<std::uint64_t>(offset + i);
    Slot& mine = slots[2 * rank + (seq & 1)];
    mine.value = static_cast<double>(i + rank);
    mine.seq.store(seq, std::memory_order_release);
    Slot& theirs = slots[2 * (1 - rank) + (seq & 1)];
    while (theirs.seq.load(std::memory_order_acquire) < seq) __builtin_ia32_pause();
    sum += theirs.value + mine.value;
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 2000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (rounds < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: exchange_floor [rounds >= 1] [repeats >= 1]\n");
    return 2;
  }
  void* memory = mmap(nullptr, 4 * sizeof(Slot), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  auto* slots = new (memory) Slot[4]{};
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  const int rank = child == 0 ? 1 : 0;
  double best = 1e30, sink = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    sink += run(slots, rank, rounds, static_cast<long>(r) * rounds);
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / static_cast<double>(rounds));
  }
  if (child == 0) return sink == -1 ? 1 : 0;  // keeps the sums alive
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("FLOOR exchange_8B_ns=%.1f\n", best);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
