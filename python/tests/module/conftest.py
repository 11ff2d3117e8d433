"""Fixtures of the Python tests. They run under tutti-run (tests register
`tutti-run -n N python3 -m pytest ...`): every rank runs the same tests in the same order,
so the collectives in them meet. One world communicator serves the whole session; a test
that fails a communicator on purpose works on a split of it."""

import numpy as np
import pytest

import tutti


@pytest.fixture(scope="session")
def comm():
    c = tutti.Communicator.from_env()
    yield c
    c.destroy()


@pytest.fixture
def fresh(comm):
    """A communicator of every rank for one test, which it may fail; destroyed after."""
    c = comm.split(0)
    yield c
    try:
        c.destroy()
    except tutti.Error:
        pass  # a test that failed it on purpose has checked what it wanted


# numpy dtypes for tutti's types; bfloat16 travels as uint16 bit patterns.
NUMPY_TYPES = {
    "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "uint32": np.uint32,
    "int64": np.int64, "uint64": np.uint64, "float16": np.float16, "float32": np.float32,
    "float64": np.float64,
}


def bf16_bits(values):
    """bfloat16 bit patterns (uint16) of float32 values exactly representable in bfloat16."""
    return (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)
