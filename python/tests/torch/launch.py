"""Launching the torch tests' processes: torchrun (with the options Debian's torch 1.13
needs) and plain workers with torch's environment, on a free port of the loopback."""

import os
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# torchrun's agent looks at its workers every --monitor_interval seconds (5 by default), so
# each launch outlived its workers by up to 5 s; 0.2 s costs the agent nothing measurable.


def torchrun(nproc, args, timeout):
    """Runs `torchrun --nproc_per_node nproc args...`; fails the test with its output on error."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--redirects", "1", "--tee", "1", "--monitor_interval", "0.2", "--master_addr", "127.0.0.1",
           "--master_port", str(free_port())] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def workers(nproc, script, extra_env=None):
    """Starts nproc `python script` processes with torch's env:// variables; returns them."""
    port = free_port()
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.update(extra_env or {})
        procs.append(subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    return procs


if __name__ == "__main__":
    # launch.py N ARGS...: torchrun on N processes of this machine, on a free port.
    nproc = int(sys.argv[1])
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--redirects", "1", "--tee", "1", "--monitor_interval", "0.2", "--master_addr", "127.0.0.1",
           "--master_port", str(free_port())] + sys.argv[2:]
    os.execv(cmd[0], cmd)
