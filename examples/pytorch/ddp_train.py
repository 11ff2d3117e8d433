"""Train a small recommender model with DistributedDataParallel over tutti's backend.

    torchrun --nproc_per_node 2 examples/pytorch/ddp_train.py            # the "tutti" backend
    torchrun --nproc_per_node 2 examples/pytorch/ddp_train.py --backend gloo

(With Debian's torch 1.13 add `--redirects 1 --tee 1` to torchrun.) The model is an
embedding table (its gradient dense, so DDP all-reduces the whole table every step) under a
two-layer MLP; each rank trains on its own synthetic batch (a fixed seed per rank). Rank 0
prints the loss averaged over the ranks at every step and, with --out, writes the losses,
the step times and a digest of the final parameters as JSON.
"""

import argparse
import hashlib
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti.torch  # noqa: F401 - registers the "tutti" backend


class Recommender(nn.Module):
    def __init__(self, vocab, dim, width):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, ids):
        return self.mlp(self.embedding(ids))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tutti")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=32768, help="rows of the embedding table")
    parser.add_argument("--dim", type=int, default=64, help="columns of the embedding table")
    parser.add_argument("--width", type=int, default=256, help="the MLP's hidden width")
    parser.add_argument("--out", help="write losses and a parameter digest here (rank 0)")
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same model on every rank (DDP broadcasts rank 0's anyway)
    model = Recommender(args.vocab, args.dim, args.width)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    data = torch.Generator().manual_seed(1234 + rank)

    losses, step_times = [], []
    for step in range(args.steps):
        x = torch.randint(0, args.vocab, (args.batch, 8), generator=data)  # 8 ids per sample
        y = (x % 7 == 0).float().mean(dim=1, keepdim=True)  # share of ids divisible by 7
        start = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        step_times.append(time.perf_counter() - start)
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        mean /= size
        losses.append(mean.item())
        if rank == 0:
            print(f"step {step:3d}  loss {losses[-1]:.6f}", flush=True)

    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"backend": args.backend, "world": size, "losses": losses,
                       "step_seconds": step_times, "params_sha256": digest.hexdigest()}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
