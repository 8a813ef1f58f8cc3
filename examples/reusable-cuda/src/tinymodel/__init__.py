"""A two-layer MLP: the smallest model whose GPU tests mean something."""
import torch


class TinyModel(torch.nn.Module):
    def __init__(self, width: int = 256):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)
        )

    def forward(self, x):
        return self.net(x)
