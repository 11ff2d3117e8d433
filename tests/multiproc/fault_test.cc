// Fault injection through the real tutti-run (issue 5): a rank killed at a random moment in
// any collective over any transport must become an error naming it on every surviving rank,
// and the job must end well within the deadline; random bytes sent to every port a running
// job listens on must leave it finishing with 0 wrong elements; bytes that do not parse,
// written into an established connection between two ranks, must fail the job on every
// rank, naming the rank they seem to come from.
//
// The victim and the moment are random (the seed is in every failure message); what is
// asserted holds at any moment. scripts/fault_inject.sh runs hundreds of such trials.

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/net.h"
#include "base/strings.h"
#include "common/launch.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 4;

// tutti-run --verbose names each rank's pid; the ranks' pids by rank.
std::vector<pid_t> rankPids(const std::string& err) {
  std::vector<pid_t> pids(kRanks, -1);
  std::regex line("tutti-run: rank ([0-9]+): pid ([0-9]+)");
  for (std::sregex_iterator it(err.begin(), err.end(), line), end; it != end; ++it) {
    const int rank = std::stoi((*it)[1].str());
    if (rank >= 0 && rank < kRanks) pids[static_cast<std::size_t>(rank)] = std::stoi((*it)[2].str());
  }
  return pids;
}

bool allKnown(const std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (p <= 0) return false;
  return true;
}

// A tutti-bench job under `tutti-run --verbose`, once it runs: every rank's pid is known
// and rank 0 has printed the table's header.
struct RunningJob {
  std::unique_ptr<Subprocess> process;
  std::vector<pid_t> pids;  // by rank
};

// Starts tutti-bench `benchArgs` on kRanks ranks over `transport` and waits (up to 120 s)
// until it runs; a failure says what went wrong, with the job's output so far.
::testing::AssertionResult startRunning(const std::string& transport,
                                        std::vector<std::string> launcherArgs,
                                        const std::vector<std::string>& benchArgs,
                                        RunningJob& job) {
  launcherArgs.insert(launcherArgs.begin(), "--verbose");
  std::vector<std::string> program{binPath("tutti-bench")};
  program.insert(program.end(), benchArgs.begin(), benchArgs.end());
  auto started = Subprocess::start(launch(kRanks, transport, launcherArgs, program));
  if (!started.ok()) return ::testing::AssertionFailure() << started.status().toString();
  job.process = std::move(*started);
  const bool running = job.process->readUntil(
      [&](const std::string& out, const std::string& err) {
        job.pids = rankPids(err);
        return allKnown(job.pids) && out.find("#wrong") != std::string::npos;
      },
      Deadline::afterSeconds(120));
  if (!running)
    return ::testing::AssertionFailure() << "the job did not start running\n"
                                         << job.process->out() << job.process->err();
  return ::testing::AssertionSuccess();
}

std::string collectiveName(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& p) {
  return std::get<0>(p.param) + "_" + std::get<1>(p.param);
}

class KillAnyRank : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(KillAnyRank, EverySurvivorNamesTheVictimAndTheJobEndsInTime) {
  const auto& [collective, transport] = GetParam();
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  const int victim = static_cast<int>(rng() % kRanks);
  const int delayMs = static_cast<int>(rng() % 400);
  const std::string trial = strFormat("seed %u: victim rank %d after %d ms", seed, victim, delayMs);

  RunningJob job;
  ASSERT_TRUE(startRunning(transport, {"--grace", "30", "-x", "TUTTI_TIMEOUT=20"},
                           // Over several streams, messages large enough to be striped.
                           {collective, "-b", transport == "tcp4" ? "2M" : "64K", "-e",
                            transport == "tcp4" ? "2M" : "64K", "-n", "10000000", "-w", "1",
                            "-c", "0"},
                           job))
      << trial;
  Subprocess& p = *job.process;
  const std::vector<pid_t>& pids = job.pids;
  // The random moment: any point of the run is as good as another for what is asserted.
  std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pids[static_cast<std::size_t>(victim)], SIGKILL), 0) << trial;
  ProcessResult r = p.wait(Deadline::afterSeconds(120));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killedAt).count();
  ASSERT_FALSE(r.timedOut) << trial << "\n" << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0) << trial;
  // TUTTI_TIMEOUT=20: a death must be found by detection, not by waiting out deadlines.
  EXPECT_LT(seconds, 40.0) << trial;
  const std::string all = r.out + r.err;
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == victim) continue;
    // "[r] tutti-bench: rank r: peer failure: <collective> ... rank <victim> ..."
    std::regex named(strFormat("\\[%d\\] tutti-bench: rank %d: (peer failure|aborted): .*\\brank %d\\b.*",
                               rank, rank, victim));
    bool found = false;
    for (const std::string& l : splitLines(all)) found = found || std::regex_match(l, named);
    EXPECT_TRUE(found) << trial << ": rank " << rank << " did not name rank " << victim << "\n"
                       << all;
  }
  EXPECT_NE(r.err.find(strFormat("first failure: rank %d", victim)), std::string::npos)
      << trial << "\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, KillAnyRank,
    ::testing::Combine(::testing::Values("allreduce", "allgather", "reducescatter", "broadcast",
                                         "reduce", "gather", "scatter", "alltoall", "sendrecv",
                                         "barrier"),
                       ::testing::ValuesIn(kTransports)),
    collectiveName);
// Several TCP connections per pair, a 2 MiB all-reduce striped across them.
INSTANTIATE_TEST_SUITE_P(Streams, KillAnyRank,
                         ::testing::Combine(::testing::Values("allreduce"),
                                            ::testing::Values("tcp4")),
                         collectiveName);

// Process `pid`'s sockets: descriptor by socket inode, from /proc.
std::map<std::string, int> socketFds(pid_t pid) {
  std::map<std::string, int> fds;
  const std::string fdDir = strFormat("/proc/%d/fd", static_cast<int>(pid));
  if (DIR* dir = ::opendir(fdDir.c_str())) {
    while (dirent* e = ::readdir(dir)) {
      char target[128];
      const std::string link = fdDir + "/" + e->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      std::string t(target);
      if (t.rfind("socket:[", 0) == 0) fds[t.substr(8, t.size() - 9)] = std::atoi(e->d_name);
    }
    ::closedir(dir);
  }
  return fds;
}

// One TCP socket of a process: its descriptor there, ports and state (/proc/net/tcp codes:
// 01 established, 0A listening).
struct TcpSocket {
  int fd;
  int localPort;
  int remotePort;
  std::string state;
};

std::vector<TcpSocket> tcpSockets(pid_t pid) {
  const std::map<std::string, int> fds = socketFds(pid);
  std::vector<TcpSocket> sockets;
  auto port = [](const std::string& address) {
    return std::stoi(address.substr(address.find(':') + 1), nullptr, 16);
  };
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      auto it = fds.find(inode);
      if (it != fds.end()) sockets.push_back({it->second, port(local), port(remote), state});
    }
  }
  return sockets;
}

// The TCP ports process `pid` listens on (IPv4 and IPv6).
std::set<int> listeningPorts(pid_t pid) {
  std::set<int> ports;
  for (const TcpSocket& s : tcpSockets(pid))
    if (s.state == "0A") ports.insert(s.localPort);
  return ports;
}

class GarbageToListeners : public ::testing::TestWithParam<std::string> {};

TEST_P(GarbageToListeners, JobFinishesWithZeroWrong) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  RunningJob job;
  ASSERT_TRUE(startRunning(GetParam(), {"--timeout", "200"},
                           {"allreduce", "-b", "1K", "-e", "4M", "-f", "4", "-n", "50", "-w", "2",
                            "-c", "2"},
                           job));
  Subprocess& p = *job.process;
  std::set<int> ports = listeningPorts(p.pid());
  for (pid_t pid : job.pids)
    for (int port : listeningPorts(pid)) ports.insert(port);
  ASSERT_FALSE(ports.empty()) << "the job listens nowhere? (tutti-run serves the store)";
  int sent = 0;
  for (int port : ports) {
    for (int c = 0; c < 8; ++c) {
      auto fd = connectTcp(HostPort{"127.0.0.1", static_cast<std::uint16_t>(port)},
                           Deadline::afterSeconds(5));
      if (!fd.ok()) continue;  // a listener may have closed meanwhile: nothing to attack
      std::vector<std::uint8_t> junk(1 + rng() % 8192);
      for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
      (void)writeFull(fd->get(), junk.data(), junk.size(), Deadline::afterSeconds(2));
      ++sent;
    }
  }
  ProcessResult r = p.wait(Deadline::afterSeconds(200));
  ASSERT_FALSE(r.timedOut) << "seed " << seed << "\n" << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << "seed " << seed << ", " << sent << " connections to "
                             << ports.size() << " ports\n" << r.out << r.err;
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out;
}

// Bytes that do not parse, written into an established connection from one rank to another
// while the job runs 8-byte all-reduces (one small frame at a time, so the bytes land between
// two frames): the receiving rank must fail with a protocol error naming the sender, the
// abort protocol must carry it to every rank, and the job must end within the deadline.
// The test takes a copy of the sender's socket with pidfd_getfd (as its parent; root or
// ptrace rights), the way a stray process or a bug would reach the stream.
TEST(GarbageInAPeerStream, EveryRankNamesTheSenderAndTheJobEnds) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  const int sender = static_cast<int>(rng() % kRanks);
  RunningJob job;
  ASSERT_TRUE(startRunning("tcp", {"--grace", "30", "-x", "TUTTI_TIMEOUT=20"},
                           {"allreduce", "-b", "8", "-e", "8", "-n", "100000000", "-w", "1", "-c",
                            "0"},
                           job));
  Subprocess& p = *job.process;
  const std::vector<pid_t>& pids = job.pids;
  // The sender's connections to other ranks: established, and not to the store (tutti-run
  // serves it, so its ports are tutti-run's listening ports).
  const std::set<int> storePorts = listeningPorts(p.pid());
  int target = -1;
  for (const TcpSocket& s : tcpSockets(pids[static_cast<std::size_t>(sender)])) {
    if (s.state == "01" && storePorts.count(s.remotePort) == 0) target = s.fd;
  }
  ASSERT_GE(target, 0) << "seed " << seed << ": rank " << sender << " has no peer connection";
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pids[static_cast<std::size_t>(sender)], 0));
  ASSERT_GE(pidfd, 0) << std::strerror(errno);
  const int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target, 0));
  ::close(pidfd);
  ASSERT_GE(copy, 0) << "pidfd_getfd: " << std::strerror(errno);
  // A whole frame header's worth of a byte no valid header starts with.
  std::vector<std::uint8_t> junk(64, 0xA5);
  const auto injectedAt = std::chrono::steady_clock::now();
  const Status wrote = writeFull(copy, junk.data(), junk.size(), Deadline::afterSeconds(5));
  ::close(copy);
  ASSERT_TRUE(wrote.ok()) << wrote.toString();
  ProcessResult r = p.wait(Deadline::afterSeconds(120));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - injectedAt).count();
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0);
  EXPECT_LT(seconds, 40.0) << "found by a timeout rather than by the receiver";
  const std::string all = r.out + r.err;
  for (int rank = 0; rank < kRanks; ++rank) {
    // "[r] tutti-bench: rank r: <error>: ... bad frame from rank <sender>: ..."
    std::regex named(strFormat("\\[%d\\] tutti-bench: rank %d: .*bad frame from rank %d\\b.*",
                               rank, rank, sender));
    bool found = false;
    for (const std::string& l : splitLines(all)) found = found || std::regex_match(l, named);
    EXPECT_TRUE(found) << "seed " << seed << ": rank " << rank
                       << " did not report the bad frame from rank " << sender << "\n" << all;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, GarbageToListeners, ::testing::ValuesIn(kTransports),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tutti::test
