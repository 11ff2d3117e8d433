#pragma once
// What the network between two hosts costs, measured through a communicator's own transport
// at its creation (core/model_setup.h, agreeOnNetwork), where a probe of one host sees only
// the NIC's nominal speed (probe.h): a link shaped or shared below that speed, a switch's
// latency and the TCP transport's own costs all show here.
//
// Two ranks on different hosts take part: the leader (rank 0) and its follower. The leader
// sends a head before each batch naming what follows, so that the follower needs no clock
// but its own, and every message either sends is received before the probe returns:
//   latency    batches of round trips of 8 bytes; the best batch's half round trip
//   bandwidth  rounds of one stream of chunks sent back to back (at most 8 in flight), 256
//              KiB in the first round and 4 times more in each next one, until a round takes
//              10 ms or 64 MiB have gone in one; the follower answers when the last chunk
//              has arrived. The last round's time from its first send to that answer gives
//              the rate: the rounds before it have drained a shaped link's bucket (tc tbf)
//              and TCP's slow start, and a link's latency is a small part of 10 ms. (Chunks'
//              arrival times are no measure: a message of 512 KiB or more is striped over
//              the link's TCP streams, and completes when its slowest part does, so that
//              arrivals bunch at the round's end.)
// A probe of a 1 Gbit/s link takes about 40 ms; a slower one takes at least one round (256 KiB).

#include <optional>
#include <string>

#include "transport/link.h"
#include "tuning/model.h"
#include "tutti/deadline.h"

namespace tutti::tuning {

/// What one measurement found.
struct NetworkCosts {
  double oneWay = 0;   // seconds: half the best round trip of 8 bytes
  double beta = 0;     // seconds per byte of one stream, sustained
  double seconds = 0;  // the probe's own time
  std::size_t roundBytes = 0;  // the last round's bytes
};

/// The leader's side, with `peer` on another host: nullopt where a message failed or did not
/// complete by `deadline` (*why says which; every request it posted is then cancelled).
std::optional<NetworkCosts> leadNetworkProbe(Transport& t, int peer, Deadline deadline,
                                             std::string* why);

/// The follower's side, answering `leader` until it ends the probe; false as above.
bool followNetworkProbe(Transport& t, int leader, Deadline deadline, std::string* why);

/// `model` with its network path from `costs`: alpha the one-way time less the two ends'
/// per-message CPU time (the loopback's, measured through the same TCP transport, where the
/// model has it; else the network path's own), beta the stream's, and the NIC's bandwidth
/// the same rate (a rank's stream is taken to fill its host's link).
void applyNetworkCosts(const NetworkCosts& costs, MachineModel& model);

/// Why `costs` cannot be a network's (not finite, not positive, a one-way time past a
/// second); empty where they can.
std::string implausibleNetwork(const NetworkCosts& costs);

}  // namespace tutti::tuning
