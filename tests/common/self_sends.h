#pragma once
// Sends from a rank to itself (issue 37, part 5), in every order MPI allows: a blocking
// send or receive paired with an async other half, both async issued either way round and
// waited either way round, a blocking send before its blocking receive (tutti buffers the
// message: docs/errors.md), several messages on one tag (received in the order sent) and on
// several tags (received out of order), and a ring to the neighbours in flight together
// with a message to self. Every element received is compared with what was sent.

#include <cstddef>
#include <string>

#include "tutti/communicator.h"

namespace tutti::test {

/// Element counts the scenarios run at: empty, one element, a small message and one larger
/// than every transport's buffered path.
inline constexpr std::size_t kSelfCounts[] = {0, 1, 1000, 300000};

/// Runs every scenario at `count` elements on `comm` (every rank calls it alike; the ring
/// scenario needs the neighbours). "" when all went right, else what went wrong.
std::string checkSendsToSelf(Communicator& comm, std::size_t count);

}  // namespace tutti::test
