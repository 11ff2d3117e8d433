#pragma once
// The simulator's machines (simulate.cc): what the ranks of a call share, built from the
// machine model, the ranks' placement and the network. Per simulated machine (a host, or
// the pretend hosts of one machine together) its ranks, its cores and its memory bus; per
// host and rail its NIC's two directions and (rail) its share of the spine; per leaf switch
// its uplinks and downlinks. And the per-byte costs of the call's CPU work, which depend on
// whether its buffers stay in the last-level cache.

#include <vector>

#include "schedule/collective.h"
#include "tuning/model.h"
#include "tuning/network.h"
#include "tuning/placement.h"
#include "tuning/sim_fifo.h"

namespace tutti::tuning {

struct SimMachines {
  std::vector<std::vector<int>> machineRanks;
  std::vector<std::vector<double>> cores;  // each core's free time
  std::vector<Fifo> memory;
  std::vector<bool> oversubscribed;  // per machine: more ranks than cores
  // Per machine: every rank bound to one core (RankPlace::boundCore), whose free time in
  // `cores` its work waits for; else `cores` is a min-heap any rank's work takes the first
  // free of.
  std::vector<bool> bound;
  std::vector<Fifo> nicOut, nicIn, spine;
  std::vector<Fifo> leafUp, leafDown;
  double gamma = 0;         // a reduced byte's CPU time, for the call's type
  double copyBeta = 0;      // the model's, or one core's share of memory past the cache
  double hostBeta = 0;      // a message's floor on a host path past the cache (0: none)
  double reduceCopies = 1;  // bytes copied on the memory bus per byte reduced
  double networkBeta = 0;   // a network message's floor, s/byte: the path's, or a bucket's line
};

/// The machines of the hosts holding ranks [0, period) (the fast path's hosts are machines
/// of their own), for `spec`, whose rank r touches `touchedBytes[r]` of its buffers (input,
/// output and scratch, as far as its steps reach into each).
SimMachines simMachines(const MachineModel& model, const Placement& placement,
                        const Network& network, const CollectiveSpec& spec, int period,
                        const std::vector<double>& touchedBytes);

}  // namespace tutti::tuning
