// The machine's memory-bandwidth limit, measured in the same run as the collectives: a
// large collective on one machine is a memory-bound copy (and reduction), so these figures
// bound what any library can reach here.
//
//   membw [MiB=256] [repeats=5]
//
// Prints one line, GB/s (1e9 bytes per second), best of the repeats:
//   MEMBW size_mib=256 memcpy_1t=.. memcpy_2t=.. read_1t=.. read_2t=..
// memcpy counts the bytes copied (the DRAM traffic is twice that); read sums 64-bit words.
// With 2 threads each copies or reads half of the buffer.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace {

// Keeps the sums alive so the compiler cannot drop the read loop.
volatile std::uint64_t gSink = 0;

std::uint64_t sumWords(const std::uint64_t* words, std::size_t n) {
  // Four independent sums: the loop vectorises and is bound by loads, not by one add chain.
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  for (; i < n; ++i) a += words[i];
  return a + b + c + d;
}

// Runs `work(thread, threads)` on `threads` threads at once; returns the best wall time in
// seconds over `repeats` rounds.
double bestSeconds(int threads, int repeats, const std::function<void(int, int)>& work) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t, threads);
    work(0, threads);
    for (std::thread& thread : pool) thread.join();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (mib == 0 || repeats < 1) {
    std::fprintf(stderr, "usage: %s [MiB=256] [repeats=5]\n", argv[0]);
    return 2;
  }
  const std::size_t bytes = mib << 20;
  auto* src = static_cast<unsigned char*>(std::aligned_alloc(4096, bytes));
  auto* dst = static_cast<unsigned char*>(std::aligned_alloc(4096, bytes));
  if (src == nullptr || dst == nullptr) {
    std::fprintf(stderr, "membw: cannot allocate 2 x %zu MiB\n", mib);
    return 1;
  }
  // Touch every page first: the probe measures copies, not page faults.
  std::memset(src, 1, bytes);
  std::memset(dst, 2, bytes);

  auto slice = [bytes](int thread, int threads, std::size_t* offset, std::size_t* length) {
    const std::size_t part = bytes / static_cast<std::size_t>(threads) / 64 * 64;
    *offset = part * static_cast<std::size_t>(thread);
    *length = thread == threads - 1 ? bytes - *offset : part;
  };
  auto copy = [&](int thread, int threads) {
    std::size_t offset = 0, length = 0;
    slice(thread, threads, &offset, &length);
    std::memcpy(dst + offset, src + offset, length);
  };
  auto read = [&](int thread, int threads) {
    std::size_t offset = 0, length = 0;
    slice(thread, threads, &offset, &length);
    gSink = gSink + sumWords(reinterpret_cast<const std::uint64_t*>(src + offset), length / 8);
  };

  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("MEMBW size_mib=%zu memcpy_1t=%.1f memcpy_2t=%.1f read_1t=%.1f read_2t=%.1f\n",
              mib, gb / bestSeconds(1, repeats, copy), gb / bestSeconds(2, repeats, copy),
              gb / bestSeconds(1, repeats, read), gb / bestSeconds(2, repeats, read));
  std::free(src);
  std::free(dst);
  return 0;
}
