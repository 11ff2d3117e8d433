// STAND-IN (tuner branch only, never merged): a crude list-scheduling of the real schedules,
// enough for the tuner's tests until the sim helper's simulate.cc lands.

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "tuning/simulate.h"
#include "tuning/standin.h"

namespace tutti::tuning {

Result<Placement> Placement::synthetic(int ranks, int ranksPerHost, int coresPerHost) {
  Placement p;
  for (int r = 0; r < ranks; ++r) p.places_.push_back({r / ranksPerHost, r % ranksPerHost, 0, 0, r % ranksPerHost});
  std::vector<int> per;
  for (int left = ranks; left > 0; left -= ranksPerHost) per.push_back(std::min(left, ranksPerHost));
  p.hosts_ = std::make_shared<HostMap>(HostMap::blocks(per));
  p.cores_.assign(per.size(), coresPerHost);
  p.uniform_ = ranks % ranksPerHost == 0;
  return p;
}

PathClass Placement::pathClass(int a, int b) const {
  return place(a).host == place(b).host ? PathClass::kSameL3 : PathClass::kNetwork;
}

MachineModel standInModel() {
  MachineModel m;
  for (int c = 0; c < 3; ++c) m.paths[static_cast<std::size_t>(c)] = {1e-6, 1.0 / 5e9, 0.5e-6};
  m.paths[3] = {30e-6, 1.0 / 1e9, 2e-6};
  m.gamma.fill(1.0 / 4e9);
  m.copyBeta = 1.0 / 8e9;
  m.coresPerHost = 8;
  m.flatAlpha = 1e-6;
  m.flatBeta = 1.0 / 10e9;
  return m;
}

Result<Prediction> predict(const AlgorithmInfo& algorithm, const CollectiveSpec& tmpl,
                           const MachineModel& model, const Placement& placement,
                           const Network&, const SimOptions& options) {
  const int n = placement.size();
  std::vector<Schedule> schedules;
  CollectiveSpec spec = tmpl;
  spec.size = n;
  spec.hosts = placement.hosts().hostCount() > 1 ? &placement.hosts() : nullptr;
  if (algorithm.flatBytes != nullptr && options.flatRoom > 0 && placement.hostCount() == 1 &&
      algorithm.flatBytes(spec) <= options.flatRoom) {
    Prediction flat;
    flat.seconds = model.flatAlpha + model.flatBeta * static_cast<double>(algorithm.flatBytes(spec)) * n;
    return flat;
  }
  for (int r = 0; r < n; ++r) {
    spec.rank = r;
    std::string why = algorithm.unsupportedReason(spec);
    if (!why.empty()) return Status(ErrorCode::kInvalidArgument, why);
    schedules.push_back(algorithm.build(spec));
  }
  const double elem = dataTypeSize(spec.dtype);
  std::vector<std::vector<double>> done(static_cast<std::size_t>(n));
  std::vector<double> cpu(static_cast<std::size_t>(n), 0), nic(static_cast<std::size_t>(n), 0);
  std::map<std::tuple<int, int, std::uint32_t>, double> arrivals;  // (from, to, index)
  std::vector<std::size_t> left(static_cast<std::size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    done[static_cast<std::size_t>(r)].assign(schedules[static_cast<std::size_t>(r)].steps.size(), -1);
    left[static_cast<std::size_t>(r)] = schedules[static_cast<std::size_t>(r)].steps.size();
  }
  Prediction out;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      const Schedule& s = schedules[static_cast<std::size_t>(r)];
      auto& d = done[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < s.steps.size(); ++i) {
        if (d[i] >= 0) continue;
        const Step& st = s.steps[i];
        double start = cpu[static_cast<std::size_t>(r)];
        bool ready = true;
        for (std::uint32_t k = 0; k < st.depCount; ++k) {
          const double t = d[s.deps[st.depBegin + k]];
          if (t < 0) ready = false;
          start = std::max(start, t);
        }
        if (!ready) continue;
        if (opReceives(st.op)) {
          auto it = arrivals.find({st.recvPeer, r, st.recvIndex});
          if (it == arrivals.end()) continue;
          start = std::max(start, it->second);
        }
        double finish = start;
        const double bytes = static_cast<double>((opSends(st.op) && !opReceives(st.op) ? st.src.count : st.dst.count)) * elem;
        if (st.op == OpCode::kRecvReduce || st.op == OpCode::kRecvReduceSend || st.op == OpCode::kReduce)
          finish += bytes * model.gamma[static_cast<std::size_t>(spec.dtype)];
        if (st.op == OpCode::kCopy) finish += bytes * model.copyBeta;
        if (opSends(st.op)) {
          const LinkCost& link = model.path(placement.pathClass(r, st.sendPeer));
          finish += link.overhead;
          double& port = nic[static_cast<std::size_t>(r)];
          const double begin = std::max(finish, port);
          port = begin + bytes * link.beta;
          arrivals[{r, st.sendPeer, st.sendIndex}] = port + link.alpha;
          ++out.messages;
        }
        cpu[static_cast<std::size_t>(r)] = finish;
        d[i] = finish;
        --left[static_cast<std::size_t>(r)];
        progress = true;
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    if (left[static_cast<std::size_t>(r)] != 0)
      return Status(ErrorCode::kInternal, std::string(algorithm.name) + ": schedules do not match");
    for (double t : done[static_cast<std::size_t>(r)]) out.seconds = std::max(out.seconds, t);
  }
  return out;
}

}  // namespace tutti::tuning
