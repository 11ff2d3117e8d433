#pragma once
// Which host this process runs on, as far as sharing memory goes, which machine (whose
// CPUs it shares), and its name.

#include <string>

namespace tutti::topo {

/// The boot id and the network namespace ("<boot id>/net:[<inode>]"): processes with equal
/// identities share memory. Ranks in different network namespaces count as different
/// hosts, which is how the multi-host tests emulate machines.
std::string hostIdentity();

/// The boot id alone: the machine whose CPUs the process shares, whatever network namespace
/// (a container, the multi-host tests' pretend hosts) or TUTTI_SHM_HOST it is in. Ranks on
/// one machine count against the same cores when deciding whether each has one. "?" where
/// the boot id cannot be read.
std::string machineIdentity();

/// gethostname(), or "?" where it fails.
std::string hostName();

}  // namespace tutti::topo
