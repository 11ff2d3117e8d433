"""The torch.distributed backend "tutti".

    import torch.distributed as dist
    import tutti.torch  # registers the backend
    dist.init_process_group("tutti")  # under torchrun (or with init_method=...)

It rendezvous through the store torch hands it (no extra port) and takes torch's timeout.
Every op runs asynchronously on tutti's async calls; a failure (a rank that died, a
mismatched call) is an exception on every rank within the timeout, naming the rank.
Supported: all_reduce (SUM, AVG, PRODUCT, MIN, MAX), all_reduce_coalesced, broadcast,
reduce, all_gather, _all_gather_base, gather, scatter, reduce_scatter,
_reduce_scatter_base, all_to_all_single (with split sizes), all_to_all, barrier, send and
recv, on CPU tensors of uint8, int8, int32, int64, float16, bfloat16, float32, float64.
"""

import torch.distributed as _dist

from ._tutti_torch import ProcessGroupTutti


def _create_process_group(store, rank, size, timeout):
    return ProcessGroupTutti(store, rank, size, timeout)


if not hasattr(_dist.Backend, "TUTTI"):
    _dist.Backend.register_backend("tutti", _create_process_group)

__all__ = ["ProcessGroupTutti"]
