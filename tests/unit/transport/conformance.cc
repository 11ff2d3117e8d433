#include "unit/transport/conformance.h"

#include <memory>
#include <thread>

namespace tutti::test {

Status waitFor(Transport& t, TransferRequest& req) {
  Deadline deadline = Deadline::afterSeconds(30);
  while (!req.done()) {
    auto seen = t.progressSignal().snapshot();
    if (req.done()) break;
    if (!t.waitForProgress(seen, deadline, 1000) && deadline.expired())
      return Status(ErrorCode::kTimeout, "test wait timed out");
  }
  return req.status();
}

Status waitForFailure(Transport& t) {
  Deadline deadline = Deadline::afterSeconds(30);
  while (t.health().ok()) {
    auto seen = t.progressSignal().snapshot();
    if (!t.health().ok()) break;
    if (!t.waitForProgress(seen, Deadline::earliest(deadline, Deadline::afterSeconds(1)), 1000) &&
        deadline.expired())
      return Status(ErrorCode::kTimeout, "test wait for a failure timed out");
  }
  return t.health();
}

std::vector<std::uint8_t> pattern(std::size_t n, int seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 31 + seed * 7 + (i >> 8));
  return v;
}

namespace {

std::string exchangeAsRank(Transport& t, int r, int size, const std::vector<std::size_t>& sizes) {
  std::string failures;
  std::vector<std::vector<std::uint8_t>> out, in;
  std::vector<std::unique_ptr<TransferRequest>> reqs;
  for (int p = 0; p < size; ++p) {
    if (p == r) continue;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      out.push_back(pattern(sizes[k], r * 100 + p * 10 + static_cast<int>(k)));
      reqs.push_back(std::make_unique<TransferRequest>());
      t.link(p).postSend(reqs.back().get(), 1000 + k, out.back().data(), sizes[k]);
    }
  }
  std::vector<std::pair<int, std::size_t>> expected;
  for (int p = 0; p < size; ++p) {
    if (p == r) continue;
    for (std::size_t k = sizes.size(); k-- > 0;) {
      in.emplace_back(sizes[k]);
      reqs.push_back(std::make_unique<TransferRequest>());
      t.link(p).postRecv(reqs.back().get(), 1000 + k, in.back().data(), sizes[k]);
      expected.emplace_back(p, k);
    }
  }
  for (auto& req : reqs) {
    Status s = waitFor(t, *req);
    if (!s.ok()) failures += s.toString() + "\n";
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto [p, k] = expected[i];
    if (in[i] != pattern(sizes[k], p * 100 + r * 10 + static_cast<int>(k)))
      failures += "wrong data from " + std::to_string(p) + " size " + std::to_string(sizes[k]) + "\n";
  }
  return failures;
}

}  // namespace

std::string exchangeAllPairs(const std::vector<Transport*>& ranks,
                             const std::vector<std::size_t>& sizes, bool driven) {
  const int size = static_cast<int>(ranks.size());
  std::vector<std::string> failures(ranks.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      Transport& t = *ranks[static_cast<std::size_t>(r)];
      if (driven) t.setDriving(true);
      failures[static_cast<std::size_t>(r)] = exchangeAsRank(t, r, size, sizes);
      if (driven) t.setDriving(false);
    });
  }
  for (auto& th : threads) th.join();
  std::string all;
  for (int r = 0; r < size; ++r) {
    if (!failures[static_cast<std::size_t>(r)].empty())
      all += "rank " + std::to_string(r) + ": " + failures[static_cast<std::size_t>(r)];
  }
  return all;
}

}  // namespace tutti::test
