"""torch.distributed collectives with Gloo and tutti side by side, in one run.

    torchrun --nproc_per_node 2 --redirects 1 --tee 1 bench/torch/torch_bench.py [--json F]

Gloo is the default group and tutti a second group over the same processes; each round
times every op once with each backend (interleaved, so both see the same machine), and the
table gives the median over rounds: time, algbw and busbw (nccl-tests' definitions), and
tutti's busbw over Gloo's. Every result is checked against the other backend's.
bench/torch/run.sh adds the DDP step time and the torch layer's overhead.
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

MiB = 1 << 20


def busbw_factor(op, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n,
            "reduce_scatter": (n - 1) / n, "broadcast": 1.0}[op]


def make(op, nbytes, size):
    """A function running op on a group, on buffers made once (a call allocates nothing of
    ours), and the bytes one call moves per rank (nccl-tests' size)."""
    count = max(1, nbytes // 4)
    x = torch.arange(count, dtype=torch.float32) % 97 + dist.get_rank()
    if op == "all_reduce":
        def run(group):
            t = x.clone() if count <= 4096 else x  # large: in place (values grow; fine)
            dist.all_reduce(t, group=group)
            return t
        return run, count * 4
    if op == "all_gather":
        part = x[: max(1, count // size)].clone()
        out = [torch.empty_like(part) for _ in range(size)]

        def run(group):
            dist.all_gather(out, part, group=group)
            return out
        return run, part.numel() * 4 * size
    if op == "reduce_scatter":
        blocks = list(x[: (count // size) * size].clone().chunk(size))
        whole = torch.cat(blocks)
        work = torch.empty_like(whole)
        out = torch.empty_like(blocks[0])

        def run(group):
            if group is dist.group.WORLD:
                # Gloo has no reduce_scatter in torch 1.13: what a Gloo user runs instead,
                # an all-reduce of the whole (into a buffer made once), keeping one block.
                work.copy_(whole)
                dist.all_reduce(work, group=group)
                return work.chunk(size)[dist.get_rank()]
            dist.reduce_scatter(out, blocks, group=group)
            return out
        return run, blocks[0].numel() * 4 * size
    raise ValueError(op)


def flat(result):
    return torch.cat(result) if isinstance(result, list) else result


def timed(run, group, reps):
    run(group)  # warm-up
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(reps):
        run(group)
    return (time.perf_counter() - start) / reps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--cases", default="all_reduce:8,all_reduce:25M,all_gather:64M,reduce_scatter:64M")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    tg = dist.new_group(backend="tutti")
    size, rank = dist.get_world_size(), dist.get_rank()
    rows = []
    for case in args.cases.split(","):
        op, s = case.split(":")
        nbytes = int(s[:-1]) * MiB if s.endswith("M") else int(s)
        run, moved = make(op, nbytes, size)
        reps = 2000 if nbytes <= 4096 else max(10, int(2048 * MiB // nbytes))
        times = {"gloo": [], "tutti": []}
        for _ in range(args.rounds):
            for name, group in (("gloo", dist.group.WORLD), ("tutti", tg)):
                times[name].append(timed(run, group, reps))
        # Correctness: the same inputs give the same result with both (fresh inputs).
        a = flat(make(op, nbytes, size)[0](dist.group.WORLD)).clone()
        b = flat(make(op, nbytes, size)[0](tg)).clone()
        ok = torch.allclose(a.double(), b.double(), rtol=1e-6, atol=1e-3)
        row = {"op": op, "bytes": moved, "ok": ok}
        for name in times:
            med = statistics.median(times[name])
            row[name + "_us"] = med * 1e6
            row[name + "_spread_us"] = (max(times[name]) - min(times[name])) * 1e6
            row[name + "_busbw"] = moved / med / 1e9 * busbw_factor(op, size)
        row["time_ratio"] = row["tutti_us"] / row["gloo_us"]
        row["busbw_ratio"] = row["tutti_busbw"] / row["gloo_busbw"]
        rows.append(row)
    if rank == 0:
        print(f"# torch {torch.__version__}, {size} processes, {args.rounds} rounds (median; spread = max - min)")
        print("| op | bytes | gloo µs | tutti µs | gloo busbw GB/s | tutti busbw GB/s | tutti/gloo busbw | tutti/gloo time | ok |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['op']} | {r['bytes']} | {r['gloo_us']:.1f} ±{r['gloo_spread_us']:.0f} | "
                  f"{r['tutti_us']:.1f} ±{r['tutti_spread_us']:.0f} | {r['gloo_busbw']:.3f} | "
                  f"{r['tutti_busbw']:.3f} | {r['busbw_ratio']:.2f} | {r['time_ratio']:.3f} | "
                  f"{'yes' if r['ok'] else 'NO'} |")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"torch": torch.__version__, "world": size, "rows": rows}, f, indent=1)
    dist.destroy_process_group(tg)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
