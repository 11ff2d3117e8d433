#include "calls.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

#include <pybind11/stl.h>

#include "errors.h"
#include "work.h"

namespace py = pybind11;

namespace tutti::python {

namespace {

using Counts = std::vector<std::size_t>;

// The keyword arguments every call ends with.
struct Common {
  std::optional<DataType> dtype;
  CallOptions options;
};

Common common(py::handle dtype, std::optional<double> timeout, const std::string& algorithm) {
  return Common{dataTypeArg(dtype), callOptions(timeout, algorithm)};
}

Buffer take(py::handle obj, const char* name, bool writable, const Common& c) {
  return Buffer::take(obj, name, writable, c.dtype);
}

std::byte* at(const Buffer& b, std::size_t element) {
  return static_cast<std::byte*>(b.data()) + element * dataTypeSize(b.dtype());
}

// A counts array: one non-negative entry per rank.
Counts countsArg(py::handle obj, const char* name, int size) {
  Counts out;
  for (py::handle item : obj) {
    const auto v = item.cast<long long>();
    if (v < 0) throw py::value_error(std::string(name) + " holds " + std::to_string(v) + "; counts are >= 0");
    out.push_back(static_cast<std::size_t>(v));
  }
  if (out.size() != static_cast<std::size_t>(size)) {
    throw py::value_error(std::string(name) + " has " + std::to_string(out.size()) +
                          " entries, one per rank needs " + std::to_string(size));
  }
  return out;
}

// A displacements array, or the packed one (prefix sums of counts) when None.
Counts displsArg(py::handle obj, const char* name, const Counts& counts) {
  if (obj.is_none()) {
    Counts d(counts.size());
    std::exclusive_scan(counts.begin(), counts.end(), d.begin(), std::size_t{0});
    return d;
  }
  return countsArg(obj, name, static_cast<int>(counts.size()));
}

// The elements a buffer must hold for blocks at displs of counts.
std::size_t extent(const Counts& counts, const Counts& displs) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  return end;
}

std::size_t perRank(const Buffer& b, int size, const char* what) {
  if (b.count() % static_cast<std::size_t>(size) != 0) {
    throw py::value_error(b.name() + " holds " + std::to_string(b.count()) + " elements, "
                          "which " + what + " must split into " + std::to_string(size) +
                          " equal blocks");
  }
  return b.count() / static_cast<std::size_t>(size);
}

int rootArg(int root, int size) {
  if (root < 0 || root >= size) {
    throw py::value_error("root " + std::to_string(root) + " is not a rank of this "
                          "communicator (0 to " + std::to_string(size - 1) + ")");
  }
  return root;
}

// ---- the calls. Each checks what the library cannot (the buffers' sizes: it gets only
// pointers) and leaves the rest (peers, counts against other ranks) to it.

Call allreduce(Communicator&, py::handle sendbuf, py::handle recvbuf, py::handle op,
               const Common& c) {
  Call call;
  const ReduceOp rop = reduceOpArg(op);
  Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none(), c);
  const void* s = send.data();
  void* r = send.data();
  if (!recvbuf.is_none()) {
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    recv.expectCount(send.count(), "an all-reduce of sendbuf");
    recv.expectSameType(send);
    r = recv.data();
    call.buffers.push_back(std::move(recv));
  }
  const std::size_t n = send.count();
  const DataType t = send.dtype();
  call.buffers.push_back(std::move(send));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.allreduce(s, r, n, t, rop, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.allreduceAsync(s, r, n, t, rop, o); };
  return call;
}

Call broadcast(Communicator& comm, py::handle sendbuf, py::handle recvbuf, int root,
               const Common& c) {
  Call call;
  rootArg(root, comm.size());
  const bool isRoot = comm.rank() == root;
  if (recvbuf.is_none()) {  // in place
    Buffer buf = take(sendbuf, "buf", true, c);
    void* p = buf.data();
    const std::size_t n = buf.count();
    const DataType t = buf.dtype();
    call.buffers.push_back(std::move(buf));
    call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.broadcast(p, p, n, t, root, o); };
    call.async = [=](Communicator& cm, const CallOptions& o) { return cm.broadcastAsync(p, p, n, t, root, o); };
    return call;
  }
  Buffer recv = take(recvbuf, "recvbuf", true, c);
  const void* s = nullptr;
  if (isRoot || !sendbuf.is_none()) {
    if (sendbuf.is_none()) throw py::value_error("sendbuf is None on the root of a broadcast");
    Buffer send = take(sendbuf, "sendbuf", false, c);
    send.expectCount(recv.count(), "a broadcast into recvbuf");
    send.expectSameType(recv);
    s = send.data();
    call.buffers.push_back(std::move(send));
  }
  void* r = recv.data();
  const std::size_t n = recv.count();
  const DataType t = recv.dtype();
  call.buffers.push_back(std::move(recv));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.broadcast(s, r, n, t, root, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.broadcastAsync(s, r, n, t, root, o); };
  return call;
}

Call reduce(Communicator& comm, py::handle sendbuf, py::handle recvbuf, py::handle op, int root,
            const Common& c) {
  Call call;
  const ReduceOp rop = reduceOpArg(op);
  rootArg(root, comm.size());
  const bool isRoot = comm.rank() == root;
  // In place (recvbuf None) writes sendbuf on the root only.
  Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none() && isRoot, c);
  const void* s = send.data();
  void* r = recvbuf.is_none() ? send.data() : nullptr;
  if (!recvbuf.is_none()) {
    Buffer recv = take(recvbuf, "recvbuf", isRoot, c);
    recv.expectCount(send.count(), "a reduce of sendbuf");
    recv.expectSameType(send);
    r = recv.data();
    call.buffers.push_back(std::move(recv));
  }
  const std::size_t n = send.count();
  const DataType t = send.dtype();
  call.buffers.push_back(std::move(send));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.reduce(s, r, n, t, rop, root, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.reduceAsync(s, r, n, t, rop, root, o); };
  return call;
}

Call allgather(Communicator& comm, py::handle sendbuf, py::handle recvbuf, const Common& c) {
  Call call;
  Buffer recv = take(recvbuf, "recvbuf", true, c);
  const int size = comm.size();
  std::size_t n = 0;
  const void* s = nullptr;
  if (sendbuf.is_none()) {  // in place: this rank's block of recvbuf
    n = perRank(recv, size, "an in-place all-gather");
    s = at(recv, n * static_cast<std::size_t>(comm.rank()));
  } else {
    Buffer send = take(sendbuf, "sendbuf", false, c);
    n = send.count();
    recv.expectCount(n * static_cast<std::size_t>(size), "an all-gather of sendbuf from every rank");
    recv.expectSameType(send);
    s = send.data();
    call.buffers.push_back(std::move(send));
  }
  void* r = recv.data();
  const DataType t = recv.dtype();
  call.buffers.push_back(std::move(recv));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.allgather(s, r, n, t, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.allgatherAsync(s, r, n, t, o); };
  return call;
}

Call reduceScatter(Communicator& comm, py::handle sendbuf, py::handle recvbuf, py::handle op,
                   const Common& c) {
  Call call;
  const ReduceOp rop = reduceOpArg(op);
  const int size = comm.size();
  Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none(), c);
  std::size_t n = 0;
  void* r = nullptr;
  if (recvbuf.is_none()) {  // in place: the result lands in this rank's block of sendbuf
    n = perRank(send, size, "an in-place reduce-scatter");
    r = at(send, n * static_cast<std::size_t>(comm.rank()));
  } else {
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    n = recv.count();
    send.expectCount(n * static_cast<std::size_t>(size), "a reduce-scatter into recvbuf on every rank");
    recv.expectSameType(send);
    r = recv.data();
    call.buffers.push_back(std::move(recv));
  }
  const void* s = send.data();
  const DataType t = send.dtype();
  call.buffers.push_back(std::move(send));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.reduceScatter(s, r, n, t, rop, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.reduceScatterAsync(s, r, n, t, rop, o); };
  return call;
}

// A gather's or a scatter's buffers: the root's whole one (a block per rank) and each rank's
// part, the part None at the root for in place (the root's block of the whole).
struct Rooted {
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t n = 0;
  DataType dtype = DataType::kUint8;
};

Rooted rooted(Call& call, Communicator& comm, py::handle wholeArg, py::handle partArg, int root,
              bool gathering, const Common& c) {
  const std::string what = gathering ? "gather" : "scatter";
  const char* wholeName = gathering ? "recvbuf" : "sendbuf";
  const char* partName = gathering ? "sendbuf" : "recvbuf";
  const int size = comm.size();
  rootArg(root, size);
  const bool isRoot = comm.rank() == root;
  const bool inPlace = isRoot && partArg.is_none();
  std::size_t n = 0;
  void* whole = nullptr;
  void* part = nullptr;
  std::optional<DataType> t;
  if (isRoot) {
    if (wholeArg.is_none()) throw py::value_error(std::string(wholeName) + " is None on the root of a " + what);
    // A gather writes the whole; an in-place scatter leaves the root's block, written too.
    Buffer w = take(wholeArg, wholeName, gathering || inPlace, c);
    if (inPlace) {
      n = perRank(w, size, ("an in-place " + what).c_str());
      part = at(w, n * static_cast<std::size_t>(root));
    }
    whole = w.data();
    t = w.dtype();
    call.buffers.push_back(std::move(w));
  }
  if (!inPlace) {
    if (partArg.is_none())
      throw py::value_error(std::string(partName) + " is None on a rank that is not the root of a " + what);
    Buffer p = take(partArg, partName, !gathering, c);
    n = p.count();
    if (isRoot) {
      call.buffers.back().expectCount(n * static_cast<std::size_t>(size),
                                      ("a " + what + " of " + partName + " on every rank").c_str());
      p.expectSameType(call.buffers.back());
    }
    part = p.data();
    t = p.dtype();
    call.buffers.push_back(std::move(p));
  }
  return gathering ? Rooted{part, whole, n, *t} : Rooted{whole, part, n, *t};
}

Call gather(Communicator& comm, py::handle sendbuf, py::handle recvbuf, int root, const Common& c) {
  Call call;
  const Rooted b = rooted(call, comm, recvbuf, sendbuf, root, true, c);
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.gather(b.send, b.recv, b.n, b.dtype, root, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.gatherAsync(b.send, b.recv, b.n, b.dtype, root, o); };
  return call;
}

Call scatter(Communicator& comm, py::handle sendbuf, py::handle recvbuf, int root, const Common& c) {
  Call call;
  const Rooted b = rooted(call, comm, sendbuf, recvbuf, root, false, c);
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.scatter(b.send, b.recv, b.n, b.dtype, root, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.scatterAsync(b.send, b.recv, b.n, b.dtype, root, o); };
  return call;
}

Call alltoall(Communicator& comm, py::handle sendbuf, py::handle recvbuf, const Common& c) {
  Call call;
  Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none(), c);
  const std::size_t n = perRank(send, comm.size(), "an all-to-all");
  void* r = send.data();
  if (!recvbuf.is_none()) {
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    recv.expectCount(send.count(), "an all-to-all of sendbuf");
    recv.expectSameType(send);
    r = recv.data();
    call.buffers.push_back(std::move(recv));
  }
  const void* s = send.data();
  const DataType t = send.dtype();
  call.buffers.push_back(std::move(send));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.alltoall(s, r, n, t, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.alltoallAsync(s, r, n, t, o); };
  return call;
}

Call allgatherv(Communicator& comm, py::handle sendbuf, py::handle recvbuf, py::handle recvcounts,
                py::handle displs, const Common& c) {
  Call call;
  const Counts counts = countsArg(recvcounts, "recvcounts", comm.size());
  const Counts d = displsArg(displs, "displs", counts);
  Buffer recv = take(recvbuf, "recvbuf", true, c);
  recv.expectAtLeast(extent(counts, d), "an all-gather-v with these recvcounts and displs");
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t n = counts[me];
  const void* s = at(recv, d[me]);  // in place when sendbuf is None
  if (!sendbuf.is_none()) {
    Buffer send = take(sendbuf, "sendbuf", false, c);
    send.expectCount(n, "recvcounts[rank]");
    send.expectSameType(recv);
    s = send.data();
    call.buffers.push_back(std::move(send));
  }
  void* r = recv.data();
  const DataType t = recv.dtype();
  call.buffers.push_back(std::move(recv));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.allgatherv(s, n, r, counts, d, t, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.allgathervAsync(s, n, r, counts, d, t, o); };
  return call;
}

Call reduceScatterv(Communicator& comm, py::handle sendbuf, py::handle recvbuf,
                    py::handle recvcounts, py::handle op, const Common& c) {
  Call call;
  const ReduceOp rop = reduceOpArg(op);
  const Counts counts = countsArg(recvcounts, "recvcounts", comm.size());
  const Counts d = displsArg(py::none(), "", counts);
  const auto me = static_cast<std::size_t>(comm.rank());
  Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none(), c);
  send.expectCount(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), "the sum of recvcounts");
  void* r = at(send, d[me]);  // in place when recvbuf is None
  if (!recvbuf.is_none()) {
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    recv.expectCount(counts[me], "recvcounts[rank]");
    recv.expectSameType(send);
    r = recv.data();
    call.buffers.push_back(std::move(recv));
  }
  const void* s = send.data();
  const DataType t = send.dtype();
  call.buffers.push_back(std::move(send));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.reduceScatterv(s, r, counts, t, rop, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.reduceScattervAsync(s, r, counts, t, rop, o); };
  return call;
}

Call gatherv(Communicator& comm, py::handle sendbuf, py::handle recvbuf, py::handle recvcounts,
             py::handle displs, int root, const Common& c) {
  Call call;
  rootArg(root, comm.size());
  const Counts counts = countsArg(recvcounts, "recvcounts", comm.size());
  const Counts d = displsArg(displs, "displs", counts);
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t n = counts[me];
  const void* s = nullptr;
  void* r = nullptr;
  std::optional<DataType> t;
  if (comm.rank() == root) {
    if (recvbuf.is_none()) throw py::value_error("recvbuf is None on the root of a gather-v");
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    recv.expectAtLeast(extent(counts, d), "a gather-v with these recvcounts and displs");
    r = recv.data();
    s = at(recv, d[me]);  // in place when sendbuf is None
    t = recv.dtype();
    call.buffers.push_back(std::move(recv));
  }
  if (!sendbuf.is_none()) {
    Buffer send = take(sendbuf, "sendbuf", false, c);
    send.expectCount(n, "recvcounts[rank]");
    if (t) send.expectSameType(call.buffers.back());
    s = send.data();
    t = send.dtype();
    call.buffers.push_back(std::move(send));
  } else if (comm.rank() != root) {
    throw py::value_error("sendbuf is None on a rank that is not the root of a gather-v");
  }
  const DataType dt = *t;
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.gatherv(s, n, r, counts, d, dt, root, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.gathervAsync(s, n, r, counts, d, dt, root, o); };
  return call;
}

Call scatterv(Communicator& comm, py::handle sendbuf, py::handle recvbuf, py::handle sendcounts,
              py::handle displs, int root, const Common& c) {
  Call call;
  rootArg(root, comm.size());
  const Counts counts = countsArg(sendcounts, "sendcounts", comm.size());
  const Counts d = displsArg(displs, "displs", counts);
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t n = counts[me];
  const void* s = nullptr;
  void* r = nullptr;
  std::optional<DataType> t;
  if (comm.rank() == root) {
    if (sendbuf.is_none()) throw py::value_error("sendbuf is None on the root of a scatter-v");
    Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none(), c);
    send.expectAtLeast(extent(counts, d), "a scatter-v with these sendcounts and displs");
    s = send.data();
    r = at(send, d[me]);  // in place when recvbuf is None
    t = send.dtype();
    call.buffers.push_back(std::move(send));
  }
  if (!recvbuf.is_none()) {
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    recv.expectCount(n, "sendcounts[rank]");
    if (t) recv.expectSameType(call.buffers.back());
    r = recv.data();
    t = recv.dtype();
    call.buffers.push_back(std::move(recv));
  } else if (comm.rank() != root) {
    throw py::value_error("recvbuf is None on a rank that is not the root of a scatter-v");
  }
  const DataType dt = *t;
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.scatterv(s, counts, d, r, n, dt, root, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.scattervAsync(s, counts, d, r, n, dt, root, o); };
  return call;
}

Call alltoallv(Communicator& comm, py::handle sendbuf, py::handle recvbuf, py::handle sendcounts,
               py::handle recvcounts, py::handle sdispls, py::handle rdispls, const Common& c) {
  Call call;
  const Counts sc = countsArg(sendcounts, "sendcounts", comm.size());
  const Counts rc = countsArg(recvcounts, "recvcounts", comm.size());
  const Counts sd = displsArg(sdispls, "sdispls", sc);
  const Counts rd = displsArg(rdispls, "rdispls", rc);
  Buffer send = take(sendbuf, "sendbuf", recvbuf.is_none(), c);
  send.expectAtLeast(extent(sc, sd), "an all-to-all-v with these sendcounts and sdispls");
  void* r = send.data();  // in place when recvbuf is None (the library checks the arrays agree)
  if (!recvbuf.is_none()) {
    Buffer recv = take(recvbuf, "recvbuf", true, c);
    recv.expectAtLeast(extent(rc, rd), "an all-to-all-v with these recvcounts and rdispls");
    recv.expectSameType(send);
    r = recv.data();
    call.buffers.push_back(std::move(recv));
  } else {
    send.expectAtLeast(extent(rc, rd), "an in-place all-to-all-v with these recvcounts and rdispls");
  }
  const void* s = send.data();
  const DataType t = send.dtype();
  call.buffers.push_back(std::move(send));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.alltoallv(s, sc, sd, r, rc, rd, t, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.alltoallvAsync(s, sc, sd, r, rc, rd, t, o); };
  return call;
}

Call send(Communicator&, py::handle buf, int peer, int tag, const Common& c) {
  Call call;
  Buffer b = take(buf, "buf", false, c);
  const void* p = b.data();
  const std::size_t n = b.count();
  const DataType t = b.dtype();
  call.buffers.push_back(std::move(b));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.send(p, n, t, peer, tag, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.sendAsync(p, n, t, peer, tag, o); };
  return call;
}

Call recv(Communicator&, py::handle buf, int peer, int tag, const Common& c) {
  Call call;
  Buffer b = take(buf, "buf", true, c);
  void* p = b.data();
  const std::size_t n = b.count();
  const DataType t = b.dtype();
  call.buffers.push_back(std::move(b));
  call.blocking = [=](Communicator& cm, const CallOptions& o) { return cm.recv(p, n, t, peer, tag, o); };
  call.async = [=](Communicator& cm, const CallOptions& o) { return cm.recvAsync(p, n, t, peer, tag, o); };
  return call;
}

Call barrier(Communicator&, const Common&) {
  Call call;
  call.blocking = [](Communicator& cm, const CallOptions& o) { return cm.barrier(o); };
  call.async = [](Communicator& cm, const CallOptions& o) { return cm.barrierAsync(o); };
  return call;
}

// Binds `name` (blocking, returns None) and `name_async` (returns a tutti.Work) for one
// prepare function; every call takes dtype=, timeout= and algorithm= by keyword.
template <typename... Args, typename Prepare, typename... Extra>
void bindBoth(CommClass& cls, const char* name, Prepare prepare, const char* doc, Extra... extra) {
  cls.def(
      name,
      [prepare](Communicator& comm, Args... args, py::object dtype, std::optional<double> timeout,
                const std::string& algorithm) {
        Call call = prepare(comm, args..., common(dtype, timeout, algorithm));
        Status s;
        {
          py::gil_scoped_release release;
          s = call.blocking(comm, call.options);
        }
        check(s);
      },
      extra..., py::kw_only(), py::arg("dtype") = py::none(), py::arg("timeout") = py::none(),
      py::arg("algorithm") = "", doc);
  const std::string asyncName = std::string(name) + "_async";
  cls.def(
      asyncName.c_str(),
      [prepare](Communicator& comm, Args... args, py::object dtype, std::optional<double> timeout,
                const std::string& algorithm) {
        Call call = prepare(comm, args..., common(dtype, timeout, algorithm));
        Work w;
        {
          py::gil_scoped_release release;
          w = call.async(comm, call.options);
        }
        return PyWork(std::move(w), std::move(call.buffers));
      },
      extra..., py::kw_only(), py::arg("dtype") = py::none(), py::arg("timeout") = py::none(),
      py::arg("algorithm") = "", (std::string("Starts ") + name + "; returns a tutti.Work.").c_str());
}

}  // namespace

CallOptions callOptions(std::optional<double> timeoutSeconds, const std::string& algorithm) {
  CallOptions o;
  if (timeoutSeconds) {
    if (!(*timeoutSeconds >= 0) || !std::isfinite(*timeoutSeconds)) {
      throw py::value_error("timeout must be a finite number of seconds >= 0");
    }
    o.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(*timeoutSeconds * 1000)));
  }
  o.algorithm = algorithm;
  return o;
}

void bindCalls(CommClass& cls) {
  using py::arg;
  const auto none = py::none();
  bindBoth<py::object, py::object, py::object>(cls, "allreduce", &allreduce,
      "recvbuf[i] = op over ranks of sendbuf[i] (recvbuf None: in place, into sendbuf).",
      arg("sendbuf"), arg("recvbuf") = none, arg("op") = "sum");
  bindBoth<py::object, py::object, int>(cls, "broadcast", &broadcast,
      "recvbuf = the root's sendbuf (recvbuf None: in place, sendbuf is the buffer on every "
      "rank; otherwise sendbuf may be None off the root).",
      arg("sendbuf"), arg("recvbuf") = none, arg("root") = 0);
  bindBoth<py::object, py::object, py::object, int>(cls, "reduce", &reduce,
      "The root's recvbuf[i] = op over ranks of sendbuf[i] (recvbuf None: in place).",
      arg("sendbuf"), arg("recvbuf") = none, arg("op") = "sum", arg("root") = 0);
  bindBoth<py::object, py::object>(cls, "allgather", &allgather,
      "recvbuf = every rank's sendbuf in rank order (sendbuf None: in place, each rank's block "
      "of recvbuf is its input).",
      arg("sendbuf"), arg("recvbuf"));
  bindBoth<py::object, py::object, py::object>(cls, "reduce_scatter", &reduceScatter,
      "recvbuf = op over ranks of their sendbuf's block `rank` (recvbuf None: in place, the "
      "result in this rank's block of sendbuf).",
      arg("sendbuf"), arg("recvbuf") = none, arg("op") = "sum");
  bindBoth<py::object, py::object, int>(cls, "gather", &gather,
      "The root's recvbuf = every rank's sendbuf in rank order (recvbuf is ignored off the "
      "root; sendbuf None at the root: in place).",
      arg("sendbuf"), arg("recvbuf") = none, arg("root") = 0);
  bindBoth<py::object, py::object, int>(cls, "scatter", &scatter,
      "recvbuf = block `rank` of the root's sendbuf (sendbuf is ignored off the root; recvbuf "
      "None at the root: in place).",
      arg("sendbuf"), arg("recvbuf") = none, arg("root") = 0);
  bindBoth<py::object, py::object>(cls, "alltoall", &alltoall,
      "recvbuf block b = block `rank` of rank b's sendbuf (recvbuf None: in place).",
      arg("sendbuf"), arg("recvbuf") = none);
  bindBoth<py::object, py::object, py::object, py::object>(cls, "allgatherv", &allgatherv,
      "recvbuf[displs[r]:][:recvcounts[r]] = rank r's sendbuf; displs None: packed; sendbuf "
      "None: in place.",
      arg("sendbuf"), arg("recvbuf"), arg("recvcounts"), arg("displs") = none);
  bindBoth<py::object, py::object, py::object, py::object>(cls, "reduce_scatterv", &reduceScatterv,
      "recvbuf (recvcounts[rank] elements) = op over ranks of their sendbuf's block `rank`, "
      "sendbuf holding the blocks packed (recvbuf None: in place).",
      arg("sendbuf"), arg("recvbuf"), arg("recvcounts"), arg("op") = "sum");
  bindBoth<py::object, py::object, py::object, py::object, int>(cls, "gatherv", &gatherv,
      "The root's recvbuf[displs[r]:][:recvcounts[r]] = rank r's sendbuf.",
      arg("sendbuf"), arg("recvbuf"), arg("recvcounts"), arg("displs") = none, arg("root") = 0);
  bindBoth<py::object, py::object, py::object, py::object, int>(cls, "scatterv", &scatterv,
      "recvbuf = the root's sendbuf[displs[rank]:][:sendcounts[rank]].",
      arg("sendbuf"), arg("recvbuf"), arg("sendcounts"), arg("displs") = none, arg("root") = 0);
  bindBoth<py::object, py::object, py::object, py::object, py::object, py::object>(cls, "alltoallv", &alltoallv,
      "This rank sends sendcounts[b] elements at sdispls[b] to rank b and receives "
      "recvcounts[b] at rdispls[b] from it (displacements None: packed).",
      arg("sendbuf"), arg("recvbuf"), arg("sendcounts"), arg("recvcounts"),
      arg("sdispls") = none, arg("rdispls") = none);
  bindBoth<py::object, int, int>(cls, "send", &send, "Sends buf to rank peer (itself included).",
      arg("buf"), arg("peer"), arg("tag") = 0);
  bindBoth<py::object, int, int>(cls, "recv", &recv, "Receives into buf from rank peer.",
      arg("buf"), arg("peer"), arg("tag") = 0);
  bindBoth<>(cls, "barrier", &barrier, "Returns once every rank has entered the barrier.");
}

}  // namespace tutti::python
