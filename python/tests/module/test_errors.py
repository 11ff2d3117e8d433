"""Bad input from Python: arrays the library cannot use are a ValueError or TypeError
before anything moves (the communicator stays usable), the library's own errors are the
tutti.Error subclass named after their status, on every rank, with the full message."""

import threading

import numpy as np
import pytest

import tutti


def still_works(comm):
    x = np.ones(4, dtype=np.int64)
    comm.allreduce(x)
    np.testing.assert_array_equal(x, comm.size)


def test_bad_arrays_are_refused_before_anything_moves(comm):
    a = np.zeros((4, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.allreduce(a[:, 1])
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        comm.allreduce(ro)
    with pytest.raises(ValueError, match="read-only"):
        comm.allreduce(np.zeros(4, np.float32), bytes(16))
    with pytest.raises(ValueError, match="recvbuf holds 3 elements"):
        comm.allreduce(np.zeros(4, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="float32 and sendbuf holds float64|holds float64"):
        comm.allreduce(np.zeros(4, np.float64), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="format '\\?'|no tutti type"):
        comm.allreduce(np.zeros(4, dtype=bool))
    with pytest.raises(ValueError, match="int16|no tutti type"):
        comm.allreduce(np.zeros(4, dtype=np.int16))
    with pytest.raises(ValueError, match="big-endian"):
        comm.allreduce(np.zeros(4, dtype=">f4"))
    with pytest.raises(ValueError, match="not float32 as dtype"):
        comm.allreduce(np.zeros(4, np.float64), dtype="float32")
    with pytest.raises(ValueError, match="not a whole number"):
        comm.allreduce(bytearray(6), dtype="float32")
    with pytest.raises(ValueError, match="dtype 'float128'"):
        comm.allreduce(np.zeros(4, np.float32), dtype="float128")
    with pytest.raises(ValueError, match="op 'mean'"):
        comm.allreduce(np.zeros(4, np.float32), op="mean")
    with pytest.raises(TypeError, match="buffer protocol"):
        comm.allreduce([1.0, 2.0])
    if comm.size > 1:
        with pytest.raises(ValueError, match="must split into"):
            comm.alltoall(np.zeros(comm.size * 3 + 1, np.float32))
    with pytest.raises(ValueError, match="one per rank"):
        comm.allgatherv(np.zeros(1, np.float32), np.zeros(10, np.float32), [1] * (comm.size + 1))
    with pytest.raises(ValueError, match="root 99"):
        comm.broadcast(np.zeros(4, np.float32), root=99)
    if comm.size > 1:
        other = 1 if comm.rank == 0 else 0
        with pytest.raises(ValueError, match="sendbuf is None on a rank that is not the root"):
            comm.gather(None, np.zeros(4 * comm.size, np.float32), root=other)
        with pytest.raises(ValueError, match="recvbuf is None on a rank that is not the root"):
            comm.scatter(np.zeros(4 * comm.size, np.float32), None, root=other)
    with pytest.raises(ValueError, match="timeout"):
        comm.barrier(timeout=-1)
    still_works(comm)


def test_library_errors_name_the_problem_on_every_rank(fresh):
    # Counts that differ between ranks: every rank raises MismatchError naming both calls.
    n = 8 + fresh.rank % 2 if fresh.size > 1 else 8
    x = np.zeros(n, dtype=np.float32)
    if fresh.size == 1:
        fresh.allreduce(x)
        return
    with pytest.raises(tutti.MismatchError) as info:
        fresh.allreduce(x)
    err = info.value
    assert isinstance(err, tutti.Error)
    assert err.code == "mismatch"
    assert "allreduce" in err.message
    assert isinstance(fresh.last_error(), tutti.Error)
    # A failed communicator refuses later calls, saying why.
    with pytest.raises(tutti.Error):
        fresh.barrier()


def test_a_peer_out_of_range_is_an_invalid_argument(fresh):
    with pytest.raises(tutti.InvalidArgumentError) as info:
        fresh.send(np.zeros(4, np.float32), peer=fresh.size + 5)
    assert isinstance(info.value, ValueError)  # also a ValueError
    assert str(fresh.size + 5) in info.value.message


def test_a_timed_wait_raises_timeout_and_the_call_goes_on(comm):
    if comm.size == 1:
        pytest.skip("needs a peer that has not sent yet")
    side = comm.split(0)  # the token that says "you may send now" travels on its own comm
    try:
        token = np.zeros(1, np.int8)
        if comm.rank == 0:
            got = np.zeros(4, np.int64)
            w = comm.recv_async(got, peer=1)
            with pytest.raises(tutti.TimeoutError) as info:
                w.wait(timeout=0.05)  # rank 1 sends only after the token below
            assert isinstance(info.value, TimeoutError)
            assert not w.test()
            side.send(token, peer=1)
            w.wait()
            np.testing.assert_array_equal(got, [1, 2, 3, 4])
        elif comm.rank == 1:
            side.recv(token, peer=0)
            comm.send(np.array([1, 2, 3, 4], np.int64), peer=0)
    finally:
        side.destroy()


def test_blocking_calls_release_the_gil(comm):
    # Rank 0 blocks in a receive that rank 1 answers only after a Python thread of rank 0
    # has run (it sends rank 1 the go-ahead on a communicator of its own). Were the GIL held
    # through the receive, that thread could not run and the receive would time out.
    if comm.size == 1:
        pytest.skip("needs two ranks")
    side = comm.split(0)
    try:
        if comm.rank == 0:
            helper = threading.Thread(target=lambda: side.send(np.ones(1, np.int8), peer=1))
            got = np.zeros(1, np.int64)
            helper.start()
            comm.recv(got, peer=1, timeout=60)
            helper.join()
            assert got[0] == 42
        elif comm.rank == 1:
            side.recv(np.zeros(1, np.int8), peer=0)
            comm.send(np.array([42], np.int64), peer=0)
    finally:
        side.destroy()
