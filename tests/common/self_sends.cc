#include "common/self_sends.h"

#include <cstdint>
#include <functional>
#include <vector>

#include "base/strings.h"

namespace tutti::test {
namespace {

constexpr auto kU32 = DataType::kUint32;
using Values = std::vector<std::uint32_t>;

// What rank `from` sends rank `to` as message `k`: distinct per pair, message and index.
Values payload(int from, int to, int k, std::size_t count) {
  Values v(count);
  for (std::size_t i = 0; i < count; ++i)
    v[i] = static_cast<std::uint32_t>(from * 1000003u + to * 7919u + k * 104729u + i);
  return v;
}

std::string compare(const Values& got, const Values& want, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i])
      return strFormat("%s: element %zu of %zu is %u, expected %u\n", what, i, want.size(),
                       got[i], want[i]);
  }
  return "";
}

std::string failureOf(const Status& s, const char* what) {
  return s.ok() ? "" : strFormat("%s: %s\n", what, s.toString().c_str());
}

// One message to self, `k`, through `exchange`, which sends `out` and receives into `in`.
std::string oneMessage(Communicator& comm, std::size_t count, int k, const char* what,
                       const std::function<std::string(const Values& out, Values& in)>& exchange) {
  const int me = comm.rank();
  const Values out = payload(me, me, k, count);
  Values in(count, 0xdeadbeefu);
  std::string failure = exchange(out, in);
  if (!failure.empty()) return strFormat("%s: ", what) + failure;
  return compare(in, out, what);
}

// The pairs of one send and one receive, in each order MPI allows.
std::string pairs(Communicator& comm, std::size_t count) {
  const int me = comm.rank();
  const std::size_t n = count;
  std::string out;
  out += oneMessage(comm, count, 1, "recvAsync, blocking send", [&](const Values& o, Values& in) {
    Work r = comm.recvAsync(in.data(), n, kU32, me, 1);
    std::string f = failureOf(comm.send(o.data(), n, kU32, me, 1), "send");
    return f + failureOf(r.wait(), "recv");
  });
  out += oneMessage(comm, count, 2, "sendAsync, blocking recv", [&](const Values& o, Values& in) {
    Work s = comm.sendAsync(o.data(), n, kU32, me, 2);
    std::string f = failureOf(comm.recv(in.data(), n, kU32, me, 2), "recv");
    return f + failureOf(s.wait(), "send");
  });
  out += oneMessage(comm, count, 3, "sendAsync, recvAsync", [&](const Values& o, Values& in) {
    Work s = comm.sendAsync(o.data(), n, kU32, me, 3);
    Work r = comm.recvAsync(in.data(), n, kU32, me, 3);
    std::string f = failureOf(r.wait(), "recv");
    return f + failureOf(s.wait(), "send");
  });
  out += oneMessage(comm, count, 4, "recvAsync, sendAsync", [&](const Values& o, Values& in) {
    Work r = comm.recvAsync(in.data(), n, kU32, me, 4);
    Work s = comm.sendAsync(o.data(), n, kU32, me, 4);
    std::string f = failureOf(s.wait(), "send");
    return f + failureOf(r.wait(), "recv");
  });
  // Buffered: the send completes before its receive is posted.
  out += oneMessage(comm, count, 5, "blocking send, blocking recv", [&](const Values& o, Values& in) {
    std::string f = failureOf(comm.send(o.data(), n, kU32, me, 5), "send");
    return f + failureOf(comm.recv(in.data(), n, kU32, me, 5), "recv");
  });
  return out;
}

// Three messages on one tag arrive in the order sent; two tags are received the other way
// round from how they were sent.
std::string ordering(Communicator& comm, std::size_t count) {
  const int me = comm.rank();
  std::vector<Values> sent;
  std::vector<Work> sends;
  for (int k = 0; k < 3; ++k) {
    sent.push_back(payload(me, me, 10 + k, count));
    sends.push_back(comm.sendAsync(sent.back().data(), count, kU32, me, 6));
  }
  std::string out;
  for (int k = 0; k < 3; ++k) {
    Values in(count, 0);
    out += failureOf(comm.recv(in.data(), count, kU32, me, 6), "recv on one tag");
    out += compare(in, sent[static_cast<std::size_t>(k)], "messages on one tag, in order");
  }
  for (Work& w : sends) out += failureOf(w.wait(), "send on one tag");
  const Values a = payload(me, me, 20, count), b = payload(me, me, 21, count);
  Work sa = comm.sendAsync(a.data(), count, kU32, me, 7);
  Work sb = comm.sendAsync(b.data(), count, kU32, me, 8);
  Values inB(count, 0), inA(count, 0);
  out += failureOf(comm.recv(inB.data(), count, kU32, me, 8), "recv tag 8");
  out += failureOf(comm.recv(inA.data(), count, kU32, me, 7), "recv tag 7");
  out += failureOf(sa.wait(), "send tag 7") + failureOf(sb.wait(), "send tag 8");
  out += compare(inA, a, "tag 7 received second") + compare(inB, b, "tag 8 received first");
  return out;
}

// A ring to the neighbours and a message to self in flight together.
std::string ringAndSelf(Communicator& comm, std::size_t count) {
  const int me = comm.rank(), n = comm.size();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const Values toNext = payload(me, next, 30, count), toSelf = payload(me, me, 31, count);
  Values fromPrev(count, 0), fromSelf(count, 0);
  Work rp = comm.recvAsync(fromPrev.data(), count, kU32, prev, 9);
  Work rs = comm.recvAsync(fromSelf.data(), count, kU32, me, 10);
  Work sn = comm.sendAsync(toNext.data(), count, kU32, next, 9);
  std::string out = failureOf(comm.send(toSelf.data(), count, kU32, me, 10), "send to self");
  out += failureOf(sn.wait(), "send to next") + failureOf(rs.wait(), "recv from self") +
         failureOf(rp.wait(), "recv from prev");
  if (!out.empty()) return "ring and self: " + out;
  return compare(fromPrev, payload(prev, me, 30, count), "ring: from the previous rank") +
         compare(fromSelf, toSelf, "ring: from self");
}

}  // namespace

std::string checkSendsToSelf(Communicator& comm, std::size_t count) {
  std::string out = pairs(comm, count);
  if (out.empty()) out += ordering(comm, count);
  if (out.empty()) out += ringAndSelf(comm, count);
  if (out.empty()) {
    // Still healthy, and in step with the others.
    out += failureOf(comm.barrier(), "barrier after the sends to self");
  }
  return out.empty() ? "" : strFormat("count %zu: ", count) + out;
}

}  // namespace tutti::test
