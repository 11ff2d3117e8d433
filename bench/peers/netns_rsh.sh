#!/usr/bin/env bash
# Open MPI's remote shell (--mca plm_rsh_agent) for pretend hosts made by
# tests/multihost/netns.sh: mpirun runs `netns_rsh.sh ADDRESS orted ARGS...` for each host of
# its hostfile, which names hosts by address. This runs the command, as ssh would (the words
# joined and given to a shell), in the network namespace of the host with that address
# ($TT_HOST_ADDRS and $TT_HOSTS, which netns.sh exports), in a UTS namespace of its own
# whose host name is the namespace's: Open MPI tells hosts apart by name, and with one name
# for all of them its shared memory transport maps one host's segments from another.
set -euo pipefail
addr=${1:?usage: netns_rsh.sh ADDRESS COMMAND...}
shift
read -r -a addrs <<<"${TT_HOST_ADDRS:?netns_rsh.sh runs under netns.sh (no TT_HOST_ADDRS)}"
read -r -a hosts <<<"${TT_HOSTS:?no TT_HOSTS}"
for i in "${!addrs[@]}"; do
  if [ "${addrs[i]}" = "$addr" ]; then
    # shellcheck disable=SC2016
    exec ip netns exec "${hosts[i]}" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' \
      "${hosts[i]}" "$*"
  fi
done
echo "netns_rsh.sh: no pretend host has the address '$addr' (hosts: ${TT_HOST_ADDRS})" >&2
exit 255
