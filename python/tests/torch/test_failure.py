"""A rank killed mid-training: every other rank raises a Python exception naming it, within
the timeout torch gave the group, and nobody hangs. Runs outside torchrun (torchrun would
stop the survivors itself): it starts the ranks with torch's environment."""

import os

from launch import workers

HERE = os.path.dirname(os.path.abspath(__file__))


def test_a_killed_rank_is_an_error_naming_it_on_every_other_rank():
    nproc, victim, timeout_s = 3, 1, 20
    procs = workers(nproc, os.path.join(HERE, "failure_worker.py"),
                    {"KILL_RANK": str(victim), "TIMEOUT_S": str(timeout_s)})
    outputs = []
    for p in procs:
        out, _ = p.communicate(timeout=timeout_s + 60)
        outputs.append(out)
    for rank, (p, out) in enumerate(zip(procs, outputs)):
        if rank == victim:
            assert p.returncode == -9, out
            continue
        assert p.returncode == 3, f"rank {rank} exited {p.returncode}:\n{out}"
        assert f"rank {victim}" in out.split("raised:", 1)[1], out
