// The authenticated bootstrap in real processes: tutti-run's ranks authenticate on their
// own; a rank with another secret is refused by the store and named; a job completes a
// collective with correct results on every rank while the test floods tutti-run's store
// with idle connections, noise and a wrong secret; ranks listen on TUTTI_BIND_ADDR; under
// a foreign launcher, TUTTI_SECRET is honoured and a mismatch is refused. Every run has an
// outer bound far above its need.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "base/net.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/tcp_store.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// A FIFO the ranks wait on before they join (collective_worker --wait-fifo); writing a
// byte per rank lets them go. Opened read-write, so writing never blocks and the bytes
// stay until read.
class GoFifo {
 public:
  GoFifo() : path_("/tmp/tutti-auth-go." + std::to_string(::getpid())) {
    ::unlink(path_.c_str());
    EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0);
    fd_.reset(::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    EXPECT_TRUE(fd_.valid());
  }
  ~GoFifo() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  void go(int ranks) {
    std::string bytes(static_cast<std::size_t>(ranks), 'g');
    EXPECT_EQ(::write(fd_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(ranks));
  }

 private:
  std::string path_;
  UniqueFd fd_;
};

TEST(AuthProcs, RankWithAnotherSecretIsRefusedByTheStoreAndNamed) {
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", "3", "--timeout", "100",
                                testProgramPath("tutti_collective_worker"), "--wrong-secret", "1",
                                "check"},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0);
  const std::regex refused(
      "\\[1\\] RESULT FAILED to create the communicator: protocol error: connecting to the "
      "store at (127\\.0\\.0\\.1:[0-9]+): refused this process's authentication: the two do "
      "not hold the same job secret");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, refused)) << r.out << r.err;
  const std::string store = match[1];
  // tutti-run's store said whom it refused, and tutti-run names rank 1 as the failure.
  EXPECT_TRUE(has(r.err, "store server on " + store + ": refused connection from 127.0.0.1:"))
      << r.err;
  EXPECT_TRUE(has(r.err, "its proof did not verify")) << r.err;
  EXPECT_TRUE(has(r.err, "rank 1")) << r.err;
}

TEST(AuthProcs, JobCompletesWhileItsStoreIsFlooded) {
  const int n = 4;
  GoFifo fifo;
  auto job = Subprocess::start({binPath("tutti-run"), "-n", std::to_string(n), "--verbose",
                                "--timeout", "200", "-x", "TUTTI_TRANSPORT=tcp",
                                testProgramPath("tutti_collective_worker"), "--wait-fifo",
                                fifo.path(), "check"});
  ASSERT_TRUE(job.ok()) << job.status().toString();
  // tutti-run names its store before it starts the ranks, which wait for our go-ahead.
  const std::regex storeLine("store at (127\\.0\\.0\\.1:[0-9]+); starting");
  ASSERT_TRUE((*job)->readUntil(
      [&](const std::string&, const std::string& err) {
        return std::regex_search(err, storeLine);
      },
      Deadline::afterSeconds(60)))
      << (*job)->err();
  std::smatch match;
  const std::string err = (*job)->err();
  ASSERT_TRUE(std::regex_search(err, match, storeLine));
  auto store = parseHostPort(match[1]);
  ASSERT_TRUE(store.ok());

  // The flood: three times the handshake slots of silent connections, held open; noise;
  // a store request without authentication; and a client with the wrong secret.
  std::vector<UniqueFd> flood;
  for (std::size_t i = 0; i < 3 * auth::kMaxPendingHandshakes; ++i) {
    auto fd = connectTcp(*store, Deadline::afterSeconds(30));
    ASSERT_TRUE(fd.ok()) << fd.status().toString();
    flood.push_back(std::move(fd).value());
  }
  for (int i = 0; i < 3; ++i) {
    auto fd = connectTcp(*store, Deadline::afterSeconds(30));
    ASSERT_TRUE(fd.ok());
    // A store SET header declaring a 4 GiB payload, then plain noise.
    const char header[16] = {'T', 'S', 'T', 'R', 1, 1, 0, 0, 0, 0, 0, 1, -1, -1, -1, -1};
    std::string noise = i == 0 ? std::string(header, sizeof(header))
                               : std::string(200, static_cast<char>(i * 91));
    (void)writeFull(fd->get(), noise.data(), noise.size(), Deadline::afterSeconds(5));
    flood.push_back(std::move(fd).value());
  }
  auto wrongKey = auth::Key::fromSecret("not-the-secret-of-this-job-0123456789");
  ASSERT_TRUE(wrongKey.ok());
  auto intruder = TcpStoreClient::connect(*store, *wrongKey, Deadline::afterSeconds(60));
  ASSERT_FALSE(intruder.ok());
  EXPECT_EQ(intruder.status().message(),
            "connecting to the store at " + store->toString() +
                ": refused this process's authentication: the two do not hold the same job "
                "secret");

  fifo.go(n);
  ProcessResult r = (*job)->wait(Deadline::afterSeconds(kOuterBoundSeconds));
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT FAILED"), 0) << r.out;
  EXPECT_TRUE(has(r.err, "store server on " + store->toString() + ": refused connection from"))
      << r.err;
}

TEST(AuthProcs, PeersAreAcceptedOnTheBindAddressOnly) {
  // TUTTI_BIND_ADDR is a loopback address of its own (Linux answers on all of 127/8): every
  // rank listens there and reaches its peers there.
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", "3", "--timeout", "100", "-x",
                                "TUTTI_TRANSPORT=tcp", "-x", "TUTTI_BIND_ADDR=127.0.0.3", "-x",
                                "TUTTI_DEBUG=INFO", "-x", "TUTTI_DEBUG_SUBSYS=INIT",
                                testProgramPath("tutti_collective_worker"), "check"},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), 3) << r.out << r.err;
  EXPECT_EQ(countLines(r.out + r.err, "peers reached over TCP from 127.0.0.3"), 3) << r.err;
}

// `n` workers started directly, with the environment Open MPI would give them plus `extra`
// per rank; returns their results. Rank `absent` runs /bin/true instead: it exits at once,
// without joining.
std::vector<ProcessResult> runOpenMpiStyle(int n,
                                           const std::vector<std::vector<std::string>>& extra,
                                           int absent = -1) {
  auto fd = listenTcp("127.0.0.1", 0);  // a port that was free a moment ago
  EXPECT_TRUE(fd.ok());
  const std::string port = std::to_string(localAddress(fd->get())->port);
  fd->reset();
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env", "OMPI_COMM_WORLD_RANK=" + std::to_string(r),
                                     "OMPI_COMM_WORLD_SIZE=" + std::to_string(n),
                                     "TUTTI_STORE_ADDR=127.0.0.1:" + port,
                                     "TUTTI_CONNECT_TIMEOUT=10"};
    for (const std::string& kv : extra[static_cast<std::size_t>(r)]) argv.push_back(kv);
    if (r == absent) {
      argv.push_back("/bin/true");
    } else {
      argv.push_back(testProgramPath("tutti_collective_worker"));
      argv.push_back("check");
    }
    auto p = Subprocess::start(argv);
    EXPECT_TRUE(p.ok()) << p.status().toString();
    if (p.ok()) ranks.push_back(std::move(p).value());
  }
  std::vector<ProcessResult> results;
  for (auto& rank : ranks) results.push_back(rank->wait(Deadline::afterSeconds(kOuterBoundSeconds)));
  return results;
}

TEST(AuthProcs, ForeignLauncherWithTheSameSecretWorksAndWithoutOneWarnsWhereItListens) {
  const std::string secret = "TUTTI_SECRET=shared-by-the-foreign-launcher-0123456789";
  auto withSecret = runOpenMpiStyle(2, {{secret}, {secret}});
  ASSERT_EQ(withSecret.size(), 2u);
  for (const ProcessResult& r : withSecret) {
    EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
    EXPECT_FALSE(has(r.err, "no job secret")) << r.err;
  }
  // Without a secret: the job runs, and a process says once that it listens
  // unauthenticated: rank 0 for the store it serves; rank 1 too when it accepts peers over
  // TCP, but not over shared memory, where it has no listener.
  for (const char* transport : {"TUTTI_TRANSPORT=shm", "TUTTI_TRANSPORT=tcp"}) {
    SCOPED_TRACE(transport);
    auto without = runOpenMpiStyle(2, {{transport}, {transport}});
    ASSERT_EQ(without.size(), 2u);
    const std::string warning = "no job secret (TUTTI_SECRET or TUTTI_SECRET_FILE): ";
    for (const ProcessResult& r : without) EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
    EXPECT_EQ(countLines(without[0].err, warning + "the store on 127.0.0.1:"), 1)
        << without[0].err;
    const bool tcp = std::string(transport).find("tcp") != std::string::npos;
    EXPECT_EQ(countLines(without[1].err, warning), tcp ? 1 : 0) << without[1].err;
  }
}

TEST(AuthProcs, ForeignLauncherRankWithoutTheSecretIsRefused) {
  // Rank 0 serves the store with the secret; rank 1 was not given it. Rank 0 waits for
  // rank 1 until its connect timeout, 5 s here rather than the others' 10.
  auto results = runOpenMpiStyle(
      2, {{"TUTTI_SECRET=only-rank-zero-has-this-secret-0123", "TUTTI_CONNECT_TIMEOUT=5"}, {}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_NE(results[1].exitCode(), 0);
  EXPECT_TRUE(has(results[1].out,
                  "refused this process's authentication: the two do not hold the same job "
                  "secret (this process has none: give it the job's secret through "
                  "TUTTI_SECRET or TUTTI_SECRET_FILE)"))
      << results[1].out << results[1].err;
  // Rank 0 waits for a rank 1 that never joins, and gives up at its connect timeout.
  EXPECT_NE(results[0].exitCode(), 0);
  EXPECT_TRUE(has(results[0].err, "refused connection from 127.0.0.1:")) << results[0].err;
}

// A rank that exits before joining (a launcher started it, the program ended at once): every
// other rank fails by its short deadline, rather than the 300 s default. Rank 0, serving
// the store, names the rank it waited for; ranks 2 and 3 name it too, or the store, gone
// with rank 0 (which of the two they meet first depends on how far they got).
TEST(AuthProcs, RankThatExitsBeforeJoiningFailsEveryOtherRankNamingIt) {
  const std::vector<std::string> shortDeadlines = {"TUTTI_TIMEOUT=5", "TUTTI_CONNECT_TIMEOUT=5"};
  auto results = runOpenMpiStyle(4, {shortDeadlines, {}, shortDeadlines, shortDeadlines}, 1);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[1].exitCode(), 0);
  for (int r : {0, 2, 3}) {
    const ProcessResult& result = results[static_cast<std::size_t>(r)];
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_FALSE(result.timedOut) << result.out << result.err;
    EXPECT_NE(result.exitCode(), 0) << result.out << result.err;
    EXPECT_TRUE(has(result.out, "RESULT FAILED to create the communicator"))
        << result.out << result.err;
    EXPECT_TRUE(has(result.out, "waiting for rank 1 to join (did it start?)") ||
                (r != 0 && has(result.out, "store at 127.0.0.1:")))
        << result.out << result.err;
  }
  EXPECT_TRUE(has(results[0].out, "still missing 1 of 1: [tutti/world/1/shm/info/1]"))
      << results[0].out;
}

}  // namespace
}  // namespace tutti::test
