"""Every op of the tutti backend against Gloo's on the same inputs (or, where Gloo has no
such op or type, against what torch computes from inputs gathered through Gloo)."""

import datetime

import pytest
import torch
import torch.distributed as dist

from conftest import same_as_gloo

INT_TYPES = [torch.uint8, torch.int8, torch.int32, torch.int64]
FLOAT_TYPES = [torch.float32, torch.float64]
GLOO_TYPES = INT_TYPES + FLOAT_TYPES + [torch.float16]


def data(shape, dtype, salt=0):
    g = torch.Generator().manual_seed(1000 * dist.get_rank() + salt)
    if dtype in (torch.float16, torch.bfloat16):
        # Small integers: their sums are exact in 16 bits whatever the order of the adds.
        return torch.randint(-4, 5, shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(0, 5, shape, generator=g).to(dtype)


def gathered(t, gloo):
    """Every rank's t, in rank order, through Gloo."""
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t, group=gloo)
    return out


@pytest.mark.parametrize("dtype", GLOO_TYPES)
@pytest.mark.parametrize("op", ["SUM", "PRODUCT", "MIN", "MAX"])
@pytest.mark.parametrize("shape", [(1,), (7, 33), (1000,)])
def test_all_reduce(groups, dtype, op, shape):
    gloo, tg = groups
    if dtype == torch.float16 and op != "SUM":
        pytest.skip("Gloo reduces float16 with SUM only")
    x = data(shape, dtype)
    if op == "PRODUCT":
        x = x % 2 + 1 if not dtype.is_floating_point else (x.abs() + 0.5)
    a, b = x.clone(), x.clone()
    dist.all_reduce(a, op=getattr(dist.ReduceOp, op), group=gloo)
    dist.all_reduce(b, op=getattr(dist.ReduceOp, op), group=tg)
    same_as_gloo(b, a, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_all_reduce_avg(groups, dtype):
    gloo, tg = groups
    x = data((100,), dtype)
    want = torch.stack(gathered(x, gloo)).sum(0)
    want = want / dist.get_world_size() if dtype.is_floating_point else torch.div(want, dist.get_world_size(), rounding_mode="floor")
    dist.all_reduce(x, op=dist.ReduceOp.AVG, group=tg)
    same_as_gloo(x, want.to(dtype), dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_all_reduce_16_bit_floats(groups, dtype):
    gloo, tg = groups
    x = torch.randint(0, 5, (257,)).to(dtype)  # small integers: exact in any order
    x += dist.get_rank()
    want = torch.stack([t.double() for t in gathered(x.double(), gloo)]).sum(0)
    dist.all_reduce(x, group=tg)
    assert torch.equal(x.double(), want)


def test_all_reduce_non_contiguous(groups):
    gloo, tg = groups
    base = data((8, 6), torch.float32)
    a, b = base.clone().t(), base.clone().t()  # transposed views
    assert not b.is_contiguous()
    dist.all_reduce(a, group=gloo)
    dist.all_reduce(b, group=tg)
    same_as_gloo(b, a, torch.float32)


def test_all_reduce_coalesced(groups):
    gloo, tg = groups
    xs = [data((n,), torch.float32, salt=n) for n in (3, 100, 17)]
    ours = [x.clone() for x in xs]
    dist.all_reduce_coalesced(ours, group=tg)
    for x, o in zip(xs, ours):
        y = x.clone()
        dist.all_reduce(y, group=gloo)
        same_as_gloo(o, y, torch.float32)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_broadcast_and_reduce(groups, dtype):
    gloo, tg = groups
    for root in range(dist.get_world_size()):
        x = data((50,), dtype, salt=root)
        a, b = x.clone(), x.clone()
        dist.broadcast(a, src=root, group=gloo)
        dist.broadcast(b, src=root, group=tg)
        same_as_gloo(b, a, dtype)
        a, b = x.clone(), x.clone()
        dist.reduce(a, dst=root, group=gloo)
        dist.reduce(b, dst=root, group=tg)
        if dist.get_rank() == root:
            same_as_gloo(b, a, dtype)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_all_gather(groups, dtype):
    gloo, tg = groups
    x = data((3, 5), dtype)
    size = dist.get_world_size()
    a = [torch.empty_like(x) for _ in range(size)]
    b = [torch.empty_like(x) for _ in range(size)]
    dist.all_gather(a, x, group=gloo)
    dist.all_gather(b, x, group=tg)
    for p, q in zip(b, a):
        same_as_gloo(p, q, dtype)
    flat = torch.empty(size * 15, dtype=dtype)
    dist._all_gather_base(flat, x.reshape(-1), group=tg)
    same_as_gloo(flat, torch.cat([t.reshape(-1) for t in a]), dtype)


def test_gather_and_scatter(groups):
    gloo, tg = groups
    size = dist.get_world_size()
    for root in range(size):
        x = data((9,), torch.int32, salt=root)
        a = [torch.empty_like(x) for _ in range(size)] if dist.get_rank() == root else None
        b = [torch.empty_like(x) for _ in range(size)] if dist.get_rank() == root else None
        dist.gather(x, a, dst=root, group=gloo)
        dist.gather(x, b, dst=root, group=tg)
        if dist.get_rank() == root:
            for p, q in zip(b, a):
                same_as_gloo(p, q, torch.int32)
        parts = [data((9,), torch.int32, salt=100 + i) for i in range(size)] if dist.get_rank() == root else None
        a, b = torch.empty(9, dtype=torch.int32), torch.empty(9, dtype=torch.int32)
        dist.scatter(a, parts, src=root, group=gloo)
        dist.scatter(b, parts, src=root, group=tg)
        same_as_gloo(b, a, torch.int32)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_reduce_scatter(groups, dtype):
    gloo, tg = groups
    size, rank = dist.get_world_size(), dist.get_rank()
    parts = [data((4, 3), dtype, salt=i) for i in range(size)]
    # Gloo has no reduce-scatter in torch 1.13: the expectation is the sum, through Gloo,
    # of every rank's part for this rank.
    want = parts[rank].clone()
    everyone = [gathered(p, gloo) for p in parts]
    want = torch.stack(everyone[rank]).sum(0).to(dtype)
    out = torch.empty(4, 3, dtype=dtype)
    dist.reduce_scatter(out, parts, group=tg)
    same_as_gloo(out, want, dtype)
    flat_out = torch.empty(12, dtype=dtype)
    dist._reduce_scatter_base(flat_out, torch.cat([p.reshape(-1) for p in parts]), group=tg)
    same_as_gloo(flat_out, want.reshape(-1), dtype)


def test_all_to_all(groups):
    gloo, tg = groups
    size, rank = dist.get_world_size(), dist.get_rank()
    x = data((size * 4, 2), torch.float64)
    a, b = torch.empty_like(x), torch.empty_like(x)
    dist.all_to_all_single(a, x, group=gloo)
    dist.all_to_all_single(b, x, group=tg)
    same_as_gloo(b, a, torch.float64)
    # Uneven: rank r sends r + j + 1 rows to rank j.
    in_splits = [rank + j + 1 for j in range(size)]
    out_splits = [j + rank + 1 for j in range(size)]
    x = data((sum(in_splits), 3), torch.int64)
    a = torch.empty(sum(out_splits), 3, dtype=torch.int64)
    b = torch.empty_like(a)
    dist.all_to_all_single(a, x, out_splits, in_splits, group=gloo)
    dist.all_to_all_single(b, x, out_splits, in_splits, group=tg)
    same_as_gloo(b, a, torch.int64)
    # The list form.
    ins = [data((j + 1,), torch.int32, salt=j) for j in range(size)]
    outs = [torch.empty(rank + 1, dtype=torch.int32) for _ in range(size)]
    dist.all_to_all(outs, ins, group=tg)
    # Gloo has only the single-tensor form: the same exchange through it.
    want = torch.empty((rank + 1) * size, dtype=torch.int32)
    dist.all_to_all_single(want, torch.cat(ins), [rank + 1] * size, [j + 1 for j in range(size)], group=gloo)
    same_as_gloo(torch.cat(outs), want, torch.int32)


def test_send_recv_and_barrier(groups):
    _, tg = groups
    size, rank = dist.get_world_size(), dist.get_rank()
    if size > 1:
        x = torch.full((10,), float(rank))
        y = torch.empty(10)
        right, left = (rank + 1) % size, (rank - 1) % size
        if rank % 2 == 0:
            dist.send(x, dst=right, group=tg)
            dist.recv(y, src=left, group=tg)
        else:
            dist.recv(y, src=left, group=tg)
            dist.send(x, dst=right, group=tg)
        assert torch.equal(y, torch.full((10,), float(left)))
    dist.barrier(group=tg)


def test_async_work_and_future(groups):
    gloo, tg = groups
    x = data((1000,), torch.float32)
    a = x.clone()
    dist.all_reduce(a, group=gloo)
    b, c = x.clone(), x.clone()
    w1 = dist.all_reduce(b, group=tg, async_op=True)
    w2 = dist.all_reduce(c, group=tg, async_op=True)
    fut = w2.get_future()
    assert w1.wait()
    assert w1.is_completed() and w1.is_success()  # (torch 1.13 cannot return exception())
    result = fut.wait()
    same_as_gloo(b, a, torch.float32)
    same_as_gloo(result[0], a, torch.float32)
    # A future asked for before the op has run completes without anyone waiting on the Work.
    d = x.clone()
    chained = dist.all_reduce(d, group=tg, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    same_as_gloo(chained.wait(), a * 2, torch.float32)


def test_unsupported_input_is_an_error(groups):
    _, tg = groups
    with pytest.raises(RuntimeError, match="int16|not supported"):
        dist.all_reduce(torch.zeros(4, dtype=torch.int16), group=tg)
    with pytest.raises(RuntimeError, match="BAND|not supported"):
        dist.all_reduce(torch.zeros(4, dtype=torch.int32), op=dist.ReduceOp.BAND, group=tg)
    dist.barrier(group=tg)  # still usable: refused before anything moved


def test_a_timed_wait_raises_and_the_op_goes_on(groups):
    gloo, tg = groups
    if dist.get_world_size() < 2:
        pytest.skip("needs a peer that has not sent yet")
    if dist.get_rank() == 0:
        got = torch.zeros(4, dtype=torch.int64)
        w = dist.irecv(got, src=1, group=tg)
        with pytest.raises(RuntimeError, match="timed out"):
            w.wait(timeout=datetime.timedelta(milliseconds=50))  # rank 1 sends after the barrier
        assert not w.is_completed()
        dist.barrier(group=gloo)
        w.wait()
        assert torch.equal(got, torch.arange(4))
    else:
        dist.barrier(group=gloo)
        if dist.get_rank() == 1:
            dist.send(torch.arange(4), dst=0, group=tg)
