"""The install keeps CUDA off CPU machines: a CPU torch build comes with no nvidia-* libraries
(a stray `torch` or `torchvision` requirement would pull a CUDA build and 3 GB of them)."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest


def test_a_cpu_torch_has_no_cuda_libraries_beside_it():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("no torch installed (the base install): nothing could pull CUDA")
    import torch

    if torch.version.cuda is not None:
        pytest.skip(f"a CUDA build of torch ({torch.version.cuda}): a GPU machine's install")
    names = sorted({d.metadata["Name"] for d in importlib.metadata.distributions()})
    cuda = [n for n in names if n.lower().replace("_", "-").startswith(("nvidia-", "cuda-"))]
    assert not cuda, f"CUDA libraries beside a CPU torch: {cuda}"
