// Writes, or checks, the seed corpus of the fuzz targets (fuzz/corpus/<target>/<seed>).
//
// The seeds are made with the library's own encoders, so that they stay valid when a format
// changes: regenerate them with
//   build/fuzz/tutti_fuzz_corpus --write fuzz/corpus
// and the test fuzz_corpus_current (--check) fails while the checked-in files differ from
// what this program makes, or while a corpus directory holds a file it does not make.
// Every opcode, frame type or handshake message has a valid seed, plus the edges (empty and
// largest fields, the error text cut, several frames in a row) and a few refusals (a
// stranger's bytes). The seeds of the targets that read their input as choices
// (fuzz_input.h: store_server reads requests, handshake a run and its choices) are written
// with Choices below, in the order those targets read them; each says what it exercises.

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store_protocol.h"
#include "fuzz_keys.h"
#include "transport/tcp/wire.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
// target -> seed name -> contents
using Corpus = std::map<std::string, std::map<std::string, Bytes>>;

Bytes bytesOf(const std::string& text) { return Bytes(text.begin(), text.end()); }

void append(Bytes* out, const Bytes& more) { out->insert(out->end(), more.begin(), more.end()); }

template <std::size_t N>
void append(Bytes* out, const std::array<std::uint8_t, N>& more) {
  out->insert(out->end(), more.begin(), more.end());
}

// A TCP frame: a header declaring `payload`'s size, then the payload.
Bytes frame(tutti::tcp::FrameType type, std::uint64_t tag, const Bytes& payload,
            std::uint32_t aux = 0, tutti::CallStamp stamp = {}) {
  Bytes out;
  append(&out,
         tutti::tcp::encodeHeader(tutti::tcp::FrameHeader{type, tag, payload.size(), aux, stamp}));
  append(&out, payload);
  return out;
}

void addTcpWire(Corpus* corpus) {
  using tutti::tcp::FrameHeader;
  using tutti::tcp::FrameType;
  auto& seeds = (*corpus)["tcp_wire"];
  const auto hello = tutti::tcp::encodeHello(tutti::tcp::Hello{0x0123456789abcdefULL, 3, 8});
  const Bytes helloBytes(hello.begin(), hello.end());
  const Bytes abortText = bytesOf("peer failure: rank 2 closed its connection");
  seeds["hello"] = frame(FrameType::kHello, 0, helloBytes);
  seeds["hello-payload"] = helloBytes;
  seeds["data"] = frame(FrameType::kData, 0x0000000500000007ULL, bytesOf("12345678"));
  seeds["data-empty"] = frame(FrameType::kData, 42, {});
  // The second of two parts of a striped 16-byte message (TUTTI_TCP_STREAMS).
  FrameHeader part{FrameType::kPart, 7, 8, 0, {}};
  part.partOffset = 8;
  part.partTotal = 16;
  seeds["part"].clear();
  append(&seeds["part"], tutti::tcp::encodeHeader(part));
  append(&seeds["part"], bytesOf("partbyte"));
  // A collective's message: its call's stamp (set bit, root 2, algorithm, op, dtype, kind).
  seeds["data-stamped"] = frame(FrameType::kData, 0x0000000300000001ULL, bytesOf("abcdefgh"), 0,
                                tutti::CallStamp{0x8000020123450204ULL, 1000});
  seeds["close"] = frame(FrameType::kClose, 0, {});
  seeds["abort"] = frame(FrameType::kAbort, 3, abortText,
                         static_cast<std::uint32_t>(tutti::ErrorCode::kPeerFailure));
  seeds["abort-longest"] = frame(FrameType::kAbort, 0, Bytes(tutti::tcp::kMaxAbortBytes, 'x'),
                                 static_cast<std::uint32_t>(tutti::ErrorCode::kInternal));
  // A header at the length limit, with none of its payload: the stream ends mid-frame.
  Bytes longest;
  append(&longest, tutti::tcp::encodeHeader(
                       FrameHeader{FrameType::kData, 1, tutti::tcp::kMaxFrameBytes, 0, {}}));
  seeds["data-longest-header"] = longest;
  // A connection's life: hello, two messages, goodbye.
  Bytes stream = seeds["hello"];
  append(&stream, seeds["data"]);
  append(&stream, seeds["data-stamped"]);
  append(&stream, seeds["data-empty"]);
  append(&stream, seeds["close"]);
  seeds["stream"] = stream;
  seeds["stranger"] = bytesOf("GET / HTTP/1.1\r\nHost: tutti\r\nAccept: */*\r\n\r\n");
}

// The encoding of `msg`; every message below is within the protocol's bounds.
Bytes encoded(const tutti::storeproto::Message& msg) {
  tutti::Result<Bytes> out = tutti::storeproto::encode(msg);
  if (!out.ok()) {
    std::fprintf(stderr, "corpus: %s\n", out.status().toString().c_str());
    std::exit(1);
  }
  return *out;
}

void addStoreProtocol(Corpus* corpus) {
  using tutti::storeproto::Message;
  auto& seeds = (*corpus)["store_protocol"];
  seeds["set"] = encoded(Message::set(1, "rank/3/address", bytesOf("10.0.0.3:4000")));
  seeds["set-empty"] = encoded(Message::set(2, "", {}));
  seeds["set-longest-key"] =
      encoded(Message::set(3, std::string(tutti::Store::kMaxKeyBytes, 'k'), bytesOf("v")));
  seeds["get"] = encoded(Message::get(4, "rank/0/address", 1500));
  seeds["get-no-timeout"] = encoded(Message::get(5, "k", tutti::storeproto::kNoTimeout));
  seeds["add"] = encoded(Message::add(6, "barrier/count", -7));
  seeds["add-min"] = encoded(Message::add(7, "counter", std::numeric_limits<std::int64_t>::min()));
  seeds["wait"] = encoded(Message::wait(8, {"a", "bb", "ccc"}, 250));
  seeds["wait-no-keys"] = encoded(Message::wait(9, {}, 0));
  seeds["ok"] = encoded(Message::ok(10));
  seeds["value"] = encoded(Message::valueReply(11, bytesOf("10.0.0.1:29500")));
  seeds["value-empty"] = encoded(Message::valueReply(12, {}));
  seeds["int"] = encoded(Message::intReply(13, std::numeric_limits<std::int64_t>::max()));
  seeds["timeout"] = encoded(Message::timeoutReply(14, {"rank/5/address", "x"}));
  seeds["error"] =
      encoded(Message::errorReply(15, tutti::ErrorCode::kTimeout, "timed out waiting for key 'x'"));
  // Encoded with the text cut to kMaxErrorBytes.
  seeds["error-longest-text"] =
      encoded(Message::errorReply(16, tutti::ErrorCode::kInternal, std::string(5000, 'e')));
  // Two messages back to back: decode() must refuse the second as trailing bytes.
  Bytes two = seeds["get"];
  append(&two, seeds["ok"]);
  seeds["two-messages"] = two;
  // A header at the payload cap, with none of its payload.
  Bytes capped = seeds["value-empty"];
  const auto cap = static_cast<std::uint32_t>(tutti::storeproto::kMaxPayloadBytes);
  for (int i = 0; i < 4; ++i) capped[12 + i] = static_cast<std::uint8_t>(cap >> (24 - 8 * i));
  capped.resize(tutti::storeproto::kHeaderBytes);
  seeds["value-header-at-cap"] = capped;
  seeds["stranger"] = bytesOf("GET / HTTP/1.1\r\nHost: tutti\r\n\r\n");
}

// A seed for the targets that read their input as choices: the writing side of FuzzInput
// (fuzz_input.h), same order, same encodings.
class Choices {
 public:
  Choices& u8(std::uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  Choices& u32(std::uint32_t v) {
    for (int i = 3; i >= 0; --i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Choices& u64(std::uint64_t v) {
    return u32(static_cast<std::uint32_t>(v >> 32)).u32(static_cast<std::uint32_t>(v));
  }
  Choices& flag(bool v) { return u8(v ? 1 : 0); }
  template <std::size_t N>
  Choices& array(const std::array<std::uint8_t, N>& v) {
    append(&bytes_, v);
    return *this;
  }
  // A field shorter than 255 bytes: one length byte, then the bytes.
  Choices& field(const Bytes& v) {
    if (v.size() >= 0xff) {
      std::fprintf(stderr, "corpus: a field of %zu bytes is too long for a seed\n", v.size());
      std::exit(1);
    }
    u8(static_cast<std::uint8_t>(v.size()));
    append(&bytes_, v);
    return *this;
  }
  Choices& raw(const Bytes& v) {
    append(&bytes_, v);
    return *this;
  }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

// tcp_wire seeds that drive the link (first byte odd): the receives rank 0 posts (count;
// tag, size, stamped and the stamp's two bytes), then what rank 1 sends.
struct LinkReceive {
  std::uint8_t tag;
  std::uint8_t size;
  bool stamped = false;
  std::uint8_t what = 0;
  std::uint8_t count = 0;
};

Bytes linkSeed(const std::vector<LinkReceive>& receives, const std::vector<Bytes>& frames) {
  Choices c;
  c.u8(1).u8(static_cast<std::uint8_t>(receives.size()));
  for (const LinkReceive& r : receives) {
    c.u8(r.tag).u8(r.size).flag(r.stamped);
    if (r.stamped) c.u8(r.what).u8(r.count);
  }
  for (const Bytes& f : frames) c.raw(f);
  return c.bytes();
}

tutti::CallStamp linkStamp(std::uint8_t what, std::uint8_t count) {
  return tutti::CallStamp{(std::uint64_t{1} << 63) | what, count};
}

void addTcpLink(Corpus* corpus) {
  using tutti::tcp::FrameType;
  auto& seeds = (*corpus)["tcp_wire"];
  const Bytes close = frame(FrameType::kClose, 0, {});
  // Three messages received, the third with its call's stamp, then a goodbye.
  seeds["link-messages"] =
      linkSeed({{1, 8}, {2, 0}, {1, 4, true, 5, 9}},
               {frame(FrameType::kData, 1, bytesOf("12345678")), frame(FrameType::kData, 2, {}),
                frame(FrameType::kData, 1, bytesOf("abcd"), 0, linkStamp(5, 9)), close});
  // A message nobody waits for, then the peer dies.
  seeds["link-unexpected-then-death"] =
      linkSeed({{1, 4}}, {frame(FrameType::kData, 3, Bytes(16, 'u'))});
  seeds["link-size-mismatch"] =
      linkSeed({{1, 4}}, {frame(FrameType::kData, 1, bytesOf("12345678")), close});
  seeds["link-call-mismatch"] =
      linkSeed({{2, 4, true, 7, 1}},
               {frame(FrameType::kData, 2, bytesOf("wxyz"), 0, linkStamp(8, 1)), close});
  seeds["link-abort"] = linkSeed(
      {{1, 4}, {2, 4}}, {frame(FrameType::kAbort, 3, bytesOf("rank 2 timed out in allreduce #4"),
                               static_cast<std::uint32_t>(tutti::ErrorCode::kTimeout))});
  // An abort without a reason.
  seeds["link-abort-empty"] =
      linkSeed({{1, 4}}, {frame(FrameType::kAbort, 0, {},
                                static_cast<std::uint32_t>(tutti::ErrorCode::kInternal))});
  seeds["link-hello"] = linkSeed({{1, 4}}, {frame(FrameType::kHello, 0, seeds["hello-payload"])});
  // A striped message's frames on a one-stream link: a PART, a DATA flagged striped.
  seeds["link-part"] = linkSeed({{1, 4}}, {seeds["part"]});
  tutti::tcp::FrameHeader striped{FrameType::kData, 1, 4, 0, {}};
  striped.striped = true;
  Bytes stripedFrame;
  append(&stripedFrame, tutti::tcp::encodeHeader(striped));
  append(&stripedFrame, bytesOf("abcd"));
  seeds["link-striped"] = linkSeed({{1, 4}}, {stripedFrame});
  Bytes cut = frame(FrameType::kData, 1, bytesOf("12345678"));
  cut.resize(cut.size() - 5);
  seeds["link-cut-payload"] = linkSeed({{1, 8}}, {cut});
  // Unexpected messages past the link's 4096-byte cap: it stops reading.
  seeds["link-back-pressure"] = linkSeed({{1, 4}}, {frame(FrameType::kData, 3, Bytes(3000, 'a')),
                                                    frame(FrameType::kData, 3, Bytes(2000, 'b')),
                                                    frame(FrameType::kData, 1, bytesOf("late"))});
  seeds["link-stranger"] = linkSeed(
      {{1, 4}},
      {bytesOf("GET / HTTP/1.1\r\nHost: tutti\r\nAccept: */*\r\nUser-Agent: curl\r\n\r\n")});
}

void addStoreServer(Corpus* corpus) {
  using tutti::storeproto::kNoTimeout;
  using tutti::storeproto::Message;
  auto& seeds = (*corpus)["store_server"];
  auto requests = [](std::initializer_list<Message> messages) {
    Bytes out;
    for (const Message& m : messages) append(&out, encoded(m));
    return out;
  };
  seeds["set-get"] = requests({Message::set(1, "rank/0/address", bytesOf("10.0.0.1:4000")),
                               Message::get(2, "rank/0/address", 1000)});
  seeds["add-add-get"] = requests({Message::add(1, "barrier", 5), Message::add(2, "barrier", -7),
                                   Message::get(3, "barrier", kNoTimeout)});
  seeds["add-not-integer"] =
      requests({Message::set(1, "k", bytesOf("twelve")), Message::add(2, "k", 1)});
  seeds["add-overflow"] = requests(
      {Message::add(1, "c", std::numeric_limits<std::int64_t>::max()), Message::add(2, "c", 1)});
  seeds["wait-satisfied"] = requests({Message::set(1, "a", {}), Message::set(2, "b", bytesOf("2")),
                                      Message::wait(3, {"a", "b"}, 500)});
  // Requests that wait: dropped unanswered when the client's stream ends, or answered
  // TIMEOUT when a zero timeout comes first; the SET behind them waits its turn.
  seeds["get-waits"] = requests({Message::get(1, "missing", kNoTimeout), Message::set(2, "x", {})});
  seeds["get-times-out"] = requests({Message::get(1, "missing", 0), Message::set(2, "missing", {}),
                                     Message::get(3, "missing", 0)});
  seeds["wait-times-out"] =
      requests({Message::set(1, "a", {}), Message::wait(2, {"a", "z", "a"}, 0)});
  seeds["set-longest-key"] =
      requests({Message::set(1, std::string(tutti::Store::kMaxKeyBytes, 'k'), bytesOf("v")),
                Message::get(2, std::string(tutti::Store::kMaxKeyBytes, 'k'), 0)});
  // Refused: a reply where a request belongs, garbage after a good request, a cut request.
  seeds["reply-as-request"] = requests({Message::ok(1), Message::set(2, "x", {})});
  Bytes garbage = requests({Message::set(1, "x", bytesOf("1"))});
  append(&garbage, bytesOf("GET / HTTP/1.1\r\n\r\n"));
  seeds["garbage-after-set"] = garbage;
  Bytes cut = requests({Message::set(1, "x", bytesOf("a value cut short"))});
  cut.resize(cut.size() - 4);
  seeds["cut-short"] = cut;
}

// Handshake seeds, one or more per run of handshake_fuzzer.cc (its first byte). Keys are
// chosen by index: 0 the no-secret key, 1 kFirstSecret, 2 kSecondSecret.
using tutti::auth::Nonce;

Nonce nonceOf(std::uint8_t first) {
  Nonce n{};
  for (std::size_t i = 0; i < n.size(); ++i) n[i] = static_cast<std::uint8_t>(first + 7 * i);
  return n;
}

tutti::auth::Key keyOf(int index) {
  if (index == 0) return tutti::auth::Key();
  return *tutti::auth::Key::fromSecret(index == 1 ? tutti::fuzz::kFirstSecret
                                                  : tutti::fuzz::kSecondSecret);
}

// readSides(): client key, server key, client context (peer link when commUid != 0), and
// the server's own context only when it differs.
Choices& sides(Choices& c, int clientKey, int serverKey, std::uint64_t commUid = 0,
               std::uint64_t serverCommUid = 0) {
  c.u8(static_cast<std::uint8_t>(clientKey)).u8(static_cast<std::uint8_t>(serverKey));
  auto context = [&c](std::uint64_t uid) {
    c.flag(uid != 0);
    if (uid != 0) c.u64(uid).u32(1).u32(4);
  };
  context(commUid);
  c.flag(serverCommUid != commUid);
  if (serverCommUid != commUid) context(serverCommUid);
  return c;
}

// The response an honest client with `key` sends to the challenge carrying `serverNonce`.
Bytes honestResponse(const tutti::auth::Key& key, const Nonce& serverNonce,
                     const Nonce& clientNonce) {
  using namespace tutti::auth;
  ClientHandshake client(key, Context::store(), clientNonce);
  const ChallengeBytes challenge = encodeChallenge(Challenge{serverNonce});
  const ResponseBytes response = *client.respond(challenge);
  return Bytes(response.begin(), response.end());
}

void addHandshakeMessages(std::map<std::string, Bytes>& seeds) {
  using namespace tutti::auth;
  const ChallengeBytes challenge = encodeChallenge(Challenge{nonceOf(1)});
  seeds["challenge"] = Bytes(challenge.begin(), challenge.end());
  const ResponseBytes response = encodeResponse(Response{nonceOf(2), Mac{}});
  seeds["response"] = Bytes(response.begin(), response.end());
  const VerdictBytes accepted = encodeVerdict(Verdict{true, nonceOf(3)});
  seeds["verdict-accepted"] = Bytes(accepted.begin(), accepted.end());
  const VerdictBytes refused = encodeVerdict(Verdict{});
  seeds["verdict-refused"] = Bytes(refused.begin(), refused.end());
}

void addHandshake(Corpus* corpus) {
  auto& seeds = (*corpus)["handshake"];
  addHandshakeMessages(seeds);
  std::array<std::uint8_t, tutti::auth::kResponseBytes> flipped{};
  flipped[40] = 0x01;  // one bit of the proof
  std::array<std::uint8_t, tutti::auth::kVerdictBytes> verdictFlipped{};
  verdictFlipped[39] = 0x80;
  {  // 0: the server judges bytes. Key 1, store context, the honest response.
    Choices c;
    c.u8(0)
        .u8(1)
        .flag(false)
        .array(nonceOf(9))
        .raw(honestResponse(keyOf(1), nonceOf(9), nonceOf(4)));
    seeds["judge-honest"] = c.bytes();
    Choices stranger;
    stranger.u8(0).u8(1).flag(false).array(nonceOf(9)).raw(bytesOf("SSH-2.0-OpenSSH_9.2\r\n"));
    seeds["judge-stranger"] = stranger.bytes();
  }
  // 1: the pure sides. Agreeing, then each way to disagree or tamper.
  auto pure = [](int clientKey, int serverKey, std::uint64_t uid, std::uint64_t serverUid) {
    Choices c;
    sides(c.u8(1), clientKey, serverKey, uid, serverUid).array(nonceOf(5)).array(nonceOf(6));
    return c;
  };
  seeds["pure-agree"] = pure(1, 1, 0, 0).bytes();
  seeds["pure-agree-no-secret"] = pure(0, 0, 0, 0).bytes();
  seeds["pure-agree-peer-link"] = pure(2, 2, 0x1234, 0x1234).bytes();
  seeds["pure-other-key"] = pure(1, 2, 0, 0).bytes();
  seeds["pure-other-communicator"] = pure(1, 1, 0x1234, 0x1235).bytes();
  seeds["pure-response-tampered"] =
      pure(1, 1, 0, 0)
          .array(std::array<std::uint8_t, tutti::auth::kChallengeBytes>{})
          .array(flipped)
          .bytes();
  // 2: the gate over a socket: honest response then "after" bytes, in 9-byte chunks;
  // another key; a hang-up after 30 bytes; a drop after 10.
  auto gate = [](int clientKey, std::uint8_t stopAfter, bool drop) {
    Choices c;
    sides(c.u8(2), clientKey, 1).array(nonceOf(7)).array(std::array<std::uint8_t, 72>{});
    c.field(bytesOf("after the handshake")).u8(stopAfter).flag(drop);
    for (int i = 0; i < 12; ++i) c.u8(9);
    return c.bytes();
  };
  seeds["gate-honest"] = gate(1, 255, false);
  seeds["gate-other-key"] = gate(2, 255, false);
  seeds["gate-hang-up"] = gate(1, 30, false);
  seeds["gate-dropped"] = gate(1, 10, true);
  // 3: the client over a socket, against a server sending in 6-byte chunks: honest, one of
  // another job, a tampered verdict, hang-ups in the challenge, before and in the verdict.
  auto client = [&verdictFlipped](int serverKey, bool tamper, std::uint8_t hangUpAfter) {
    Choices c;
    sides(c.u8(3), 1, serverKey).array(nonceOf(8)).array(std::array<std::uint8_t, 40>{});
    c.array(tamper ? verdictFlipped : std::array<std::uint8_t, 40>{}).u8(hangUpAfter);
    for (int i = 0; i < 14; ++i) c.u8(6);
    return c.bytes();
  };
  seeds["client-honest"] = client(1, false, 255);
  seeds["client-other-key"] = client(2, false, 255);
  seeds["client-verdict-tampered"] = client(1, true, 255);
  seeds["client-hang-up"] = client(1, false, 20);
  seeds["client-hang-up-before-verdict"] = client(1, false, 40);
  seeds["client-hang-up-in-verdict"] = client(1, false, 61);
}

Corpus makeCorpus() {
  Corpus corpus;
  addTcpWire(&corpus);
  addTcpLink(&corpus);
  addStoreProtocol(&corpus);
  addStoreServer(&corpus);
  addHandshake(&corpus);
  return corpus;
}

int write(const fs::path& root, const Corpus& corpus) {
  for (const auto& [target, seeds] : corpus) {
    const fs::path dir = root / target;
    std::error_code ec;
    fs::create_directories(dir, ec);
    for (const auto& [name, bytes] : seeds) {
      std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "corpus: cannot write %s\n", (dir / name).c_str());
        return 1;
      }
    }
    std::printf("corpus: %zu seeds in %s\n", seeds.size(), dir.c_str());
  }
  return 0;
}

// Counts the differences between the files under `root` and `corpus`, naming each one.
int check(const fs::path& root, const Corpus& corpus) {
  int problems = 0;
  for (const auto& [target, seeds] : corpus) {
    const fs::path dir = root / target;
    std::set<std::string> onDisk;
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
      onDisk.insert(entry.path().filename().string());
    for (const auto& [name, bytes] : seeds) {
      std::ifstream in(dir / name, std::ios::binary);
      const Bytes have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.is_open() || have != bytes) {
        std::fprintf(stderr, "corpus: %s is %s\n", (dir / name).c_str(),
                     in.is_open() ? "out of date" : "missing");
        ++problems;
      }
      onDisk.erase(name);
    }
    for (const std::string& extra : onDisk) {
      std::fprintf(stderr, "corpus: %s is not a seed this program makes\n", (dir / extra).c_str());
      ++problems;
    }
  }
  if (problems > 0)
    std::fprintf(stderr, "corpus: %d problems; regenerate with %s --write %s\n", problems,
                 "tutti_fuzz_corpus", root.c_str());
  else
    std::printf("corpus: %s is current\n", root.c_str());
  return problems > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "--write") != 0 && std::strcmp(argv[1], "--check") != 0)) {
    std::fprintf(stderr, "usage: %s --write|--check CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const Corpus corpus = makeCorpus();
  return std::strcmp(argv[1], "--write") == 0 ? write(argv[2], corpus) : check(argv[2], corpus);
}
