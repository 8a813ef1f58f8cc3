import pytest
import torch

from tinymodel import TinyModel

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_forward_matches_cpu():
    model = TinyModel()
    x = torch.randn(64, 256)
    expected = model(x)
    got = model.cuda()(x.cuda()).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)


def test_memory_is_released():
    before = torch.cuda.memory_allocated()
    x = torch.randn(4096, 4096, device="cuda")
    del x
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == before
