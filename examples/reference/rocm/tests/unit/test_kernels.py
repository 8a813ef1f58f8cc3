import pytest

torch = pytest.importorskip("torch")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a ROCm GPU")
def test_add_on_gpu():
    a = torch.ones(1024, device="cuda")
    assert torch.equal(a + a, torch.full((1024,), 2.0, device="cuda"))
