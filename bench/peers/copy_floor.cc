// The machine's floor for a mid-size all-gather and all-to-all on 2 ranks from heap buffers:
// two processes, each round the copies such a call cannot avoid and nothing else. Each rank
// copies its own block into its output (memcpy) and moves one block across with the kernel's
// single copy, either reading the peer's block (process_vm_readv, "pull", what Open MPI and
// MPICH do) or writing its own into the peer's output (process_vm_writev, "push"). The
// ranks start each round together (a spin barrier on shared memory) and a round's time is
// the slower rank's. No library, no protocol: what any implementation pays for the bytes.
//
//   copy_floor [block_kib=512] [rounds=2000]
//
// All-gather: input one block, output two. All-to-all: input and output two blocks each (so
// a core touches twice the block more, which is where a 2 MiB L2 stops holding the round).
// Prints one line, medians over the rounds, in microseconds:
//   FLOOR copy block=512K allgather_pull_us=.. allgather_push_us=.. alltoall_pull_us=..
//   alltoall_push_us=..

#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct alignas(64) Shared {
  std::atomic<long> arrived[2];
  std::atomic<long> pid[2];
  std::atomic<unsigned long> input[2];
  std::atomic<unsigned long> output[2];
  std::atomic<long> elapsedNs[2];
};

void barrier(Shared* s, int rank, long generation) {
  s->arrived[rank].store(generation, std::memory_order_release);
  while (s->arrived[1 - rank].load(std::memory_order_acquire) < generation)
    __builtin_ia32_pause();
}

bool kernelCopy(bool push, pid_t peer, void* local, unsigned long remote, std::size_t bytes) {
  iovec mine{local, bytes};
  iovec theirs{reinterpret_cast<void*>(remote), bytes};
  const ssize_t n = push ? process_vm_writev(peer, &mine, 1, &theirs, 1, 0)
                         : process_vm_readv(peer, &mine, 1, &theirs, 1, 0);
  return n == static_cast<ssize_t>(bytes);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t block = static_cast<std::size_t>(argc > 1 ? std::atol(argv[1]) : 512) << 10;
  const long rounds = argc > 2 ? std::atol(argv[2]) : 2000;
  if (block == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: copy_floor [block_kib>0] [rounds>0]\n");
    return 2;
  }
  auto* s = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (s == MAP_FAILED) return 1;
  new (s) Shared{};
  const pid_t child = fork();
  if (child < 0) return 1;
  const int rank = child == 0 ? 1 : 0;
  // Two blocks each way: the all-gather uses the first input block, the all-to-all both.
  char* input = static_cast<char*>(std::aligned_alloc(4096, 2 * block));
  char* output = static_cast<char*>(std::aligned_alloc(4096, 2 * block));
  std::memset(input, 1 + rank, 2 * block);
  std::memset(output, 0, 2 * block);
  s->pid[rank].store(getpid());
  s->input[rank].store(reinterpret_cast<unsigned long>(input));
  s->output[rank].store(reinterpret_cast<unsigned long>(output));
  long generation = 0;
  barrier(s, rank, ++generation);
  const pid_t peer = static_cast<pid_t>(s->pid[1 - rank].load());
  const unsigned long peerInput = s->input[1 - rank].load();
  const unsigned long peerOutput = s->output[1 - rank].load();

  const char* names[4] = {"allgather_pull", "allgather_push", "alltoall_pull", "alltoall_push"};
  double medians[4] = {0, 0, 0, 0};
  for (int mode = 0; mode < 4; ++mode) {
    const bool push = mode % 2 == 1;
    const bool alltoall = mode >= 2;
    // All-gather: the own block is input[0], it goes to output[rank] here and there.
    // All-to-all: input[p] is for rank p; output[p] came from rank p.
    const char* own = alltoall ? input + rank * block : input;
    const char* mineForPeer = alltoall ? input + (1 - rank) * block : input;
    const unsigned long theirsForMe = alltoall ? peerInput + rank * block : peerInput;
    std::vector<double> times;
    for (long i = 0; i < rounds + rounds / 10; ++i) {
      barrier(s, rank, ++generation);
      const auto start = std::chrono::steady_clock::now();
      std::memcpy(output + rank * block, own, block);
      const bool ok = push ? kernelCopy(true, peer, const_cast<char*>(mineForPeer),
                                        peerOutput + rank * block, block)
                           : kernelCopy(false, peer, output + (1 - rank) * block, theirsForMe,
                                        block);
      if (!ok) {
        std::perror(push ? "process_vm_writev" : "process_vm_readv");
        return 1;
      }
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      s->elapsedNs[rank].store(ns);
      barrier(s, rank, ++generation);
      // Both ranks' copies into a rank's output are done: the round took the slower's time.
      if (i >= rounds / 10)
        times.push_back(
            static_cast<double>(std::max(s->elapsedNs[0].load(), s->elapsedNs[1].load())) /
            1000.0);
    }
    std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2),
                     times.end());
    medians[mode] = times[times.size() / 2];
  }
  if (rank == 1) return 0;
  waitpid(child, nullptr, 0);
  std::printf("FLOOR copy block=%zuK", block >> 10);
  for (int mode = 0; mode < 4; ++mode) std::printf(" %s_us=%.1f", names[mode], medians[mode]);
  std::printf("\n");
  return 0;
}
