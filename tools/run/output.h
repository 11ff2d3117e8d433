#pragma once
// Rank-tagged output for tutti-run: each rank's stdout and stderr arrive through a pipe in
// arbitrary chunks; LinePrefixer turns them into whole lines prefixed "[r] " so that the
// launcher can write them without lines of different ranks interleaving.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::run {

/// Cuts a byte stream into lines and prefixes each. Not thread-safe; one per pipe.
///
/// A line longer than `maxLineBytes` (without its newline) is emitted in pieces of that
/// size, each terminated by '\n' and prefixed, so that a rank printing without newlines
/// cannot make the launcher's memory grow without bound.
class LinePrefixer {
 public:
  /// Default bound on a buffered partial line.
  static constexpr std::size_t kDefaultMaxLineBytes = 64 * 1024;

  /// `prefix` is put in front of every emitted line ("" for untagged output, which is still
  /// cut into whole lines). `maxLineBytes` must be at least 1.
  explicit LinePrefixer(std::string prefix, std::size_t maxLineBytes = kDefaultMaxLineBytes);

  /// Consumes `data` and appends every line it completes, prefixed and ending in '\n',
  /// to `*out`. Bytes after the last newline stay buffered.
  void feed(std::string_view data, std::string* out);

  /// Appends the buffered partial line, if any, prefixed and with a '\n' added (the stream
  /// ended without one). Afterwards nothing is buffered.
  void flush(std::string* out);

  /// Bytes of the partial line held back; always <= maxLineBytes.
  std::size_t pendingBytes() const { return pending_.size(); }

 private:
  void emit(std::string_view line, std::string* out) const;

  std::string prefix_;
  std::size_t maxLineBytes_;
  std::string pending_;
};

/// Writes all of `data` to `fd`, retrying after EINTR and partial writes; the one writer of
/// each of tutti-run's own streams, so a line handed to it in one call stays whole.
/// Blocks while the reader of `fd` applies back-pressure. Returns false on an error such as
/// EPIPE (the reader went away), after which callers drop further output.
bool writeAll(int fd, std::string_view data);

}  // namespace tutti::run
