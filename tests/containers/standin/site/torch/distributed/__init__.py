"""Stand-in torch.distributed: the processes started by torch.distributed.run meet in a directory
and all_reduce sums their values (the "nccl" backend needs a GPU per rank: the grant's)."""
import json
import os
import pathlib
import time

import torch

_state = {}


def init_process_group(backend, **_):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if backend == "nccl" and torch.cuda.device_count() < world:
        raise RuntimeError(f"nccl: {world} ranks but {torch.cuda.device_count()} GPU(s) visible")
    _state.update(rank=rank, world=world, step=0,
                  dir=pathlib.Path(os.environ["KILN_STANDIN_RENDEZVOUS"]))


def get_rank():
    return _state["rank"]


def get_world_size():
    return _state["world"]


def all_reduce(tensor):
    _state["step"] += 1
    step = _state["dir"] / f"all_reduce-{_state['step']}"
    step.mkdir(exist_ok=True)
    mine = step / f"{get_rank()}.json"
    mine.with_suffix(".tmp").write_text(json.dumps(tensor.values))
    mine.with_suffix(".tmp").rename(mine)
    deadline = time.monotonic() + 60
    while len(list(step.glob("*.json"))) < get_world_size():
        if time.monotonic() > deadline:
            raise TimeoutError("all_reduce: not every rank arrived within 60 s")
        time.sleep(0.01)
    parts = [json.loads(path.read_text()) for path in step.glob("*.json")]
    tensor.values = [sum(values) for values in zip(*parts)]


def destroy_process_group():
    _state.clear()
