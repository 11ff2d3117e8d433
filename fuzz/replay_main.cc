// The main() of a fuzz target in builds without libFuzzer (gcc release, asan, tsan): it runs
// LLVMFuzzerTestOneInput once on each file named on the command line, or in each directory
// named there, so that ctest replays the seed corpus and every crash regression with the
// target's own checks, under whatever sanitizer the build has. A failed check aborts, as it
// would under libFuzzer.
//
//   fuzz_store_protocol fuzz/corpus/store_protocol [more files or directories...]

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// The files `path` names: itself, or a directory's regular files in name order (so that a
// failure is reproducible by position). False when the path does not exist.
bool collect(const fs::path& path, std::vector<fs::path>* files) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    files->push_back(path);
    return true;
  }
  if (!fs::is_directory(path, ec)) return false;
  std::vector<fs::path> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  files->insert(files->end(), found.begin(), found.end());
  return !ec;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], &files)) {
      std::fprintf(stderr, "replay: %s is neither a file nor a readable directory\n", argv[i]);
      return 2;
    }
  }
  // An empty corpus would make the test pass while checking nothing.
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 2;
  }
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot open %s\n", file.c_str());
      return 2;
    }
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
