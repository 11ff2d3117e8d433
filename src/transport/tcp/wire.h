#pragma once
// The TCP wire format: every frame starts with a fixed 48-byte header, validated on
// receipt so that garbage on a socket is a kProtocolError naming the peer, never a crash
// or a hang. Layout (little-endian):
//
//   0  u32 magic    "tutt" (0x74747574)
//   4  u8  version  kWireVersion
//   5  u8  type     FrameType
//   6  u16 flags    DATA: kFlagStriped or 0; 0 on every other frame
//   8  u64 tag      Tag of a DATA or PART frame (0 otherwise)
//  16  u64 length   DATA: the message's length; others: payload bytes after the header
//  24  u64 stamp.what   the call a DATA frame belongs to (CallStamp; 0 otherwise);
//                       PART: the part's offset in its message
//  32  u64 stamp.count  (a message's stamp has no open bits: CallStamp::open is not sent);
//                       PART: the message's length
//  40  u32 aux      ABORT: the ErrorCode; 0 otherwise
//  44  u32 check    FNV-1a of bytes 0..43, catches torn or shifted streams
//
// A CLOSE frame says goodbye: the sender destroyed its communicator in good order. An ABORT
// frame says the sender's communicator failed; its payload (at most kMaxAbortBytes) is the
// error text, `tag` is the rank at fault plus one (0: none known) and `aux` its ErrorCode,
// so every rank can name the original culprit rather than the messenger.
//
// A HELLO frame opens every connection: its 24-byte payload carries the communicator's
// unique id, the connecting rank and the world size, so that a connection from another
// job, or from a rank that does not exist, is refused, and which of the pair's streams the
// connection is and how many the pair has (TUTTI_TCP_STREAMS).
//
// Striping (stripeParts): a DATA frame flagged kFlagStriped declares the whole message's
// length but carries only its first part; part i (1..streams-1) follows as a PART frame on
// stream i. Every stream carries the parts in the order stream 0 carries their DATA frames,
// and a PART frame is written only once its DATA frame has started, so a receiver that has
// read a DATA frame knows where each stream's next part goes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/link.h"
#include "transport/tag.h"
#include "tutti/status.h"

namespace tutti::tcp {

inline constexpr std::uint32_t kWireMagic = 0x74747574u;
inline constexpr std::uint8_t kWireVersion = 3;
inline constexpr std::size_t kHeaderBytes = 48;
inline constexpr std::size_t kHelloBytes = 24;
/// Largest payload a frame may declare (1 TiB); anything larger is garbage.
inline constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{1} << 40;
/// Largest error text an ABORT frame may carry.
inline constexpr std::size_t kMaxAbortBytes = 1024;

/// Connections per peer pair, at most (TUTTI_TCP_STREAMS).
inline constexpr int kMaxStreams = 16;
/// DATA flag: the message is striped across the pair's streams.
inline constexpr std::uint16_t kFlagStriped = 1;

enum class FrameType : std::uint8_t { kData = 1, kHello = 2, kClose = 3, kAbort = 4, kPart = 5 };

struct FrameHeader {
  FrameType type = FrameType::kData;
  Tag tag = 0;
  std::uint64_t length = 0;
  std::uint32_t aux = 0;
  CallStamp stamp;  // DATA frames of collectives
  bool striped = false;  // DATA: kFlagStriped
  // PART frames: where the part lies in its message, and the message's length.
  std::uint64_t partOffset = 0;
  std::uint64_t partTotal = 0;
};

/// Where part `index` of a striped message of `bytes` bytes over `streams` streams lies:
/// contiguous parts of equal length (rounded up to 64 bytes; the last ones take the rest,
/// possibly nothing). Part 0 rides on the DATA frame, part i on stream i.
struct PartRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
PartRange stripePart(std::uint64_t bytes, int streams, int index);

using HeaderBytes = std::array<std::uint8_t, kHeaderBytes>;

HeaderBytes encodeHeader(const FrameHeader& header);

/// Validates and decodes a header; `peer` names the sender in the error message.
Result<FrameHeader> decodeHeader(const std::uint8_t* bytes, const std::string& peer);

/// The failure an ABORT frame (`header`, its payload `text`) from `sender` (`senderName`,
/// rank `sender` of a `worldSize`-rank world) reports: its code, its text made printable
/// (or, empty, a sentence naming the sender), blaming the rank the frame names when that
/// rank is in the world and the sender otherwise.
Status abortStatus(const FrameHeader& header, std::string text, int sender, int worldSize,
                   const std::string& senderName);

struct Hello {
  std::uint64_t commUid = 0;
  std::uint32_t rank = 0;
  std::uint32_t size = 0;
  std::uint32_t stream = 0;   // which of the pair's connections this is
  std::uint32_t streams = 1;  // how many the pair has (1..kMaxStreams)
};

std::array<std::uint8_t, kHelloBytes> encodeHello(const Hello& hello);
Result<Hello> decodeHello(const std::uint8_t* bytes, std::size_t length, const std::string& peer);

}  // namespace tutti::tcp
