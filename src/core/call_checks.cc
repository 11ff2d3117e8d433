#include "core/call_checks.h"

#include <cstdint>
#include <string>

#include "base/macros.h"
#include "base/strings.h"
#include "schedule/collective.h"

namespace tutti::detail {
namespace {

CallCheck shared(Status status) { return CallCheck{std::move(status), false}; }
CallCheck onlyHere(Status status) { return CallCheck{std::move(status), true}; }

// `layout` with the in-place offsets (bufferLayout of the spec taken as in place): whether
// the buffers relate as the collective's in-place convention says (collective.h), the input
// at its offset in the output or the output in the input.
bool buffersInPlace(const OpRequest& r, const BufferLayout& layout) {
  const auto* in = static_cast<const char*>(r.input);
  const auto* out = static_cast<const char*>(r.output);
  if (in == nullptr || out == nullptr) return false;
  const std::size_t elem = dataTypeSize(r.spec.dtype);
  if (layout.inputInOutputAt && in == out + *layout.inputInOutputAt * elem) return true;
  return layout.outputInInputAt && out == in + *layout.outputInInputAt * elem;
}

// What an in-place call would have passed, for the overlap error: "; in place needs
// sendbuf == recvbuf + 8 elements (0x...)", or "" for collectives without an in-place form.
std::string inPlaceHint(const OpRequest& r, const BufferLayout& layout) {
  const std::size_t elem = dataTypeSize(r.spec.dtype);
  const auto* in = static_cast<const char*>(r.input);
  const auto* out = static_cast<const char*>(r.output);
  if (layout.inputInOutputAt) {
    const std::uint64_t at = *layout.inputInOutputAt;
    return strFormat("; in place needs sendbuf == recvbuf + %llu elements (%p)",
                     static_cast<unsigned long long>(at),
                     static_cast<const void*>(out + at * elem));
  }
  if (layout.outputInInputAt) {
    const std::uint64_t at = *layout.outputInInputAt;
    return strFormat("; in place needs recvbuf == sendbuf + %llu elements (%p)",
                     static_cast<unsigned long long>(at),
                     static_cast<const void*>(in + at * elem));
  }
  return "";
}

// Null buffers that must hold data, buffers that would run past the end of the address
// space, and send and receive buffers that overlap without being in place.
Status checkBuffers(const OpRequest& r, const BufferLayout& layout) {
  const CollectiveSpec& spec = r.spec;
  const char* name = collectiveName(spec.kind);
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
                  static_cast<unsigned long long>(outBytes), inPlaceHint(r, layout).c_str());
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
  // One layout serves both questions: its counts do not depend on the flag, and with the
  // flag set it also says where an in-place call's buffers sit.
  spec.inPlace = true;
  const BufferLayout layout = bufferLayout(spec);
  spec.inPlace = buffersInPlace(r, layout);
  if (Status s = validateInPlaceArgs(spec); !s.ok()) return onlyHere(std::move(s));
  if (Status s = checkBuffers(r, layout); !s.ok()) return onlyHere(std::move(s));
  return CallCheck{};
}

}  // namespace tutti::detail
