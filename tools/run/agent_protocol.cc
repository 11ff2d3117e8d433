#include "run/agent_protocol.h"

#include "base/macros.h"
#include "base/strings.h"

namespace tutti::run {
namespace {

constexpr const char* kVersion = "1";

Result<int> parseNumber(const std::string& key, const std::string& value, int min, int max) {
  const auto n = parseInt(value);
  TUTTI_CHECK_ARG(n.has_value() && *n >= min && *n <= max,
                  "agent job description: '%s' must be a number from %d to %d, not '%s'",
                  key.c_str(), min, max, value.c_str());
  return static_cast<int>(*n);
}

}  // namespace

void appendNetstring(std::string_view text, std::string* out) {
  out->append(std::to_string(text.size()));
  out->push_back(':');
  out->append(text);
  out->push_back(',');
}

Result<bool> NetstringReader::next(std::string* out) {
  const std::string_view rest = std::string_view(buffer_).substr(consumed_);
  const std::size_t colon = rest.find(':');
  // Up to 8 digits (kMaxLength has 8) before the colon.
  if (colon == std::string_view::npos) {
    TUTTI_CHECK_ARG(rest.size() <= 9, "netstring stream: no ':' after %zu bytes of length",
                    rest.size());
    return false;
  }
  const auto length = parseInt(rest.substr(0, colon));
  TUTTI_CHECK_ARG(colon > 0 && colon <= 9 && length.has_value() && *length >= 0 &&
                      static_cast<std::uint64_t>(*length) <= kMaxLength &&
                      rest[0] >= '0' && rest[0] <= '9',
                  "netstring stream: bad length '%s'",
                  std::string(rest.substr(0, std::min<std::size_t>(colon, 16))).c_str());
  const auto len = static_cast<std::size_t>(*length);
  if (rest.size() < colon + 1 + len + 1) return false;
  TUTTI_CHECK_ARG(rest[colon + 1 + len] == ',', "netstring stream: a %zu-byte string does not end "
                  "in ','", len);
  out->assign(rest.substr(colon + 1, len));
  consumed_ += colon + 1 + len + 1;
  // Drop what was read once it is most of the buffer, so the buffer does not grow forever.
  if (consumed_ > 4096 && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return true;
}

std::string encodeAgentJob(const AgentJob& job) {
  std::string out;
  auto field = [&out](std::string_view key, std::string_view value) {
    appendNetstring(key, &out);
    appendNetstring(value, &out);
  };
  field("version", kVersion);
  field("host", job.host);
  field("cwd", job.cwd);
  field("world", std::to_string(job.worldSize));
  field("store", job.storeAddress);
  field("job", job.jobId);
  field("secret", job.secret);
  field("cpubind", job.cpuBind);
  for (const auto& [name, value] : job.env) field("env", name + "=" + value);
  for (const std::string& arg : job.command) field("arg", arg);
  for (int rank : job.ranks) field("rank", std::to_string(rank));
  field("start", "");
  return out;
}

Status AgentJobDecoder::apply(const std::string& key, const std::string& value) {
  if (key == "version") {
    TUTTI_CHECK_ARG(value == kVersion,
                    "agent job description of version %s, this tutti-run speaks version %s "
                    "(run the same tutti-run on every host)",
                    value.c_str(), kVersion);
    sawVersion_ = true;
    return Status::Ok();
  }
  TUTTI_CHECK_ARG(sawVersion_, "agent job description: '%s' before 'version'", key.c_str());
  if (key == "host") {
    job_.host = value;
  } else if (key == "cwd") {
    job_.cwd = value;
  } else if (key == "world") {
    TUTTI_ASSIGN_OR_RETURN(job_.worldSize, parseNumber(key, value, 1, 1 << 30));
  } else if (key == "store") {
    job_.storeAddress = value;
  } else if (key == "job") {
    job_.jobId = value;
  } else if (key == "secret") {
    job_.secret = value;
  } else if (key == "cpubind") {
    job_.cpuBind = value;
  } else if (key == "env") {
    const auto eq = value.find('=');
    TUTTI_CHECK_ARG(eq != std::string::npos && eq > 0,
                    "agent job description: env '%s' is not NAME=VALUE", value.c_str());
    job_.env.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  } else if (key == "arg") {
    job_.command.push_back(value);
  } else if (key == "rank") {
    int rank = 0;
    TUTTI_ASSIGN_OR_RETURN(rank, parseNumber(key, value, 0, (1 << 30) - 1));
    job_.ranks.push_back(rank);
  } else {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("agent job description: unknown key '%s'", key.c_str()));
  }
  return Status::Ok();
}

Result<bool> AgentJobDecoder::decode(NetstringReader& reader) {
  std::string text;
  while (true) {
    TUTTI_ASSIGN_OR_RETURN(const bool got, reader.next(&text));
    if (!got) return false;
    if (!haveKey_) {
      key_ = std::move(text);
      haveKey_ = true;
      continue;
    }
    haveKey_ = false;
    if (key_ != "start") {
      TUTTI_RETURN_IF_ERROR(apply(key_, text));
      continue;
    }
    TUTTI_CHECK_ARG(sawVersion_, "agent job description: 'start' before 'version'");
    TUTTI_CHECK_ARG(!job_.command.empty() && !job_.command[0].empty(),
                    "agent job description: no program ('arg')");
    TUTTI_CHECK_ARG(!job_.ranks.empty(), "agent job description: no rank");
    TUTTI_CHECK_ARG(job_.worldSize >= static_cast<int>(job_.ranks.size()),
                    "agent job description: %zu ranks on this host but a world of %d",
                    job_.ranks.size(), job_.worldSize);
    for (int rank : job_.ranks) {
      TUTTI_CHECK_ARG(rank < job_.worldSize,
                      "agent job description: rank %d outside a world of %d", rank,
                      job_.worldSize);
    }
    TUTTI_CHECK_ARG(!job_.storeAddress.empty() && !job_.secret.empty(),
                    "agent job description: no store address or secret");
    return true;
  }
}

std::string encodeSignalRecord(int sig) {
  std::string out;
  appendNetstring("signal", &out);
  appendNetstring(std::to_string(sig), &out);
  return out;
}

void appendAgentFrame(char kind, int rank, std::string_view payload, std::string* out) {
  appendNetstring(std::string_view(&kind, 1), out);
  appendNetstring(std::to_string(rank), out);
  appendNetstring(payload, out);
}

Result<bool> AgentFrameReader::next(AgentFrame* frame) {
  std::string text;
  while (parts_.size() < 3) {
    TUTTI_ASSIGN_OR_RETURN(const bool got, reader_.next(&text));
    if (!got) return false;
    parts_.push_back(std::move(text));
  }
  const std::string& kind = parts_[0];
  TUTTI_CHECK_ARG(kind.size() == 1 &&
                      std::string_view("SOEXF").find(kind[0]) != std::string_view::npos,
                  "agent frame of unknown kind '%s'", kind.c_str());
  const auto rank = parseInt(parts_[1]);
  TUTTI_CHECK_ARG(rank.has_value() && *rank >= -1 && *rank < (1 << 30),
                  "agent frame with a bad rank '%s'", parts_[1].c_str());
  frame->kind = kind[0];
  frame->rank = static_cast<int>(*rank);
  frame->payload = std::move(parts_[2]);
  parts_.clear();
  return true;
}

}  // namespace tutti::run
