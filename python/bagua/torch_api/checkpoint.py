"""Checkpoints for elastic training (torchrun's restart-the-world, docs/elastic.md).

Under `torchrun --nnodes=MIN:MAX --max-restarts=N` (or `python -m
bagua.distributed.run`), a failed or joining worker makes torchrun stop every
worker and start them all again; the new processes form new communicators
(Gloo and NCCL) and new buckets, and the script continues from its last
checkpoint. The pattern:

    import bagua.torch_api as bagua
    from bagua.torch_api import checkpoint

    bagua.init_process_group()
    model, opt = build()                                     # the same model every time
    start = checkpoint.load_latest(CKPT_DIR, model, [opt])   # 0 on the first run
    model = model.with_bagua([opt], algorithm)               # after loading (see below)
    for step in range(start, total_steps):
        train_step(step)                                     # data chosen by step
        if (step + 1) % every == 0:
            checkpoint.save(CKPT_DIR, step + 1, model, [opt])

- `save` writes on rank 0 only, to CKPT_DIR/step_<step>.pt through a
  temporary file and a rename, so a worker killed mid-write leaves the
  previous checkpoint intact; it keeps the newest `keep` files.
- `load_latest` loads the newest checkpoint into the model and optimizers on
  every rank (CKPT_DIR must be shared by all nodes) and returns its step.
  The ranks check they loaded the same one. A checkpoint of another model
  (a parameter added, removed or resized since it was written) is a
  ValueError naming the first difference.
- Load before `with_bagua`/DistributedDataParallel: the engine broadcasts
  rank 0's state when it is built and registers the optimizer state some
  algorithms communicate (QAdam), which loading afterwards would replace.
- The model's state is rank 0's: for decentralized algorithms, where ranks
  hold different weights, that is rank 0's replica; for async, call
  `model.bagua_algorithm.abort(model)` before saving (it averages).
"""
import os
import re

import torch
import torch.distributed as dist

FORMAT = "bagua-checkpoint/1"
_NAME = re.compile(r"^step_(\d+)\.pt$")


def _module(model):
    """The user's module under a DDP-style wrapper (state_dict keys without "module.")."""
    inner = getattr(model, "module", None)
    return inner if isinstance(inner, torch.nn.Module) else model


def _signature(module):
    return {name: [list(t.shape), str(t.dtype)] for name, t in module.state_dict().items()}


def _rank():
    return dist.get_rank() if dist.is_initialized() else 0


def path_of(directory, step):
    return os.path.join(directory, f"step_{int(step):08d}.pt")


def latest(directory):
    """(step, path) of the newest checkpoint in `directory`, or (0, None)."""
    if not os.path.isdir(directory):
        return 0, None
    steps = [int(m.group(1)) for m in map(_NAME.match, os.listdir(directory)) if m]
    if not steps:
        return 0, None
    return max(steps), path_of(directory, max(steps))


def save(directory, step, model, optimizers=(), extra=None, keep=2):
    """Rank 0 writes the model's and optimizers' state at `step`; returns the
    path on rank 0, None elsewhere. `extra`: anything torch.save takes (a
    data loader's position, a scheduler's state)."""
    if int(step) < 0:
        raise ValueError(f"bagua.checkpoint.save: step must be >= 0, got {step}")
    if _rank() != 0:
        return None
    os.makedirs(directory, exist_ok=True)
    module = _module(model)
    state = {"format": FORMAT, "step": int(step), "model": module.state_dict(),
             "optimizers": [o.state_dict() for o in optimizers],
             "signature": _signature(module), "extra": extra,
             "world_size": dist.get_world_size() if dist.is_initialized() else 1}
    path = path_of(directory, step)
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)
    older = sorted(int(m.group(1)) for m in map(_NAME.match, os.listdir(directory)) if m)
    for s in older[:-keep] if keep > 0 else []:
        try:
            os.remove(path_of(directory, s))
        except FileNotFoundError:
            pass
    return path


def _check_same_model(path, saved, here):
    missing = [k for k in saved if k not in here]
    added = [k for k in here if k not in saved]
    resized = [k for k in saved if k in here and saved[k] != here[k]]
    if not (missing or added or resized):
        return
    if resized:
        k = resized[0]
        first = f"'{k}' is {saved[k][0]} {saved[k][1]} there and {here[k][0]} {here[k][1]} here"
    elif missing:
        first = f"'{missing[0]}' is in the checkpoint but not in this model"
    else:
        first = f"'{added[0]}' is in this model but not in the checkpoint"
    count = len(missing) + len(added) + len(resized)
    raise ValueError(
        f"bagua.checkpoint: {path} was saved from a different model: {first} ({count} "
        "difference(s)); a restarted job must build the same model as the run that wrote it, "
        "or start from a new checkpoint directory")


def load_latest(directory, model, optimizers=(), map_location="cpu"):
    """Loads the newest checkpoint of `directory` into `model` and
    `optimizers`; returns its step (0, nothing loaded, when there is none).
    load() also returns the checkpoint's `extra`."""
    step, _ = load(directory, model, optimizers, map_location)
    return step


def load(directory, model, optimizers=(), map_location="cpu"):
    """load_latest() that also returns the checkpoint's `extra`: (step, extra)."""
    step, path = latest(directory)
    if dist.is_initialized() and dist.get_world_size() > 1:
        seen = [None] * dist.get_world_size()
        dist.all_gather_object(seen, step)
        if len(set(seen)) > 1:
            raise RuntimeError(
                f"bagua.checkpoint: the ranks see different newest checkpoints in {directory} "
                f"(steps {seen}, by rank): the directory must be shared by every node")
    if path is None:
        return 0, None
    state = torch.load(path, map_location=map_location, weights_only=False)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"bagua.checkpoint: {path} is not a checkpoint written by "
                         "bagua.torch_api.checkpoint.save")
    module = _module(model)
    _check_same_model(path, state["signature"], _signature(module))
    if len(state["optimizers"]) != len(optimizers):
        raise ValueError(f"bagua.checkpoint: {path} holds {len(state['optimizers'])} optimizer "
                         f"state(s), {len(optimizers)} optimizer(s) given")
    module.load_state_dict(state["model"])
    for opt, opt_state in zip(optimizers, state["optimizers"]):
        opt.load_state_dict(opt_state)
    return state["step"], state["extra"]
