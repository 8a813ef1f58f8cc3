"""Stand-in for PyTorch in Kiln's reference-pipeline images (see ../../README.md): the GPU count
is the job's grant; there is no math and no real device."""
import os

from . import nn  # noqa: F401

__version__ = "0.0+kiln.standin"


def _visible():
    for key in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        value = os.environ.get(key)
        if value:
            return [item for item in value.split(",") if item]
    return []


class _Cuda:
    @staticmethod
    def is_available():
        return False  # a simulated GPU has nothing behind it: GPU tests skip

    @staticmethod
    def device_count():
        return len(_visible())

    @staticmethod
    def set_device(index):
        if not 0 <= index < len(_visible()):
            raise RuntimeError(f"invalid device ordinal {index}: {len(_visible())} GPU(s) visible")


cuda = _Cuda()


class Tensor:
    def __init__(self, values, device="cpu"):
        self.values = [float(v) for v in values]
        self.device = device

    def item(self):
        if len(self.values) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.values[0]


def tensor(values, device="cpu"):
    return Tensor(values, device)


from . import distributed  # noqa: E402,F401
