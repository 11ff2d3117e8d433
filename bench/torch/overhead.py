"""The torch layer's cost on an 8-byte all_reduce over tutti (2 processes or more):
through torch's Python API, through the ProcessGroup's Python binding, and from C++ (the
glue alone: ProcessGroupTutti::allreduce()->wait() in a loop, no Python). Rank 0 prints
one JSON line; bench/torch/run.sh puts it beside tutti-bench's time for the same call."""

import json
import statistics
import time

import torch
import torch.distributed as dist

import tutti._tutti_torch as glue
import tutti.torch  # noqa: F401

N = 20000


def per_call(f, n=N):
    for _ in range(1000):
        f()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - start) / n


def main():
    dist.init_process_group("tutti")
    pg = dist.distributed_c10d._get_default_group()
    t = torch.ones(2)
    rows = {"dist.all_reduce": [], "ProcessGroup.allreduce().wait()": [], "C++ glue": []}
    for _ in range(5):
        rows["dist.all_reduce"].append(per_call(lambda: dist.all_reduce(t)))
        rows["ProcessGroup.allreduce().wait()"].append(per_call(lambda: pg.allreduce([t]).wait()))
        dist.barrier()
        rows["C++ glue"].append(glue._time_allreduce(pg, t, N))
    if dist.get_rank() == 0:
        print(json.dumps({k: statistics.median(v) * 1e6 for k, v in rows.items()}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
