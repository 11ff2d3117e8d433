#pragma once
// `tutti-run --agent`: the per-host side of `tutti-run --hosts` (as orted is mpirun's and
// the hydra proxy is mpiexec's). tutti-run starts one agent per host through the launch
// command and writes the host's share of the job to its stdin; the agent starts those ranks
// with the code that starts local ranks (spawn.h), relays their output and their ends to
// tutti-run as frames on its stdout, forwards the signals tutti-run sends, and stops its
// ranks (SIGTERM, then SIGKILL kKillAfterSeconds later) when its stdin ends or it is itself
// told to end (SIGTERM, SIGINT, SIGHUP). The protocol: agent_protocol.h.

namespace tutti::run {

/// Runs the agent on stdin/stdout/stderr until every rank of its host is reaped (or
/// abandoned after SIGKILL). Returns the agent's exit status: 0 once every rank's end was
/// reported (whatever the ranks' own statuses: those travel in the frames), 1 when the job
/// could not be read or started (after an "F" frame and a message on stderr). Must be the
/// main thread of its process.
int runAgent();

}  // namespace tutti::run
