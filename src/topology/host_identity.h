#pragma once
// Which host this process runs on, as far as sharing memory goes, and its name.

#include <string>

namespace tutti::topo {

/// The boot id and the network namespace ("<boot id>/net:[<inode>]"): processes with equal
/// identities share memory. Ranks in different network namespaces count as different
/// hosts, which is how the multi-host tests emulate machines.
std::string hostIdentity();

/// gethostname(), or "?" where it fails.
std::string hostName();

}  // namespace tutti::topo
