#include "core/call_checks.h"

#include <cstdint>
#include <string>

#include "base/macros.h"
#include "base/strings.h"
#include "core/comm_impl.h"
#include "schedule/collective.h"

namespace tutti::detail {
namespace {

bool isPointToPoint(Collective kind) {
  return kind == Collective::kSend || kind == Collective::kRecv;
}

CallCheck shared(Status status) { return CallCheck{std::move(status), false}; }
CallCheck onlyHere(Status status) { return CallCheck{std::move(status), true}; }

// True when the buffers relate as the collective's in-place convention says
// (collective.h): the input at its offset in the output, or the output in the input.
// `r.spec.inPlace` is false on entry and on return; it is set only to ask for the layout
// (a copy of the spec would copy its four arrays on every call).
bool buffersInPlace(OpRequest& r) {
  const auto* in = static_cast<const char*>(r.input);
  const auto* out = static_cast<const char*>(r.output);
  if (in == nullptr || out == nullptr) return false;
  r.spec.inPlace = true;
  const BufferLayout aliased = bufferLayout(r.spec);
  r.spec.inPlace = false;
  const std::size_t elem = dataTypeSize(r.spec.dtype);
  if (aliased.inputInOutputAt && in == out + *aliased.inputInOutputAt * elem) return true;
  return aliased.outputInInputAt && out == in + *aliased.outputInInputAt * elem;
}

// What an in-place call would have passed, for the overlap error: "; in place needs
// sendbuf == recvbuf + 8 elements (0x...)", or "" for collectives without an in-place form.
std::string inPlaceHint(const OpRequest& r) {
  CollectiveSpec asInPlace = r.spec;
  asInPlace.inPlace = true;
  const BufferLayout aliased = bufferLayout(asInPlace);
  const std::size_t elem = dataTypeSize(r.spec.dtype);
  const auto* in = static_cast<const char*>(r.input);
  const auto* out = static_cast<const char*>(r.output);
  if (aliased.inputInOutputAt) {
    const std::uint64_t at = *aliased.inputInOutputAt;
    return strFormat("; in place needs sendbuf == recvbuf + %llu elements (%p)",
                     static_cast<unsigned long long>(at),
                     static_cast<const void*>(out + at * elem));
  }
  if (aliased.outputInInputAt) {
    const std::uint64_t at = *aliased.outputInInputAt;
    return strFormat("; in place needs recvbuf == sendbuf + %llu elements (%p)",
                     static_cast<unsigned long long>(at),
                     static_cast<const void*>(in + at * elem));
  }
  return "";
}

// Null buffers that must hold data, buffers that would run past the end of the address
// space, and send and receive buffers that overlap without being in place.
Status checkBuffers(const OpRequest& r) {
  const CollectiveSpec& spec = r.spec;
  const char* name = collectiveName(spec.kind);
  const BufferLayout layout = bufferLayout(spec);
  const std::uint64_t elem = dataTypeSize(spec.dtype);
  // Both at most kMaxBufferBytes (validateSharedArgs / validateOwnArgs).
  const std::uint64_t inBytes = layout.inputCount * elem;
  const std::uint64_t outBytes = layout.outputCount * elem;
  const auto in = reinterpret_cast<std::uintptr_t>(r.input);
  const auto out = reinterpret_cast<std::uintptr_t>(r.output);
  TUTTI_CHECK_ARG(inBytes == 0 || r.input != nullptr,
                  "%s: the send buffer (sendbuf) is null, but this rank sends %llu elements "
                  "from it", name, static_cast<unsigned long long>(layout.inputCount));
  TUTTI_CHECK_ARG(outBytes == 0 || r.output != nullptr,
                  "%s: the receive buffer (recvbuf) is null, but this rank receives %llu "
                  "elements into it", name, static_cast<unsigned long long>(layout.outputCount));
  TUTTI_CHECK_ARG(in <= UINTPTR_MAX - inBytes,
                  "%s: the send buffer at %p cannot hold %llu bytes (it would wrap around the "
                  "address space)", name, r.input, static_cast<unsigned long long>(inBytes));
  TUTTI_CHECK_ARG(out <= UINTPTR_MAX - outBytes,
                  "%s: the receive buffer at %p cannot hold %llu bytes (it would wrap around "
                  "the address space)", name, r.output, static_cast<unsigned long long>(outBytes));
  if (spec.inPlace || inBytes == 0 || outBytes == 0) return Status::Ok();
  TUTTI_CHECK_ARG(in + inBytes <= out || out + outBytes <= in,
                  "%s: the send buffer (%p, %llu bytes) and the receive buffer (%p, %llu "
                  "bytes) overlap without being in place%s",
                  name, r.input, static_cast<unsigned long long>(inBytes), r.output,
                  static_cast<unsigned long long>(outBytes), inPlaceHint(r).c_str());
  return Status::Ok();
}

// allgatherv and gatherv state this rank's send count, scatterv its receive count, besides
// the shared array; the two must agree.
Status checkOwnCount(const OpRequest& r) {
  const CollectiveSpec& spec = r.spec;
  if (!r.ownCount) return Status::Ok();
  const bool scatter = spec.kind == Collective::kScatterV;
  const std::uint64_t entry = spec.counts[static_cast<std::size_t>(spec.rank)];
  TUTTI_CHECK_ARG(*r.ownCount == entry, "%s: %s %llu differs from this rank's entry %s[%d] = %llu",
                  collectiveName(spec.kind), scatter ? "recvcount" : "sendcount",
                  static_cast<unsigned long long>(*r.ownCount), scatter ? "sendcounts" : "recvcounts",
                  spec.rank, static_cast<unsigned long long>(entry));
  return Status::Ok();
}

}  // namespace

CallCheck checkCall(OpRequest& r, int rank, int size) {
  CollectiveSpec& spec = r.spec;
  spec.rank = rank;
  spec.size = size;
  spec.inPlace = false;
  if (Status s = validateSharedArgs(spec); !s.ok()) return shared(std::move(s));
  // A send and its receive name the same tag, so both sides see a bad one.
  if (isPointToPoint(spec.kind) && r.tag < 0) {
    return shared(Status(ErrorCode::kInvalidArgument,
                         strFormat("%s: tag %d is negative", collectiveName(spec.kind), r.tag)));
  }
  if (Status s = validateOwnArgs(spec); !s.ok()) return onlyHere(std::move(s));
  if (Status s = checkOwnCount(r); !s.ok()) return onlyHere(std::move(s));
  spec.inPlace = buffersInPlace(r);
  // alltoallv in place has a rule of its own (equal send and receive arrays).
  if (spec.inPlace && spec.kind == Collective::kAllToAllV) {
    if (Status s = validateOwnArgs(spec); !s.ok()) return onlyHere(std::move(s));
  }
  if (Status s = checkBuffers(r); !s.ok()) return onlyHere(std::move(s));
  return CallCheck{};
}

namespace {

// Calls whose verdict depends only on the scalar fields CallCheckCache compares.
bool cacheable(const OpRequest& r) {
  const CollectiveSpec& s = r.spec;
  return !r.ownCount && s.counts.empty() && s.displs.empty() && s.recvCounts.empty() &&
         s.recvDispls.empty();
}

}  // namespace

bool CallCheckCache::reuse(OpRequest& r, int rank, int size) const {
  CollectiveSpec& s = r.spec;
  if (!valid_ || s.kind != kind_ || s.count != count_ || s.dtype != dtype_ || s.op != op_ ||
      s.root != root_ || s.peer != peer_ || r.tag != tag_ || r.input != input_ ||
      r.output != output_ || !cacheable(r))
    return false;
  s.rank = rank;
  s.size = size;
  s.inPlace = inPlace_;
  return true;
}

void CallCheckCache::remember(const OpRequest& r) {
  valid_ = cacheable(r);
  const CollectiveSpec& s = r.spec;
  kind_ = s.kind;
  count_ = s.count;
  dtype_ = s.dtype;
  op_ = s.op;
  root_ = s.root;
  peer_ = s.peer;
  tag_ = r.tag;
  input_ = r.input;
  output_ = r.output;
  inPlace_ = s.inPlace;
}

}  // namespace tutti::detail
