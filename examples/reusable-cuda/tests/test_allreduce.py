"""Run with torch.distributed.run --nproc-per-node 2: an NCCL all-reduce across two GPUs."""
import os

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    value = torch.tensor([rank + 1.0], device="cuda")
    dist.all_reduce(value)
    world = dist.get_world_size()
    assert value.item() == world * (world + 1) / 2, value.item()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
