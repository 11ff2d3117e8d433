"""A rank of test_failure.py: all-reduces in a loop over the tutti backend; the rank named
by KILL_RANK kills itself (SIGKILL) at step 3. The others must raise, naming it."""

import datetime
import os
import signal
import sys

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=float(os.environ["TIMEOUT_S"])))
rank = dist.get_rank()
victim = int(os.environ["KILL_RANK"])
t = torch.ones(1 << 16)
try:
    for step in range(1000):
        if step == 3 and rank == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(t)
        t.fill_(1)
except RuntimeError as e:
    print(f"rank {rank} raised: {e}", flush=True)
    sys.exit(3)
print(f"rank {rank}: no error", flush=True)
sys.exit(0)
