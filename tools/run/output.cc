#include "run/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/assert.h"
#include "base/strings.h"

namespace tutti::run {

LinePrefixer::LinePrefixer(std::string prefix, std::size_t maxLineBytes)
    : prefix_(std::move(prefix)), maxLineBytes_(maxLineBytes) {
  TUTTI_ASSERT_CMP(maxLineBytes_, >=, 1u);
}

void LinePrefixer::emit(std::string_view line, std::string* out) const {
  out->append(prefix_);
  out->append(line);
  out->push_back('\n');
}

void LinePrefixer::feed(std::string_view data, std::string* out) {
  while (!data.empty()) {
    TUTTI_ASSERT_CMP(pending_.size(), <=, maxLineBytes_);
    const std::size_t room = maxLineBytes_ - pending_.size();
    // A newline at index `room` still closes a line of exactly maxLineBytes, so look one
    // byte past the room left.
    const std::size_t scan = std::min(data.size(), room + 1);
    const void* nl = std::memchr(data.data(), '\n', scan);
    if (nl != nullptr) {
      const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - data.data());
      if (pending_.empty()) {
        emit(data.substr(0, len), out);  // common case: no copy through pending_
      } else {
        pending_.append(data.data(), len);
        emit(pending_, out);
        pending_.clear();
      }
      data.remove_prefix(len + 1);
    } else if (data.size() > room) {
      // No newline within the bound: cut the line here and carry on with the rest.
      pending_.append(data.data(), room);
      emit(pending_, out);
      pending_.clear();
      data.remove_prefix(room);
    } else {
      pending_.append(data.data(), data.size());
      data = {};
    }
  }
}

void LinePrefixer::flush(std::string* out) {
  if (pending_.empty()) return;
  emit(pending_, out);
  pending_.clear();
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace tutti::run
