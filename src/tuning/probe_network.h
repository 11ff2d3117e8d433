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
//              has arrived. A round's time runs from its first send to that answer. The last
//              round gives the rate: TCP's slow start is behind it, and a link's latency is
//              a small part of 10 ms. (Chunks' arrival times are no measure: a message of 512
//              KiB or more is striped over the link's TCP streams, and completes when its
//              slowest part does, so that arrivals bunch at the round's end.)
//   bucket     the last round is sent again, right after it. On a link shaped by a token
//              bucket (tc tbf, a cloud NIC's burst allowance) the rounds before passed at
//              the line's rate (after TCP's slow start) until the bucket was empty, and the
//              last one may still have had some of it; this one finds the bucket drained
//              and gives the rate. The bucket is what the rounds before carried beyond what
//              that rate refilled over their time (applyRounds); on a link without one,
//              nothing is left over.
// A probe of a 1 Gbit/s link takes about 75 ms; a slower one takes at least two rounds of
// 256 KiB.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  std::uint64_t burstBytes = 0;  // a shaped link's bucket (0: none seen)
  double lineBeta = 0;  // seconds per byte while the bucket lasts (with burstBytes only)
};

/// One round of the stream: its bytes and the time from its first send to the answer.
struct StreamRound {
  std::uint64_t bytes = 0;
  double seconds = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

/// The fastest of `rounds` (not empty).
const StreamRound& fastest(const std::vector<StreamRound>& rounds);

/// The rate, and a shaped link's bucket, from the rounds in order and the last round's time
/// again right after them (`drained`; nullopt: not sent): beta from the drained round (else
/// the last); the bucket the bytes of the rounds
/// that no refill at that rate over their time accounts for, where that is at least 1 ms
/// of the rate (else 0, and lineBeta 0); lineBeta then the fastest round's. The rest of
/// `out` is left alone.
void applyRounds(const std::vector<StreamRound>& rounds, std::optional<double> drained,
                 NetworkCosts& out);

/// The leader's side, with `peer` on another host: nullopt where a message failed or did not
/// complete by `deadline` (*why says which; every request it posted is then cancelled).
std::optional<NetworkCosts> leadNetworkProbe(Transport& t, int peer, Deadline deadline,
                                             std::string* why);

/// The follower's side, answering `leader` until it ends the probe; false as above.
bool followNetworkProbe(Transport& t, int leader, Deadline deadline, std::string* why);

/// `model` with its network path from `costs`: alpha the one-way time less the two ends'
/// per-message CPU time (the loopback's, measured through the same TCP transport, where the
/// model has it; else the network path's own), beta the stream's, and the NIC's bandwidth
/// the same rate (a rank's stream is taken to fill its host's link); a shaped link's bucket
/// emptied at the faster of the NIC's speed in `model` (the host probe's) and the rate the
/// stream's fastest round showed.
void applyNetworkCosts(const NetworkCosts& costs, MachineModel& model);

/// Why `costs` cannot be a network's (not finite, not positive, a one-way time past a
/// second); empty where they can.
std::string implausibleNetwork(const NetworkCosts& costs);

}  // namespace tutti::tuning
