"""Fixtures of the torch backend's tests. They run under torchrun (one pytest per
process): Gloo is the default group and tutti a second group over the same ranks, so each
test runs an op with both on the same inputs and compares."""

import pytest
import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401 - registers the backend


@pytest.fixture(scope="session")
def groups():
    dist.init_process_group("gloo")
    tg = dist.new_group(backend="tutti")
    yield dist.group.WORLD, tg
    dist.destroy_process_group(tg)
    dist.destroy_process_group()


def same_as_gloo(ours, theirs, dtype):
    """Integers exactly; floats within 1e-6 relative (sums in another order)."""
    if dtype.is_floating_point:
        torch.testing.assert_close(ours.double(), theirs.double(), rtol=1e-6, atol=1e-6)
    else:
        assert torch.equal(ours, theirs), (ours, theirs)
