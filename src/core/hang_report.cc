#include "core/hang_report.h"

#include <algorithm>
#include <map>

#include "base/log.h"
#include "base/strings.h"
#include "bootstrap/bounded_store.h"

namespace tutti::detail {
namespace {

constexpr char kMagic[] = "tutti-hang-1";
constexpr std::size_t kFields = 8;
// A post carries one call's name and one executor's list of pending steps; both are cut so
// that n ranks' summary stays readable (and the post stays far below the store's bounds).
constexpr std::size_t kMaxCallBytes = 256;
constexpr std::size_t kMaxWaitingBytes = 320;
// The summary lists what at most this many ranks were waiting for; the rest are counted.
constexpr std::size_t kMaxWaitingShown = 8;
// After the deadline, posts already there are still read for this long (one request each);
// a store that stopped answering meanwhile costs no more than this.
constexpr double kReadAfterDeadlineSec = 1.0;

// One line of the post: no newline inside, at most `limit` bytes.
std::string field(const std::string& text, std::size_t limit) {
  std::string out = text.size() > limit ? text.substr(0, limit - 3) + "..." : text;
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

std::optional<std::uint64_t> parseCount(const std::string& text) {
  std::optional<std::int64_t> v = parseInt(text);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*v);
}

// "allreduce #5" of "allreduce #5 (count 1024 float32 sum, ring)".
std::string shortName(const std::string& call) { return call.substr(0, call.find(" (")); }

// The sentence for the group of ranks at `p`, seen from a rank at `me`. The group of this
// rank's own collective says only "reached allreduce #5": the error names it in full.
bool sameCall(const HangPosition& me, const HangPosition& p) {
  return p.collective == me.collective && p.seq == me.seq && p.call == me.call;
}

std::string groupLabel(const HangPosition& me, const HangPosition& p) {
  if (sameCall(me, p) && !me.collective)
    return "in " + p.call + (p.late ? ", begun after the communicator had failed" : "");
  if (sameCall(me, p))
    return "reached " + shortName(p.call) + (p.late ? " after the communicator had failed" : "");
  std::string label = "in " + p.call;
  if (me.collective && p.collective) {
    if (p.seq < me.seq) return label + ", an earlier call";
    if (p.seq > me.seq) return label + ", a later call";
    return label + ", another call with the same sequence number";
  }
  if (me.collective) {  // p is point to point, after p.seq collectives
    return label + (p.seq <= me.seq ? ", not yet at " : ", already past ") + shortName(me.call);
  }
  return label;
}

// "rank 0: 0 of 2 steps done, waiting for data from rank 3 (step 0)".
std::string waitingText(int rank, const HangPosition& p) {
  return strFormat("rank %d: %llu of %llu steps done, waiting for %s", rank,
                   static_cast<unsigned long long>(p.completedSteps),
                   static_cast<unsigned long long>(p.totalSteps), p.waitingOn.c_str());
}

std::string rankList(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + formatRankList(ranks);
}

// "ranks 2-3 on host 1 'b' at 10.0.0.2, rank 6 on host 2 'c' at 10.0.0.3": `ranks`
// (ascending) by host, hosts in order of their first rank; rankList() without `hosts`.
std::string rankListWithHosts(const std::vector<int>& ranks,
                              const std::vector<std::string>& hosts) {
  if (ranks.empty() || static_cast<std::size_t>(ranks.back()) >= hosts.size())
    return rankList(ranks);
  std::vector<std::pair<std::string, std::vector<int>>> byHost;
  for (int rank : ranks) {
    const std::string& host = hosts[static_cast<std::size_t>(rank)];
    auto it = std::find_if(byHost.begin(), byHost.end(),
                           [&](const auto& entry) { return entry.first == host; });
    if (it == byHost.end()) it = byHost.insert(byHost.end(), {host, {}});
    it->second.push_back(rank);
  }
  std::string text;
  for (const auto& [host, onHost] : byHost)
    text += (text.empty() ? "" : ", ") + rankList(onHost) + " on " + host;
  return text;
}

// "<label>: ranks 0-2 (rank 0: ...; rank 1: ...)", listing what each rank waited for while
// fewer than kMaxWaitingShown have been listed (*shown), counting the others (*hidden).
std::string groupText(const std::string& label, const std::vector<int>& ranks,
                      const std::vector<std::optional<HangPosition>>& positions,
                      std::size_t* shown, std::size_t* hidden) {
  std::string waits;
  for (int rank : ranks) {
    const HangPosition& p = *positions[static_cast<std::size_t>(rank)];
    if (p.waitingOn.empty()) continue;
    if (*shown == kMaxWaitingShown) {
      ++*hidden;
      continue;
    }
    waits += (waits.empty() ? "" : "; ") + waitingText(rank, p);
    ++*shown;
  }
  return label + ": " + rankList(ranks) + (waits.empty() ? "" : " (" + waits + ")");
}

}  // namespace

std::vector<std::uint8_t> encodeHangPosition(const HangPosition& p) {
  const std::string text = strFormat(
      "%s\n%s\n%llu\n%d\n%llu\n%llu\n%s\n%s", kMagic, p.collective ? "collective" : "p2p",
      static_cast<unsigned long long>(p.seq), p.late ? 1 : 0,
      static_cast<unsigned long long>(p.completedSteps),
      static_cast<unsigned long long>(p.totalSteps), field(p.call, kMaxCallBytes).c_str(),
      field(p.waitingOn, kMaxWaitingBytes).c_str());
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::optional<HangPosition> decodeHangPosition(const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() > 4 * (kMaxCallBytes + kMaxWaitingBytes)) return std::nullopt;
  const std::vector<std::string> lines =
      splitString(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), '\n');
  if (lines.size() != kFields || lines[0] != kMagic) return std::nullopt;
  if (lines[1] != "collective" && lines[1] != "p2p") return std::nullopt;
  if (lines[3] != "0" && lines[3] != "1") return std::nullopt;
  auto seq = parseCount(lines[2]);
  auto completed = parseCount(lines[4]);
  auto total = parseCount(lines[5]);
  if (!seq || !completed || !total || lines[6].empty()) return std::nullopt;
  HangPosition p;
  p.collective = lines[1] == "collective";
  p.seq = *seq;
  p.late = lines[3] == "1";
  p.completedSteps = *completed;
  p.totalSteps = *total;
  p.call = lines[6];
  p.waitingOn = lines[7];
  return p;
}

std::string summarizeHang(const HangView& view, int* blame) {
  *blame = Status::kNoRank;
  const auto& positions = view.positions;
  if (view.self < 0 || static_cast<std::size_t>(view.self) >= positions.size() ||
      !positions[static_cast<std::size_t>(view.self)]) {
    return "hang report: this rank could not post where it was" +
           (view.storeError.ok() ? std::string() : " (" + view.storeError.message() + ")");
  }
  const HangPosition& me = *positions[static_cast<std::size_t>(view.self)];
  // Groups in order of first appearance, this rank's own first.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  std::map<std::string, std::size_t> byLabel;
  groups.emplace_back(groupLabel(me, me), std::vector<int>{});
  byLabel[groups[0].first] = 0;
  std::vector<int> missing;
  std::vector<int> elsewhere;  // ranks known not to have been in this rank's call in time
  for (std::size_t q = 0; q < positions.size(); ++q) {
    const int rank = static_cast<int>(q);
    if (!positions[q]) {
      bool unknown = std::count(view.unreadable.begin(), view.unreadable.end(), rank) > 0 ||
                     std::count(view.unread.begin(), view.unread.end(), rank) > 0;
      if (!unknown) missing.push_back(rank);
      continue;
    }
    const std::string label = groupLabel(me, *positions[q]);
    auto [it, added] = byLabel.emplace(label, groups.size());
    if (added) groups.emplace_back(label, std::vector<int>{});
    groups[it->second].second.push_back(rank);
    // A rank that came late was not there in time either: it is the straggler.
    const HangPosition& p = *positions[q];
    if (!sameCall(me, p) || (p.late && !me.late)) elsewhere.push_back(rank);
  }
  std::vector<std::string> parts;
  std::size_t waitingShown = 0;
  std::size_t waitingHidden = 0;
  for (const auto& [label, ranks] : groups)
    parts.push_back(groupText(label, ranks, positions, &waitingShown, &waitingHidden));
  if (waitingHidden > 0)
    parts.push_back(strFormat("%zu more ranks were waiting too", waitingHidden));
  if (!missing.empty())
    parts.push_back(strFormat("did not report within %.3g s (stopped, dead, or outside any "
                              "tutti call): ", view.waitedSec) +
                    rankListWithHosts(missing, view.hosts));
  if (!view.unreadable.empty())
    parts.push_back("posted something unreadable: " + rankList(view.unreadable));
  if (!view.unread.empty())
    parts.push_back("not known (" +
                    (view.storeError.ok() ? std::string("the store stopped answering")
                                          : view.storeError.message()) +
                    "): " + rankList(view.unread));
  std::string text = "hang report: ";
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i > 0 ? "; " : "") + parts[i];
  const std::size_t notHere = missing.size() + elsewhere.size();
  if (notHere == 1 && view.unread.empty() && view.unreadable.empty())
    *blame = missing.empty() ? elsewhere[0] : missing[0];
  return text;
}

HangView exchangeHangPositions(Store& store, const std::string& prefix, int rank, int size,
                               const HangPosition& mine, Deadline deadline) {
  HangView view;
  view.self = rank;
  view.positions.resize(static_cast<std::size_t>(size));
  view.waitedSec = deadline.remainingSeconds();
  const std::string base = prefix + "hang/";
  Status posted = setBefore(store, base + std::to_string(rank), encodeHangPosition(mine), deadline);
  if (!posted.ok()) {
    // Without the store no rank learns anything; say so rather than blame every rank.
    view.storeError = posted;
    return view;
  }
  view.positions[static_cast<std::size_t>(rank)] = mine;
  const Deadline readUntil = Deadline::after(deadline.remaining() +
                                             std::chrono::duration_cast<Deadline::Clock::duration>(
                                                 std::chrono::duration<double>(kReadAfterDeadlineSec)));
  // In rank order: the first missing post takes the wait, the ones after it are there or not
  // by then, and each is one round trip.
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    if (readUntil.expired()) {
      view.unread.push_back(q);
      continue;
    }
    auto value = store.get(base + std::to_string(q), deadline);
    if (value.ok()) {
      auto position = decodeHangPosition(*value);
      if (position) view.positions[static_cast<std::size_t>(q)] = std::move(position);
      else view.unreadable.push_back(q);
    } else if (value.status().code() != ErrorCode::kTimeout) {
      // The store broke (closed the connection, garbled a reply): stop asking it.
      view.storeError = value.status();
      for (int rest = q; rest < size; ++rest)
        if (rest != rank) view.unread.push_back(rest);
      break;
    }
  }
  TUTTI_DEBUG(kColl, "hang report: read the positions of %d ranks", size);
  return view;
}

}  // namespace tutti::detail
