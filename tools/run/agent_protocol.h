#pragma once
// What tutti-run and its per-host agents (`tutti-run --agent`, started through the launch
// command of `--hosts`) say to each other. Both directions are sequences of netstrings
// ("5:hello,": the decimal length, ':', the bytes, ','), so that any byte may appear in an
// argument, a variable or a rank's output, and a stream is cut into records without
// guessing.
//
// tutti-run -> agent (the agent's stdin):
//   the job description, a sequence of (key, value) netstring pairs ending in ("start", ""):
//     "version" "1"       first, so that an agent of another version refuses clearly
//     "host"    name      as --hosts names it, for messages
//     "cwd"     path      tutti-run's working directory (the agent goes there when it can)
//     "world"   N         the world size
//     "store"   host:port the store's address
//     "job"     id        TUTTI_JOB_ID
//     "secret"  secret    TUTTI_SECRET: the only way the secret reaches a host, never argv
//     "cpubind" mode      --cpu-bind, applied among this host's ranks and CPUs
//     "env"     NAME=VALUE  repeated: -x and tutti-run's TUTTI_* variables, over the
//                       agent's own environment
//     "arg"     text      repeated: the program, then its arguments
//     "rank"    N         repeated: the global ranks of this host, in local-rank order
//   then control records while the job runs: ("signal", "N"): send signal N to every rank.
//   EOF on stdin (tutti-run ended or gave up on the host) makes the agent stop its ranks:
//   SIGTERM, then SIGKILL kKillAfterSeconds later.
//
// agent -> tutti-run (the agent's stdout): frames of three netstrings (kind, rank, payload):
//   "S" rank pid       the rank started with that pid
//   "O" rank bytes     bytes the rank wrote on stdout (raw: tutti-run cuts and tags lines)
//   "E" rank bytes     the same for stderr
//   "X" rank status    the rank ended; its waitpid() status in decimal (after its output)
//   "F" -1   message   the agent cannot run the job (bad description, fork failed); it has
//                      killed the ranks it started and exits 1
// The agent's stderr carries its own messages (and the launch command's, e.g. ssh's); tutti-run
// relays them prefixed "[host NAME] ".

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/status.h"

namespace tutti::run {

/// Appends `text` as one netstring to `*out`.
void appendNetstring(std::string_view text, std::string* out);

/// Cuts a byte stream into netstrings. Not thread-safe; one per stream.
class NetstringReader {
 public:
  /// Longest netstring accepted (a rank's output arrives in chunks far below this).
  static constexpr std::size_t kMaxLength = 16 * 1024 * 1024;

  /// Appends `data` to the bytes not yet cut.
  void feed(std::string_view data) { buffer_.append(data); }

  /// Takes the next whole netstring into `*out`: true when one was taken, false when more
  /// bytes are needed. kInvalidArgument when the stream is not netstrings.
  Result<bool> next(std::string* out);

  /// True when bytes of an unfinished netstring are held.
  bool pending() const { return consumed_ < buffer_.size(); }

 private:
  std::string buffer_;
  std::size_t consumed_ = 0;
};

/// One host's share of a job, as the agent receives it.
struct AgentJob {
  std::string host;
  std::string cwd;
  int worldSize = 0;
  std::string storeAddress;
  std::string jobId;
  std::string secret;
  std::string cpuBind = "none";
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> command;
  /// Global rank of each of this host's ranks; index = local rank.
  std::vector<int> ranks;
};

/// The job description of `job`, ending in the "start" record.
std::string encodeAgentJob(const AgentJob& job);

/// Reads a job description record by record (see the file comment).
class AgentJobDecoder {
 public:
  /// Consumes the netstrings in `reader`: true once the "start" record has been read (`job()`
  /// is then complete), false when more input is needed. kInvalidArgument naming the problem
  /// for an unknown key, a bad number, a missing field or another version.
  Result<bool> decode(NetstringReader& reader);
  const AgentJob& job() const { return job_; }

 private:
  Status apply(const std::string& key, const std::string& value);
  AgentJob job_;
  std::string key_;
  bool haveKey_ = false;
  bool sawVersion_ = false;
};

/// A control record to an agent: ("signal", "N").
std::string encodeSignalRecord(int sig);

/// A frame from an agent.
struct AgentFrame {
  char kind = 0;  // 'S', 'O', 'E', 'X' or 'F'
  int rank = -1;
  std::string payload;
};

/// Appends one frame to `*out`.
void appendAgentFrame(char kind, int rank, std::string_view payload, std::string* out);

/// Reads frames out of netstrings: true when `*frame` holds a whole frame. kInvalidArgument
/// for a malformed frame.
class AgentFrameReader {
 public:
  void feed(std::string_view data) { reader_.feed(data); }
  Result<bool> next(AgentFrame* frame);

 private:
  NetstringReader reader_;
  std::vector<std::string> parts_;
};

}  // namespace tutti::run
