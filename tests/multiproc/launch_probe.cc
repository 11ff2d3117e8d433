// tutti_launch_probe: a rank program for the tests of tutti-run. It prints what the launcher
// told it, then does what its arguments ask, so that tests can make any rank fail in any way.
//
//   probe line (always first, on stdout):
//     probe rank=R size=N local_rank=L local_size=M store=HOST:PORT job=ID pid=P spin_us=S
//           secret_len=B key_id=K
//   (B: bytes of TUTTI_SECRET; K: 8 hex digits of the key derived from it, "none" without
//   one, so tests can compare secrets without anything printing them)
//   --lines K          K lines "line i of rank R" on stdout and "err line i of rank R" on stderr
//   --long BYTES       one line of BYTES 'x' characters on stdout
//   --store            add("arrived", 1) on the store, wait until all N have arrived, then
//                      print "store ok arrived=N"
//   --partial TEXT     TEXT on stdout with no newline (the launcher must flush it)
//   --ignore SIG       ignore signal SIG (a number; repeatable)
//   --exit R:CODE      rank R (or "all") exits with CODE
//   --signal R:SIG     rank R (or "all") kills itself with signal SIG
//   --block R          rank R (or "all") prints "ready" and waits in pause() (300 s at most)
// Actions apply in the order listed above. Without any, the probe exits 0.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/net.h"
#include "base/strings.h"
#include "bootstrap/auth.h"
#include "bootstrap/tcp_store.h"

namespace {

struct ProbeArgs {
  int lines = 0;
  long longLine = 0;
  bool store = false;
  std::string partial;
  std::vector<int> ignored;
  std::string exitSpec;
  std::string signalSpec;
  std::string blockSpec;
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr, "tutti_launch_probe: bad arguments: %s\n", what);
  std::exit(64);
}

ProbeArgs parseArgs(int argc, char** argv) {
  ProbeArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--store") {
      args.store = true;
      continue;
    }
    if (i + 1 >= argc) usage(argv[i]);
    const std::string value = argv[++i];
    if (flag == "--lines") {
      args.lines = std::atoi(value.c_str());
    } else if (flag == "--long") {
      args.longLine = std::atol(value.c_str());
    } else if (flag == "--partial") {
      args.partial = value;
    } else if (flag == "--ignore") {
      args.ignored.push_back(std::atoi(value.c_str()));
    } else if (flag == "--exit") {
      args.exitSpec = value;
    } else if (flag == "--signal") {
      args.signalSpec = value;
    } else if (flag == "--block") {
      args.blockSpec = value;
    } else {
      usage(flag.c_str());
    }
  }
  return args;
}

// "R" or "all" matches this rank; "R:V" also yields V.
bool rankMatches(const std::string& spec, int rank, int* valueOut) {
  if (spec.empty()) return false;
  const auto colon = spec.find(':');
  const std::string who = spec.substr(0, colon);
  if (colon != std::string::npos && valueOut != nullptr) {
    *valueOut = std::atoi(spec.c_str() + colon + 1);
  }
  return who == "all" || who == std::to_string(rank);
}

// Every rank adds itself to "arrived"; the last to arrive releases the others.
int storeRoundTrip(const tutti::Config& config, int size) {
  auto address = tutti::parseHostPort(config.storeAddr);
  if (!address.ok()) {
    std::fprintf(stderr, "store address: %s\n", address.status().toString().c_str());
    return 1;
  }
  const tutti::Deadline deadline = tutti::Deadline::afterSeconds(60);
  // The secret tutti-run put in the environment: the store refuses anyone without it.
  auto key = tutti::auth::jobKey(config);
  if (!key.ok()) {
    std::fprintf(stderr, "job key: %s\n", key.status().toString().c_str());
    return 1;
  }
  auto client = tutti::TcpStoreClient::connect(*address, *key, deadline);
  if (!client.ok()) {
    std::fprintf(stderr, "store connect: %s\n", client.status().toString().c_str());
    return 1;
  }
  auto arrived = (*client)->add("arrived", 1);
  if (!arrived.ok()) {
    std::fprintf(stderr, "store add: %s\n", arrived.status().toString().c_str());
    return 1;
  }
  if (*arrived == size) {
    const tutti::Status s = (*client)->set("all_arrived", {1});
    if (!s.ok()) {
      std::fprintf(stderr, "store set: %s\n", s.toString().c_str());
      return 1;
    }
  }
  tutti::Status s = (*client)->wait({"all_arrived"}, deadline);
  auto total = s.ok() ? (*client)->add("arrived", 0) : tutti::Result<std::int64_t>(s);
  if (!total.ok()) {
    std::fprintf(stderr, "store wait: %s\n", total.status().toString().c_str());
    return 1;
  }
  std::printf("store ok arrived=%lld\n", static_cast<long long>(*total));
  return 0;
}

void printLines(int count, int rank) {
  for (int i = 0; i < count; ++i) {
    std::printf("line %d of rank %d\n", i, rank);
    std::fprintf(stderr, "err line %d of rank %d\n", i, rank);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const ProbeArgs args = parseArgs(argc, argv);
  const auto& configResult = tutti::Config::fromProcessEnvironment();
  if (!configResult.ok()) {
    std::fprintf(stderr, "config: %s\n", configResult.status().toString().c_str());
    return 1;
  }
  const tutti::Config& config = configResult.value();
  const int rank = std::atoi(config.rank.c_str());
  const int size = std::atoi(config.worldSize.c_str());
  std::string keyId = "none";
  if (auto key = tutti::auth::Key::fromSecret(config.secret); key.ok())
    keyId = tutti::strFormat("%02x%02x%02x%02x", key->bytes()[0], key->bytes()[1],
                             key->bytes()[2], key->bytes()[3]);
  std::printf("probe rank=%s size=%s local_rank=%s local_size=%s store=%s job=%s pid=%d "
              "spin_us=%lld secret_len=%zu key_id=%s\n",
              config.rank.c_str(), config.worldSize.c_str(), config.localRank.c_str(),
              config.localWorldSize.c_str(), config.storeAddr.c_str(), config.jobId.c_str(),
              static_cast<int>(::getpid()), static_cast<long long>(config.spinUs),
              config.secret.size(), keyId.c_str());
  std::fflush(stdout);

  printLines(args.lines, rank);
  if (args.longLine > 0) {
    std::string line(static_cast<std::size_t>(args.longLine), 'x');
    std::printf("%s\n", line.c_str());
  }
  if (args.store && storeRoundTrip(config, size) != 0) return 1;
  if (!args.partial.empty()) std::printf("%s", args.partial.c_str());
  std::fflush(stdout);
  for (int sig : args.ignored) ::signal(sig, SIG_IGN);

  int value = 0;
  if (rankMatches(args.exitSpec, rank, &value)) return value;
  if (rankMatches(args.signalSpec, rank, &value)) {
    ::signal(value, SIG_DFL);
    ::raise(value);
    return 99;  // only reached for a signal whose default action is to ignore it
  }
  if (rankMatches(args.blockSpec, rank, nullptr)) {
    std::printf("ready\n");
    std::fflush(stdout);
    // The launcher under test is expected to stop us; the alarm bounds our life if it does
    // not, so that a broken launcher can never leave a probe behind for long.
    ::alarm(300);
    while (true) ::pause();
  }
  return 0;
}
