"""DDP through the tutti backend, run as a user would (torchrun and the example in
examples/pytorch): every step's loss equals Gloo's run within 1e-5, and two tutti runs give
bitwise-equal parameters. Runs outside torchrun: it launches torchrun itself, three times, on
4 ranks (more ranks than this machine's cores; test_ops covers 2). Each launch costs about
10 s of CI, most of it torch's import."""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from launch import ROOT, torchrun

EXAMPLE = os.path.join(ROOT, "examples", "pytorch", "ddp_train.py")


def train(backend, nproc, tmp):
    out = os.path.join(tmp, f"{backend}-{nproc}-{len(os.listdir(tmp))}.json")
    torchrun(nproc, [EXAMPLE, "--backend", backend, "--steps", "20", "--out", out], timeout=240)
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("nproc", [4])
def test_ddp_matches_gloo_and_is_reproducible(nproc):
    with tempfile.TemporaryDirectory() as tmp:
        gloo = train("gloo", nproc, tmp)
        ours = train("tutti", nproc, tmp)
        assert len(ours["losses"]) == 20
        for step, (a, b) in enumerate(zip(ours["losses"], gloo["losses"])):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), f"step {step}: tutti {a}, gloo {b}"
        again = train("tutti", nproc, tmp)
        assert again["params_sha256"] == ours["params_sha256"]
        assert again["losses"] == ours["losses"]
