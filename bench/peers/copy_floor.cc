// The machine's floor for a mid-size all-gather and all-to-all on 2 ranks from heap buffers:
// two processes, each round the copies such a call cannot avoid and nothing else. Each rank
// copies its own block into its output (memcpy) and moves one block across, one of three
// ways:
//  - the kernel's single copy, either reading the peer's block (process_vm_readv, "pull",
//    what Open MPI and MPICH do) or writing its own into the peer's output
//    (process_vm_writev, "push");
//  - "ring": through shared memory, as tutti's rings and the no-CMA peers do: the block is
//    copied into a ring of 16 slots of 256 KiB in the peer's direction, piece by piece, each
//    piece published with a counter, and copied out by the peer; the own block is copied
//    between the two (tutti's order: send, own copy, receive);
//  - "ring_fused" (all-gather): the same, but each piece is copied into the ring and into
//    the own block in one pass over the input (each line loaded once, stored twice), which
//    then is read once.
// The ranks start each round together (a spin barrier on shared memory) and a round's time
// is the slower rank's. No library, no protocol: what any implementation pays for the bytes.
//
//   copy_floor [block_kib=512] [rounds=2000] [stores=cached|streaming|auto]
//
// stores: how the copies into an output are written (the own block, and the pieces copied out
// of a ring). cached (the default) is memcpy; streaming writes past the caches (SSE2 streaming
// stores), which is what an implementation does where the outputs outgrow the caches (tutti:
// where a host's outputs pass 8 MiB); auto is streaming from 4 MiB blocks (8 MiB of output a
// rank). The kernel's copy itself is the kernel's either way.
//
// All-gather: input one block, output two. All-to-all: input and output two blocks each (so
// a core touches twice the block more, which is where a 2 MiB L2 stops holding the round).
// Prints one line, medians over the rounds, in microseconds:
//   FLOOR copy block=512K stores=cached allgather_pull_us=.. allgather_push_us=.. alltoall_pull_us=..
//   alltoall_push_us=.. allgather_ring_us=.. allgather_ring_fused_us=.. alltoall_ring_us=..

#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

constexpr std::size_t kSlots = 16;
constexpr std::size_t kPiece = 256 << 10;

bool gStreaming = false;  // copies into outputs bypass the caches

// A copy into an output: memcpy, or streaming stores where gStreaming (16-byte aligned
// destination and whole 64-byte lines in the middle; the edges go through memcpy).
void copyOut(char* to, const char* from, std::size_t n) {
#if defined(__x86_64__)
  if (gStreaming && n >= 256) {
    const std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(to) % 64) % 64;
    std::memcpy(to, from, head);
    std::size_t i = head;
    for (; i + 64 <= n; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 48), d);
    }
    _mm_sfence();
    std::memcpy(to + i, from + i, n - i);
    return;
  }
#endif
  std::memcpy(to, from, n);
}

// A piece into the ring (cached stores: its reader is next) and into the own block (as
// copyOut writes). Streaming, in one pass over the input (each line loaded once; on the
// AMD EPYC VM 0.75 of two passes for 32 MiB blocks); cached, two memcpys (one pass of
// SSE2 stores took 1.7 times as long for 512 KiB blocks).
#if defined(__x86_64__)
// The same one pass in 32-byte lanes, where the CPU has AVX2 (as tutti's kernels).
__attribute__((target("avx2"))) std::size_t copyTwoAvx2(char* ring, char* to,
                                                        const char* from, std::size_t n) {
  std::size_t i = 0;
  if (reinterpret_cast<std::uintptr_t>(to) % 32 != 0) return 0;
  for (; i + 128 <= n; i += 128) {
    __m256i v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i + 32 * k));
    for (int k = 0; k < 4; ++k)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ring + i + 32 * k), v[k]);
    for (int k = 0; k < 4; ++k)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(to + i + 32 * k), v[k]);
  }
  _mm_sfence();
  return i;
}
#endif

void copyTwo(char* ring, char* to, const char* from, std::size_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (gStreaming && avx2 && n >= 256) {
    const std::size_t i = copyTwoAvx2(ring, to, from, n);
    if (i > 0) {
      std::memcpy(ring + i, from + i, n - i);
      std::memcpy(to + i, from + i, n - i);
      return;
    }
  }
  if (gStreaming && n >= 256) {
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      __m128i v[4];
      for (int k = 0; k < 4; ++k)
        v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 16 * k));
      for (int k = 0; k < 4; ++k)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ring + i + 16 * k), v[k]);
      for (int k = 0; k < 4; ++k) {
        if (reinterpret_cast<std::uintptr_t>(to + i) % 16 == 0)
          _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 16 * k), v[k]);
        else
          _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i + 16 * k), v[k]);
      }
    }
    _mm_sfence();
    std::memcpy(ring + i, from + i, n - i);
    std::memcpy(to + i, from + i, n - i);
    return;
  }
#endif
  std::memcpy(ring, from, n);
  copyOut(to, from, n);
}

struct alignas(64) Shared {
  std::atomic<long> arrived[2];
  std::atomic<long> pid[2];
  std::atomic<unsigned long> input[2];
  std::atomic<unsigned long> output[2];
  std::atomic<long> elapsedNs[2];
  // Ring r carries rank r's pieces to the other rank: published counts pieces written,
  // freed pieces copied out; both count from the start of the run.
  alignas(64) std::atomic<long> published[2];
  alignas(64) std::atomic<long> freed[2];
};

// One rank's share of a ring exchange: `block` bytes from `send` go out through ring
// `rank`, the peer's arrive through ring 1 - rank into `receive`; `own` (if any) is copied
// into `ownOut` between sending and receiving, or, fused, piece by piece with the sending.
void ringExchange(Shared* s, char* rings, int rank, const char* send, char* receive,
                  const char* own, char* ownOut, std::size_t block, bool fused, long* base) {
  const int peer = 1 - rank;
  char* mine = rings + static_cast<std::size_t>(rank) * kSlots * kPiece;
  const char* theirs = rings + static_cast<std::size_t>(peer) * kSlots * kPiece;
  const long pieces = static_cast<long>((block + kPiece - 1) / kPiece);
  auto bytesOf = [&](long p) {
    return std::min(kPiece, block - static_cast<std::size_t>(p) * kPiece);
  };
  long sent = 0, received = 0;
  bool ownDone = own == nullptr;
  while (received < pieces || sent < pieces) {
    // Send what the ring has room for.
    while (sent < pieces && *base + sent - s->freed[rank].load(std::memory_order_acquire) <
                                static_cast<long>(kSlots)) {
      const std::size_t at = static_cast<std::size_t>(sent) * kPiece;
      char* slot = mine + static_cast<std::size_t>((*base + sent) % kSlots) * kPiece;
      if (fused && own != nullptr)
        copyTwo(slot, ownOut + at, own + at, bytesOf(sent));
      else
        std::memcpy(slot, send + at, bytesOf(sent));
      ++sent;
      s->published[rank].store(*base + sent, std::memory_order_release);
    }
    if (!ownDone && (fused || sent == pieces)) {
      if (!fused) copyOut(ownOut, own, block);
      ownDone = true;
    }
    // Receive what has arrived.
    while (received < pieces &&
           s->published[peer].load(std::memory_order_acquire) > *base + received) {
      copyOut(receive + static_cast<std::size_t>(received) * kPiece,
                  theirs + static_cast<std::size_t>((*base + received) % kSlots) * kPiece,
                  bytesOf(received));
      ++received;
      s->freed[peer].store(*base + received, std::memory_order_release);
    }
    if (received < pieces || sent < pieces) __builtin_ia32_pause();
  }
  *base += pieces;
}

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
  const char* stores = argc > 3 ? argv[3] : "cached";
  if (block == 0 || rounds <= 0 ||
      (std::strcmp(stores, "cached") != 0 && std::strcmp(stores, "streaming") != 0 &&
       std::strcmp(stores, "auto") != 0)) {
    std::fprintf(stderr, "usage: copy_floor [block_kib>0] [rounds>0] [cached|streaming|auto]\n");
    return 2;
  }
  gStreaming = std::strcmp(stores, "streaming") == 0 ||
               (std::strcmp(stores, "auto") == 0 && block >= (std::size_t{4} << 20));
  auto* s = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (s == MAP_FAILED) return 1;
  new (s) Shared{};
  auto* rings = static_cast<char*>(mmap(nullptr, 2 * kSlots * kPiece, PROT_READ | PROT_WRITE,
                                        MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
  if (rings == MAP_FAILED) return 1;
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

  constexpr int kModes = 7;
  const char* names[kModes] = {"allgather_pull",  "allgather_push",       "alltoall_pull",
                               "alltoall_push",   "allgather_ring",       "allgather_ring_fused",
                               "alltoall_ring"};
  double medians[kModes] = {};
  long ringBase = 0;  // pieces each ring has carried so far
  for (int mode = 0; mode < kModes; ++mode) {
    const bool ring = mode >= 4;
    const bool push = !ring && mode % 2 == 1;
    const bool alltoall = mode == 2 || mode == 3 || mode == 6;
    // All-gather: the own block is input[0], it goes to output[rank] here and there.
    // All-to-all: input[p] is for rank p; output[p] came from rank p.
    const char* own = alltoall ? input + rank * block : input;
    const char* mineForPeer = alltoall ? input + (1 - rank) * block : input;
    const unsigned long theirsForMe = alltoall ? peerInput + rank * block : peerInput;
    std::vector<double> times;
    for (long i = 0; i < rounds + rounds / 10; ++i) {
      barrier(s, rank, ++generation);
      const auto start = std::chrono::steady_clock::now();
      bool ok = true;
      if (ring) {
        ringExchange(s, rings, rank, mineForPeer, output + (1 - rank) * block, own,
                     output + rank * block, block, mode == 5, &ringBase);
      } else {
        copyOut(output + rank * block, own, block);
        ok = push ? kernelCopy(true, peer, const_cast<char*>(mineForPeer),
                               peerOutput + rank * block, block)
                  : kernelCopy(false, peer, output + (1 - rank) * block, theirsForMe, block);
      }
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
  std::printf("FLOOR copy block=%zuK stores=%s", block >> 10, gStreaming ? "streaming" : "cached");
  for (int mode = 0; mode < kModes; ++mode)
    std::printf(" %s_us=%.1f", names[mode], medians[mode]);
  std::printf("\n");
  return 0;
}
