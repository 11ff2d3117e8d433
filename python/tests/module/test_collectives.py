"""Every collective through the Python module, in every dtype, in place and out of place,
blocking and async, each element compared with what numpy computes from the same inputs."""

import numpy as np
import pytest

import tutti
from conftest import NUMPY_TYPES, bf16_bits, bf16_values

ALL_TYPES = list(NUMPY_TYPES) + ["bfloat16"]


def values(rank, n, kind, salt=0):
    """Small integers (exact in every type and under every op) that differ per rank."""
    base = (np.arange(n, dtype=np.int64) * 7 + rank * 3 + salt) % 5 + 1
    if kind == "bfloat16":
        return bf16_bits(base)
    return base.astype(NUMPY_TYPES[kind])


def decoded(a, kind):
    return bf16_values(a).astype(np.float64) if kind == "bfloat16" else a.astype(np.float64)


def extra(kind):
    return {"dtype": "bfloat16"} if kind == "bfloat16" else {}


def reduced(arrays, op, size):
    stack = np.stack([a.astype(np.float64) for a in arrays])
    if op == "sum":
        return stack.sum(axis=0)
    if op == "prod":
        return stack.prod(axis=0)
    if op == "min":
        return stack.min(axis=0)
    if op == "max":
        return stack.max(axis=0)
    raise AssertionError(op)


@pytest.mark.parametrize("kind", ALL_TYPES)
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
@pytest.mark.parametrize("inplace", [False, True])
def test_allreduce(comm, kind, op, inplace):
    n = 37
    size = comm.size
    inputs = [values(r, n, kind) for r in range(size)]
    if op == "prod":  # 1s and 2s: every product up to 8 ranks is exact in every type
        inputs = [(a % 2 + 1) if kind != "bfloat16" else bf16_bits(bf16_values(a) % 2 + 1) for a in inputs]
    want = reduced([decoded(a, kind) for a in inputs], op, size)
    mine = inputs[comm.rank].copy()
    if inplace:
        comm.allreduce(mine, op=op, **extra(kind))
        out = mine
    else:
        out = np.empty_like(mine)
        comm.allreduce(mine, out, op=op, **extra(kind))
        np.testing.assert_array_equal(mine, inputs[comm.rank])  # the input is left alone
    np.testing.assert_array_equal(decoded(out, kind), want)


def test_allreduce_avg_and_enum_names(comm):
    x = np.full(16, float(comm.rank), dtype=np.float64)
    comm.allreduce(x, op=tutti.ReduceOp.AVG)
    np.testing.assert_array_equal(x, np.full(16, (comm.size - 1) / 2))
    y = np.arange(8, dtype=np.float32)
    comm.allreduce(y, op=tutti.SUM, dtype=tutti.FLOAT32)
    np.testing.assert_array_equal(y, np.arange(8, dtype=np.float32) * comm.size)


@pytest.mark.parametrize("kind", ["int32", "float32", "bfloat16"])
@pytest.mark.parametrize("inplace", [False, True])
def test_broadcast(comm, kind, inplace):
    for root in range(comm.size):
        src = values(root, 100, kind, salt=root)
        if inplace:
            buf = src.copy() if comm.rank == root else np.zeros_like(src)
            comm.broadcast(buf, root=root, **extra(kind))
        else:
            buf = np.zeros_like(src)
            send = src if comm.rank == root else None
            comm.broadcast(send, buf, root=root, **extra(kind))
        np.testing.assert_array_equal(buf, src)


@pytest.mark.parametrize("kind", ["uint8", "int64", "float64"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce(comm, kind, op):
    inputs = [values(r, 50, kind) for r in range(comm.size)]
    want = reduced([a.astype(np.float64) for a in inputs], op, comm.size)
    for root in range(comm.size):
        out = np.zeros_like(inputs[0])
        comm.reduce(inputs[comm.rank], out, op=op, root=root)
        if comm.rank == root:
            np.testing.assert_array_equal(out.astype(np.float64), want)
        else:
            np.testing.assert_array_equal(out, np.zeros_like(out))  # written on the root only
        inplace = inputs[comm.rank].copy()
        comm.reduce(inplace, op=op, root=root)
        if comm.rank == root:
            np.testing.assert_array_equal(inplace.astype(np.float64), want)


@pytest.mark.parametrize("kind", ALL_TYPES)
def test_allgather(comm, kind):
    n = 11
    inputs = [values(r, n, kind) for r in range(comm.size)]
    out = np.zeros(n * comm.size, dtype=inputs[0].dtype)
    comm.allgather(inputs[comm.rank], out, **extra(kind))
    np.testing.assert_array_equal(out, np.concatenate(inputs))
    # In place: each rank's block of the output is its input.
    inplace = np.zeros_like(out)
    inplace[comm.rank * n:(comm.rank + 1) * n] = inputs[comm.rank]
    comm.allgather(None, inplace, **extra(kind))
    np.testing.assert_array_equal(inplace, np.concatenate(inputs))


@pytest.mark.parametrize("kind", ["int32", "float32", "float16", "bfloat16"])
def test_reduce_scatter(comm, kind):
    n = 9
    size = comm.size
    inputs = [values(r, n * size, kind) for r in range(size)]
    full = reduced([decoded(a, kind) for a in inputs], "sum", size)
    mine = full[comm.rank * n:(comm.rank + 1) * n]
    out = np.zeros(n, dtype=inputs[0].dtype)
    comm.reduce_scatter(inputs[comm.rank], out, **extra(kind))
    np.testing.assert_array_equal(decoded(out, kind), mine)
    inplace = inputs[comm.rank].copy()
    comm.reduce_scatter(inplace, **extra(kind))
    np.testing.assert_array_equal(decoded(inplace[comm.rank * n:(comm.rank + 1) * n], kind), mine)


def test_gather_and_scatter(comm):
    n = 6
    size = comm.size
    for root in range(size):
        inputs = [values(r, n, "int64", salt=root) for r in range(size)]
        out = np.zeros(n * size, dtype=np.int64) if comm.rank == root else None
        comm.gather(inputs[comm.rank], out, root=root)
        if comm.rank == root:
            np.testing.assert_array_equal(out, np.concatenate(inputs))
        whole = np.concatenate(inputs)
        part = np.zeros(n, dtype=np.int64)
        comm.scatter(whole if comm.rank == root else None, part, root=root)
        np.testing.assert_array_equal(part, inputs[comm.rank])
        # In place at the root: its block of the whole is its input (gather) or stays (scatter).
        if comm.rank == root:
            out = np.zeros(n * size, dtype=np.int64)
            out[root * n:(root + 1) * n] = inputs[root]
            comm.gather(None, out, root=root)
            np.testing.assert_array_equal(out, np.concatenate(inputs))
            comm.scatter(whole.copy(), None, root=root)
        else:
            comm.gather(inputs[comm.rank], None, root=root)
            part = np.zeros(n, dtype=np.int64)
            comm.scatter(None, part, root=root)
            np.testing.assert_array_equal(part, inputs[comm.rank])


@pytest.mark.parametrize("inplace", [False, True])
def test_alltoall(comm, inplace):
    n = 5
    size = comm.size
    # Block b of rank r's input holds 100 * r + b.
    def block(r, b):
        return np.full(n, 100 * r + b, dtype=np.int32)
    send = np.concatenate([block(comm.rank, b) for b in range(size)])
    want = np.concatenate([block(r, comm.rank) for r in range(size)])
    if inplace:
        comm.alltoall(send)
        np.testing.assert_array_equal(send, want)
    else:
        out = np.zeros_like(send)
        comm.alltoall(send, out)
        np.testing.assert_array_equal(out, want)


def test_v_collectives(comm):
    size = comm.size
    counts = [r + 1 for r in range(size)]  # uneven
    displs = [sum(counts[:r]) + 2 * r for r in range(size)]  # with gaps
    extent = displs[-1] + counts[-1]
    mine = np.full(counts[comm.rank], comm.rank + 1, dtype=np.float32)

    out = np.full(extent, -1, dtype=np.float32)
    comm.allgatherv(mine, out, counts, displs)
    for r in range(size):
        np.testing.assert_array_equal(out[displs[r]:displs[r] + counts[r]], r + 1)
        gap = out[displs[r] + counts[r]:displs[r] + counts[r] + 2] if r < size - 1 else []
        np.testing.assert_array_equal(gap, -1)  # untouched

    packed = np.concatenate([np.full(c, i + 1, np.float32) * (comm.rank + 1) for i, c in enumerate(counts)])
    red = np.zeros(counts[comm.rank], dtype=np.float32)
    comm.reduce_scatterv(packed, red, counts)
    np.testing.assert_array_equal(red, (comm.rank + 1) * sum(r + 1 for r in range(size)))

    root = size - 1
    g = np.full(extent, -1, dtype=np.float32) if comm.rank == root else None
    comm.gatherv(mine, g, counts, displs, root=root)
    if comm.rank == root:
        for r in range(size):
            np.testing.assert_array_equal(g[displs[r]:displs[r] + counts[r]], r + 1)

    src = np.arange(extent, dtype=np.float32) if comm.rank == 0 else None
    part = np.zeros(counts[comm.rank], dtype=np.float32)
    comm.scatterv(src, part, counts, displs, root=0)
    d = displs[comm.rank]
    np.testing.assert_array_equal(part, np.arange(d, d + counts[comm.rank], dtype=np.float32))

    # all-to-all-v: rank r sends r + b + 1 elements of value 10 * r + b to rank b.
    sc = [comm.rank + b + 1 for b in range(size)]
    rc = [r + comm.rank + 1 for r in range(size)]
    send = np.concatenate([np.full(c, 10 * comm.rank + b, np.int64) for b, c in enumerate(sc)])
    recv = np.zeros(sum(rc), dtype=np.int64)
    comm.alltoallv(send, recv, sc, rc)
    np.testing.assert_array_equal(recv, np.concatenate([np.full(c, 10 * r + comm.rank, np.int64) for r, c in enumerate(rc)]))


def test_async_forms(comm):
    size = comm.size
    a = np.full(1000, comm.rank, dtype=np.float64)
    b = np.zeros(1000 * size, dtype=np.float64)
    w1 = comm.allreduce_async(a)
    w2 = comm.allgather_async(np.full(1000, comm.rank, dtype=np.float64), b)
    w3 = comm.barrier_async()
    tutti.wait_all([w1, w2, w3])
    assert w1.test() and w2.test() and w3.test()
    np.testing.assert_array_equal(a, np.full(1000, size * (size - 1) / 2))
    np.testing.assert_array_equal(b, np.repeat(np.arange(size, dtype=np.float64), 1000))
    w1.wait()  # again: the same (successful) result


def test_send_recv_ring_and_self(comm):
    size, rank = comm.size, comm.rank
    right, left = (rank + 1) % size, (rank - 1) % size
    out = np.full(64, rank, dtype=np.int32)
    got = np.zeros(64, dtype=np.int32)
    r = comm.recv_async(got, peer=left, tag=3)
    s = comm.send_async(out, peer=right, tag=3)
    tutti.wait_all([r, s])
    np.testing.assert_array_equal(got, left)
    # To itself: the receive async, the send blocking (as MPI allows).
    mine = np.zeros(8, dtype=np.float32)
    w = comm.recv_async(mine, peer=rank)
    comm.send(np.arange(8, dtype=np.float32), peer=rank)
    w.wait()
    np.testing.assert_array_equal(mine, np.arange(8, dtype=np.float32))


def test_buffers_of_other_kinds(comm):
    # bytearray and memoryview are buffers too; a memoryview of a numpy array keeps its type.
    b = bytearray([comm.rank + 1] * 10)
    comm.allreduce(b, op="max")
    assert bytes(b) == bytes([comm.size] * 10)
    arr = np.ones(12, dtype=np.int32)
    comm.allreduce(memoryview(arr))
    np.testing.assert_array_equal(arr, comm.size)
    # 2-D C-contiguous arrays are one run of elements.
    m = np.full((3, 4), comm.rank, dtype=np.float32)
    comm.allreduce(m, op="max")
    np.testing.assert_array_equal(m, comm.size - 1)
    # Zero elements are a call like any other.
    comm.allreduce(np.zeros(0, dtype=np.float32))


def test_split(comm):
    sub = comm.split(comm.rank % 2, key=-comm.rank)
    try:
        members = [r for r in range(comm.size) if r % 2 == comm.rank % 2]
        assert sub.size == len(members)
        assert sub.rank == sorted(members, reverse=True).index(comm.rank)
        x = np.array([comm.rank], dtype=np.int64)
        sub.allreduce(x)
        assert x[0] == sum(members)
    finally:
        sub.destroy()
    assert comm.split(tutti.Communicator.NO_COLOR) is None


def test_module_metadata(comm):
    assert tutti.__version__.count(".") == 2
    assert "rank %d of %d" % (comm.rank, comm.size) in repr(comm)
    assert comm.name == "world"
