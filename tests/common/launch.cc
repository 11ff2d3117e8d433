#include "common/launch.h"

#include "common/test_paths.h"

namespace tutti::test {

const std::vector<std::string> kTransports = {"shm", "tcp", "hybrid"};

std::vector<std::string> launch(int n, const std::string& transport,
                                const std::vector<std::string>& tuttiRunOptions,
                                const std::vector<std::string>& program) {
  std::vector<std::string> argv = {binPath("tutti-run"), "-n", std::to_string(n)};
  argv.insert(argv.end(), tuttiRunOptions.begin(), tuttiRunOptions.end());
  argv.push_back("-x");
  // "tcp4": TCP with four connections per pair (TUTTI_TCP_STREAMS), large messages striped.
  argv.push_back("TUTTI_TRANSPORT=" + std::string(transport == "hybrid" ? "auto"
                                                  : transport == "tcp4" ? "tcp"
                                                                        : transport));
  if (transport == "tcp4") {
    argv.push_back("-x");
    argv.push_back("TUTTI_TCP_STREAMS=4");
  }
  if (transport == "hybrid") {
    for (const char* arg :
         {"/bin/sh", "-c", "TUTTI_SHM_HOST=pair$((TUTTI_RANK / 2)) exec \"$0\" \"$@\""})
      argv.push_back(arg);
  }
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

}  // namespace tutti::test
