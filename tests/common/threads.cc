#include "common/threads.h"

#include <thread>

namespace tutti::test {

std::vector<std::string> runRanks(int size,
                                  const std::function<std::string(int, Communicator&)>& fn,
                                  const CommOptions& options) {
  auto store = makeMemoryStore();
  std::vector<std::string> failures(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto comm = Communicator::create(store, r, size, options);
      if (!comm.ok()) {
        failures[static_cast<std::size_t>(r)] = "create: " + comm.status().toString();
        return;
      }
      failures[static_cast<std::size_t>(r)] = fn(r, *comm);
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

std::string joinFailures(const std::vector<std::string>& failures) {
  std::string out;
  for (std::size_t r = 0; r < failures.size(); ++r) {
    if (!failures[r].empty()) out += "rank " + std::to_string(r) + ": " + failures[r] + "\n";
  }
  return out;
}

}  // namespace tutti::test
