// tutti-sim's sweep: sizes, the calls simulated, the default model and the table.
#include "sim/sweep.h"

#include <chrono>
#include <map>

#include "base/macros.h"
#include "base/strings.h"
#include "tuning/model.h"
#include "bench/collectives.h"

namespace tutti::sim {

Result<std::vector<std::uint64_t>> parseSizes(const std::string& text) {
  auto bad = [&] {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("size '%s': a size (64M) or a range MIN:MAX (8:256M) expected",
                            text.c_str()));
  };
  const std::size_t colon = text.find(':');
  const auto low = parseBytes(text.substr(0, colon));
  if (!low) return bad();
  std::vector<std::uint64_t> out{*low};
  if (colon == std::string::npos) return out;
  const auto high = parseBytes(text.substr(colon + 1));
  if (!high || *high < *low) return bad();
  if (*low == 0)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("size '%s': a range starts above 0 bytes", text.c_str()));
  for (std::uint64_t s = *low; s <= *high / 2;) {
    s *= 2;
    out.push_back(s);
  }
  return out;
}

tuning::MachineModel simDefaultModel() {
  // The library's round figures for one server (tuning::defaults()), on a cluster's
  // network: 100 Gbit/s NICs through one switch, a few microseconds of software each end,
  // and 8 cores a host.
  tuning::MachineModel m = tuning::defaults();
  m.paths[static_cast<int>(tuning::PathClass::kNetwork)] = {10e-6, 1 / 12.5e9, 1e-6};
  m.nicBandwidth = 12.5e9;
  m.coresPerHost = 8;
  m.origin = "tutti-sim defaults (tuning::defaults() with 100 Gbit/s NICs, 8 cores a host)";
  return m;
}

namespace {

// The call of a row: uniform collectives take the counts tutti-bench derives from the
// size; the v-collectives the same counts on every rank, packed in rank order.
CollectiveSpec specFor(Collective kind, const bench::Counts& counts, DataType dtype, int n,
                       std::uint64_t segmentBytes) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.count = counts.param;
  spec.dtype = dtype;
  spec.op = ReduceOp::kSum;
  spec.root = 0;
  spec.peer = kind == Collective::kSend ? 1 : (kind == Collective::kRecv ? 0 : -1);
  spec.size = n;
  spec.segmentCount = std::max<std::uint64_t>(1, segmentBytes / dataTypeSize(dtype));
  const bool v = kind == Collective::kAllGatherV || kind == Collective::kReduceScatterV ||
                 kind == Collective::kGatherV || kind == Collective::kScatterV ||
                 kind == Collective::kAllToAllV;
  if (v) {
    spec.counts.assign(static_cast<std::size_t>(n), counts.param);
    spec.displs.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) spec.displs[static_cast<std::size_t>(r)] = counts.param * static_cast<std::uint64_t>(r);
    if (kind == Collective::kAllToAllV) {
      spec.recvCounts = spec.counts;
      spec.recvDispls = spec.displs;
    }
  }
  return spec;
}

}  // namespace

Result<std::vector<Row>> runSweep(const SweepRequest& request, const tuning::MachineModel& model,
                                  const tuning::Placement& placement,
                                  const tuning::Network& network) {
  TUTTI_ASSIGN_OR_RETURN(const bench::CollectiveEntry* entry,
                         bench::findCollective(request.collective));
  const Collective kind = entry->kind;
  if (kind == Collective::kSend || kind == Collective::kRecv)
    return Status(ErrorCode::kInvalidArgument,
                  "tutti-sim simulates collectives; send and receive are not one");
  const int n = placement.size();
  const std::size_t typeSize = dataTypeSize(request.dtype);
  std::vector<Row> rows;
  std::string lastWhy;
  bool named = request.algorithm.empty();
  for (const AlgorithmInfo& algorithm : algorithmRegistry()) {
    if (algorithm.kind == kind && request.algorithm == algorithm.name) named = true;
  }
  if (!named)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("%s has no algorithm '%s' (tutti-info algorithms lists them)",
                            collectiveName(kind), request.algorithm.c_str()));
  for (std::uint64_t size : request.sizes) {
    const bench::Counts counts = bench::collectiveCounts(kind, size / typeSize, n);
    const CollectiveSpec spec = specFor(kind, counts, request.dtype, n, request.segmentBytes);
    for (const AlgorithmInfo& algorithm : algorithmRegistry()) {
      if (algorithm.kind != kind) continue;
      if (!request.algorithm.empty() && request.algorithm != algorithm.name) continue;
      CollectiveSpec probe = spec;
      probe.hosts = &placement.hosts();
      probe.sharedMemory = placement.hostCount() == 1;
      if (std::string why = algorithm.unsupportedReason(probe); !why.empty()) {
        lastWhy = strFormat("%s: %s", algorithm.name, why.c_str());
        continue;
      }
      const auto start = std::chrono::steady_clock::now();
      TUTTI_ASSIGN_OR_RETURN(tuning::Prediction p,
                             tuning::predict(algorithm, spec, model, placement, network,
                                             request.options));
      Row row;
      row.algorithm = algorithm.name;
      row.bytes = bench::rowBytes(counts, typeSize);
      row.seconds = p.seconds;
      row.algbw = bench::algorithmBandwidth(bench::algorithmBytes(kind, counts, typeSize, n), p.seconds);
      row.busbw = row.algbw * bench::busBandwidthFactor(kind, n);
      row.fastPath = p.fastPath;
      row.ranksRun = p.ranksRun;
      row.messages = p.messages;
      row.simSeconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      rows.push_back(row);
    }
  }
  if (rows.empty())
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("no algorithm of %s applies to %d ranks%s%s", collectiveName(kind), n,
                            lastWhy.empty() ? "" : ": ", lastWhy.c_str()));
  return rows;
}

std::string formatTable(const std::vector<Row>& rows) {
  std::map<std::uint64_t, double> best;
  for (const Row& r : rows) {
    auto [it, fresh] = best.try_emplace(r.bytes, r.seconds);
    if (!fresh && r.seconds < it->second) it->second = r.seconds;
  }
  std::string out = strFormat("%14s  %-20s %14s %10s %10s %10s %6s %9s\n", "size(B)", "algorithm",
                              "time(us)", "algbw", "busbw", "messages", "ran", "sim(s)");
  for (const Row& r : rows) {
    const bool fastest = rows.size() > 1 && r.seconds == best[r.bytes];
    out += strFormat("%14llu %c%-20s %14.2f %10.3f %10.3f %10llu %6d %9.3f\n",
                     static_cast<unsigned long long>(r.bytes), fastest ? '*' : ' ',
                     r.algorithm.c_str(), r.seconds * 1e6, r.algbw, r.busbw,
                     static_cast<unsigned long long>(r.messages), r.ranksRun,
                     r.simSeconds);
  }
  return out;
}

std::string formatCsv(const std::vector<Row>& rows) {
  std::string out = "algorithm,bytes,seconds,algbw,busbw\n";
  for (const Row& r : rows)
    out += strFormat("%s,%llu,%.9g,%.6g,%.6g\n", r.algorithm.c_str(),
                     static_cast<unsigned long long>(r.bytes), r.seconds, r.algbw, r.busbw);
  return out;
}

}  // namespace tutti::sim
