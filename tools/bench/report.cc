#include "bench/report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/strings.h"

namespace tutti::bench {
namespace {

// Column widths, shared by the header and the rows so they always line up.
constexpr int kSizeWidth = 12;
constexpr int kCountWidth = 12;
constexpr int kTypeWidth = 8;
constexpr int kOpWidth = 6;
constexpr int kRootWidth = 6;
constexpr int kTimeWidth = 7;
constexpr int kBwWidth = 6;
constexpr int kWrongWidth = 6;
// Each placement group is four columns, each preceded by two spaces.
constexpr int kGroupWidth = 2 + kTimeWidth + 2 + kBwWidth + 2 + kBwWidth + 2 + kWrongWidth;

struct PlacementCells {
  std::string time;
  std::string algbw;
  std::string busbw;
  std::string wrong;
};

// One line of the table from already formatted cells. The header and the rows both go
// through here, which is what keeps every column under its title.
std::string tableLine(const std::string& size, const std::string& count, const std::string& type,
                      const std::string& op, const std::string& root, const PlacementCells& out,
                      const PlacementCells& in, const std::string& algo) {
  std::string line = strFormat("%*s  %*s  %*s  %*s  %*s", kSizeWidth, size.c_str(), kCountWidth,
                               count.c_str(), kTypeWidth, type.c_str(), kOpWidth, op.c_str(),
                               kRootWidth, root.c_str());
  for (const PlacementCells* cells : {&out, &in}) {
    line += strFormat("  %*s  %*s  %*s  %*s", kTimeWidth, cells->time.c_str(), kBwWidth,
                      cells->algbw.c_str(), kBwWidth, cells->busbw.c_str(), kWrongWidth,
                      cells->wrong.c_str());
  }
  line += "  " + algo;
  // Trailing blanks (an empty algo cell) would only make the header ragged.
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

std::string centred(const char* text, int width) {
  const int length = static_cast<int>(std::strlen(text));
  const int left = (width - length) / 2;
  return std::string(static_cast<std::size_t>(left), ' ') + text +
         std::string(static_cast<std::size_t>(width - length - left), ' ');
}

PlacementCells placementCells(const PlacementResult& result) {
  PlacementCells cells;
  cells.time = formatTime(result.timeUs);
  cells.algbw = strFormat("%.2f", result.algbwGBs);
  cells.busbw = strFormat("%.2f", result.busbwGBs);
  cells.wrong = result.wrong ? strFormat("%lld", static_cast<long long>(*result.wrong)) : "N/A";
  return cells;
}

// One JSON object, on one line so that line tools (grep, jq -c) work on the file too.
// Unchecked rows carry "wrong": null, not 0, so they cannot pass for correct ones.
void appendPlacementJson(const RowResult& row, bool inPlace, std::string& out) {
  const PlacementResult& result = inPlace ? *row.inPlace : row.outOfPlace;
  out += "  {";
  out += "\"collective\": " + jsonString(row.collective);
  out += strFormat(", \"bytes\": %llu, \"count\": %llu", static_cast<unsigned long long>(row.bytes),
                   static_cast<unsigned long long>(row.count));
  out += ", \"dtype\": " + (row.sized ? jsonString(dataTypeName(row.dtype)) : std::string("null"));
  out += ", \"op\": " + (row.op ? jsonString(reduceOpName(*row.op)) : std::string("null"));
  out += strFormat(", \"root\": %d", row.root);
  out += ", \"algorithm\": " + jsonString(row.algorithm);
  if (!row.candidate.empty()) out += ", \"candidate\": " + jsonString(row.candidate);
  out += strFormat(", \"in_place\": %s", inPlace ? "true" : "false");
  out += strFormat(", \"ranks\": %d, \"iters\": %d, \"warmup_iters\": %d", row.ranks, row.iters,
                   row.warmupIters);
  out += ", \"time_average\": " + jsonString(timeAverageName(row.average));
  out += ", \"time_us\": " + jsonNumber(result.timeUs);
  out += ", \"algbw_gbs\": " + jsonNumber(result.algbwGBs);
  out += ", \"busbw_gbs\": " + jsonNumber(result.busbwGBs);
  out += ", \"wrong\": " +
         (result.wrong ? strFormat("%lld", static_cast<long long>(*result.wrong)) : "null");
  out += "}";
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

Status systemError(const std::string& what, const std::string& path, int error) {
  return Status(ErrorCode::kSystemError,
                strFormat("%s '%s': %s", what.c_str(), path.c_str(), std::strerror(error)));
}

}  // namespace

std::string formatSettings(const BenchOptions& options, std::string_view collective,
                           int nranks) {
  const std::string step =
      options.stepFactor > 1
          ? strFormat("%llu(factor)", static_cast<unsigned long long>(options.stepFactor))
          : strFormat("%llu(bytes)", static_cast<unsigned long long>(options.stepBytes));
  std::string algorithmsText;
  for (const std::string& algorithm : options.algorithms)
    algorithmsText += (algorithmsText.empty() ? "" : ",") + candidateName(algorithm);
  std::string out;
  out += strFormat("# Collective %s  ranks %d\n", std::string(collective).c_str(), nranks);
  out += strFormat(
      "# minBytes %llu maxBytes %llu step: %s warmup iters: %d iters: %d validation: %d "
      "average: %d(%s) algorithm: %s buffers: %s calls: %s\n",
      static_cast<unsigned long long>(options.minBytes),
      static_cast<unsigned long long>(options.maxBytes), step.c_str(), options.warmupIters,
      options.iters, options.check, static_cast<int>(options.average),
      timeAverageName(options.average),
      algorithmsText.c_str(),
      options.registerBuffers == 1 ? "memAlloc" : "heap",
      options.async == 1 ? "async" : "blocking");
  if (!options.sizeList.empty()) {
    out += "# sizes:";
    for (const std::uint64_t size : options.sizeList)
      out += strFormat(" %llu", static_cast<unsigned long long>(size));
    out += "\n";
  }
  if (options.iterBytes > 0)
    out += strFormat("# iter bytes: %llu (a size of S bytes times min(iters, max(1, %llu / S)) "
                     "operations)\n",
                     static_cast<unsigned long long>(options.iterBytes),
                     static_cast<unsigned long long>(options.iterBytes));
  if (options.minWarmupIters > 0)
    out += strFormat("# min warmup: %d untimed operations per size at least\n",
                     options.minWarmupIters);
  if (options.algorithms.size() > 1)
    out += strFormat("# candidates: %zu in this one run, each size's timed calls taking turns "
                     "in up to %d blocks (a time: the median of its blocks' from 3 blocks)\n",
                     options.algorithms.size(), blocksFor(options, options.iters));
  if (!options.inPlace) out += "# in place: not run (--no-in-place)\n";
  if (options.computeUs > 0)
    out += strFormat("# compute: %g us after issuing each collective (included in the times)\n",
                     options.computeUs);
  if (!options.commandLine.empty()) out += "# Command: " + options.commandLine + "\n";
  out += "#\n";
  return out;
}

// Three lines as nccl-tests prints them: the placement banner, the column names and the
// units, each starting with '#' so scripts can skip them.
std::string formatColumnHeader() {
  const int prefix = kSizeWidth + 2 + kCountWidth + 2 + kTypeWidth + 2 + kOpWidth + 2 + kRootWidth;
  std::string banner = "#" + std::string(static_cast<std::size_t>(prefix - 1), ' ') +
                       centred("out-of-place", kGroupWidth) + centred("in-place", kGroupWidth);
  while (banner.back() == ' ') banner.pop_back();
  std::string names = tableLine("size", "count", "type", "redop", "root",
                                {"time", "algbw", "busbw", "#wrong"},
                                {"time", "algbw", "busbw", "#wrong"}, "algo");
  std::string units = tableLine("(B)", "(elements)", "", "", "", {"(us)", "(GB/s)", "(GB/s)", ""},
                                {"(us)", "(GB/s)", "(GB/s)", ""}, "");
  names[0] = '#';
  units[0] = '#';
  return banner + "\n" + names + units;
}

std::string formatRow(const RowResult& row) {
  const PlacementCells absent{"N/A", "N/A", "N/A", "N/A"};
  return tableLine(strFormat("%llu", static_cast<unsigned long long>(row.bytes)),
                   strFormat("%llu", static_cast<unsigned long long>(row.count)),
                   row.sized ? dataTypeName(row.dtype) : "none",
                   row.op ? reduceOpName(*row.op) : "none", strFormat("%d", row.root),
                   placementCells(row.outOfPlace),
                   row.inPlace ? placementCells(*row.inPlace) : absent,
                   row.candidate == "auto" ? "auto:" + row.algorithm : row.algorithm);
}

std::string formatTime(double timeUs) {
  if (timeUs >= 10000.0) return strFormat("%7.0f", timeUs);
  if (timeUs >= 100.0) return strFormat("%7.1f", timeUs);
  return strFormat("%7.2f", timeUs);
}

std::string formatSummary(std::int64_t wrong, bool checked, double avgBusbwGBs) {
  std::string out = strFormat("# Out of bounds values : %lld %s%s\n", static_cast<long long>(wrong),
                              wrong == 0 ? "OK" : "FAILED", checked ? "" : " (not checked: -c 0)");
  out += strFormat("# Avg bus bandwidth    : %g\n", avgBusbwGBs);
  out += "#\n";
  return out;
}

std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += strFormat("\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  // Nine significant digits: more than the clock or any bandwidth deserves, and short.
  return strFormat("%.9g", value);
}

std::string formatJson(const std::vector<RowResult>& rows) {
  std::string out = "[\n";
  bool first = true;
  for (const RowResult& row : rows) {
    for (const bool inPlace : {false, true}) {
      if (inPlace && !row.inPlace) continue;
      if (!first) out += ",\n";
      first = false;
      appendPlacementJson(row, inPlace, out);
    }
  }
  out += rows.empty() ? "]\n" : "\n]\n";
  return out;
}

Status writeFileAtomically(const std::string& path, const std::string& contents) {
  // rename() within one directory is atomic: a reader (or a crash) sees the old file or
  // the new one, never a truncated mix.
  const std::string temporary = path + ".tmp";
  {
    std::unique_ptr<std::FILE, FileCloser> file(std::fopen(temporary.c_str(), "w"));
    if (!file) return systemError("cannot create", temporary, errno);
    if (std::fwrite(contents.data(), 1, contents.size(), file.get()) != contents.size() ||
        std::fflush(file.get()) != 0) {
      const int error = errno;
      std::remove(temporary.c_str());
      return systemError("cannot write", temporary, error);
    }
    // fclose can report a delayed write error; release() so it is not closed twice.
    if (std::fclose(file.release()) != 0) {
      const int error = errno;
      std::remove(temporary.c_str());
      return systemError("cannot write", temporary, error);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return systemError("cannot rename to", path, error);
  }
  return Status::Ok();
}

}  // namespace tutti::bench
