"""The original's checkpoint helpers (`bagua.torch_api.checkpoint`), for
restarts and elastic training (torchrun's restart-the-world, docs/elastic.md).

Under `torchrun --nnodes=MIN:MAX --max-restarts=N` (or `python -m
bagua.distributed.run`), a failed or joining worker makes torchrun stop every
worker and start them all again; the new processes form new communicators
(Gloo and NCCL) and new buckets, and the script continues from its newest
checkpoint:

    import bagua.torch_api as bagua
    from bagua.torch_api.checkpoint import load_checkpoint, save_checkpoint

    bagua.init_process_group()
    model, opt = build()                                  # the same model every time
    start = load_checkpoint(CKPT_DIR, model, opt)         # 0 when there is none
    model = model.with_bagua([opt], algorithm)            # after loading (see below)
    for step in range(start, total_steps):
        train_step(step)                                  # data chosen by step
        if (step + 1) % every == 0:
            save_checkpoint(step + 1, CKPT_DIR, model, opt)

The files are the original's: CKPT_DIR/iter_<7 digits>/mp_rank_00_model_states.pt
({"iteration", "model", "optimizer", "lr_scheduler"}) and the tracker
CKPT_DIR/latest_checkpointed_iteration.txt, so checkpoints of either version
load in the other (mixture-of-experts layers are not supported here).
Changed from the original:
- Written through a temporary file and a rename, the checkpoint first and
  the tracker last: a worker killed mid-write leaves the previous checkpoint
  in effect. `keep=N` deletes all but the newest N.
- `load_checkpoint` compares the checkpoint's parameters and buffers with
  the model's before loading: a model changed since (a layer added, removed
  or resized) is a ValueError naming the first difference, and the ranks
  check they read the same iteration (CKPT_DIR must be shared by all nodes).
- `optimizer` may also be a list of optimizers; a DistributedDataParallel
  wrapper is saved as its module (the keys are the model's either way).
Load before `with_bagua`/DistributedDataParallel: the engine broadcasts rank
0's state when it is built and registers optimizer state some algorithms
communicate (QAdam), which loading afterwards would replace. The model's
state is rank 0's: for decentralized algorithms, where ranks hold different
weights, rank 0's replica; with async, call `model.bagua_algorithm.abort(model)`
before saving (it averages).
"""
import os
import shutil

import torch
import torch.distributed as dist

TRACKER = "latest_checkpointed_iteration.txt"


def _module(model):
    """The user's module under a DDP wrapper, Bagua's or torch's (keys
    without "module."); any other module as it is (a child that happens to
    be called `module` is one of its children, not a wrapped model)."""
    from .data_parallel import DistributedDataParallel

    wrappers = (DistributedDataParallel, torch.nn.parallel.DistributedDataParallel)
    inner = getattr(model, "module", None)
    return inner if isinstance(model, wrappers) and isinstance(inner, torch.nn.Module) else model


def _rank():
    return dist.get_rank() if dist.is_initialized() else 0


def _optimizers(optimizer):
    if optimizer is None:
        return []
    return list(optimizer) if isinstance(optimizer, (list, tuple)) else [optimizer]


def checkpoint_path(checkpoints_path, iteration, release=False):
    """Where iteration `iteration` is (the original's layout; a release
    checkpoint lives in "release/")."""
    directory = "release" if release else f"iter_{int(iteration):07d}"
    return os.path.join(checkpoints_path, directory, "mp_rank_00_model_states.pt")


def _tracked(checkpoints_path):
    """(iteration, release) as the tracker says: (0, False) without one, (0,
    True) for "release" (the original's name for a released model)."""
    tracker = os.path.join(checkpoints_path, TRACKER)
    if not os.path.isfile(tracker):
        return 0, False
    with open(tracker) as f:
        text = f.read().strip()
    if text == "release":
        return 0, True
    try:
        return int(text), False
    except ValueError:
        raise ValueError(f"bagua.checkpoint: {tracker} holds {text!r}, not an iteration "
                         "number or \"release\"") from None


def latest_iteration(checkpoints_path):
    """The iteration the tracker names, or 0 when there is no checkpoint
    (or it is a release checkpoint)."""
    return _tracked(checkpoints_path)[0]


def _fsync(path, directory=False):
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(path, write):
    """`write(tmp)`, then tmp renamed to `path`: a reader sees the old file
    or the whole new one. The data reaches the disk before the rename does
    (fsync), so a machine that crashes (the usual elastic failure, unlike a
    killed process) cannot leave a tracker naming a checkpoint whose data
    never landed. A failed write (disk full) removes its temporary file."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        write(tmp)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync(directory, directory=True)


def save_checkpoint(iteration, checkpoints_path, model, optimizer=None, lr_scheduler=None,
                    keep=None):
    """Rank 0 writes the model's (and optimizer's, scheduler's) state for
    `iteration`, then the tracker; every rank waits for it (a barrier).
    `keep`: how many checkpoints to keep (default: all)."""
    if int(iteration) < 0:
        raise ValueError(f"bagua.checkpoint: iteration must be >= 0, got {iteration}")
    if _rank() == 0:
        state = {"iteration": int(iteration), "model": _module(model).state_dict(),
                 "world_size": dist.get_world_size() if dist.is_initialized() else 1}
        optimizers = _optimizers(optimizer)
        if optimizers:
            states = [o.state_dict() for o in optimizers]
            state["optimizer"] = states if isinstance(optimizer, (list, tuple)) else states[0]
        if lr_scheduler is not None:
            state["lr_scheduler"] = lr_scheduler.state_dict()
        _atomic_write(checkpoint_path(checkpoints_path, iteration),
                      lambda tmp: torch.save(state, tmp))

        def tracker(tmp):
            with open(tmp, "w") as f:
                f.write(str(int(iteration)))

        _atomic_write(os.path.join(checkpoints_path, TRACKER), tracker)
        if keep is not None:
            _prune(checkpoints_path, int(keep), int(iteration))
    if dist.is_initialized():
        dist.barrier()


def _prune(checkpoints_path, keep, newest):
    """Keeps the newest `keep` complete checkpoints. A directory without its
    model file (a save killed before the rename left only a temporary file)
    is no checkpoint: it is removed, not counted (it pushed a good one out)."""
    found = sorted(int(d[len("iter_"):]) for d in os.listdir(checkpoints_path)
                   if d.startswith("iter_") and d[len("iter_"):].isdigit())
    complete = []
    for i in found:
        if os.path.isfile(checkpoint_path(checkpoints_path, i)):
            complete.append(i)
        elif i != newest:
            shutil.rmtree(os.path.dirname(checkpoint_path(checkpoints_path, i)),
                          ignore_errors=True)
    for old in [i for i in complete if i != newest][:max(0, len(complete) - max(keep, 1))]:
        shutil.rmtree(os.path.dirname(checkpoint_path(checkpoints_path, old)),
                      ignore_errors=True)


def _signature(state_dict):
    return {k: (list(v.shape), str(v.dtype)) for k, v in state_dict.items()
            if isinstance(v, torch.Tensor)}


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
    raise ValueError(
        f"bagua.checkpoint: {path} was saved from a different model: {first} "
        f"({len(missing) + len(added) + len(resized)} difference(s)); a restarted job must "
        "build the same model as the run that wrote it, or start from a new checkpoint path")


def load_checkpoint(checkpoints_path, model, optimizer=None, lr_scheduler=None, strict=True,
                    map_location="cpu"):
    """Loads the newest checkpoint of `checkpoints_path` into the model (and
    optimizer, scheduler); returns its iteration, or 0 (nothing loaded)
    when there is none. With strict (the default) a checkpoint of another
    model is a ValueError naming the first difference."""
    iteration, release = _tracked(checkpoints_path)
    if dist.is_initialized() and dist.get_world_size() > 1:
        seen = [None] * dist.get_world_size()
        dist.all_gather_object(seen, (iteration, release))
        if len(set(seen)) > 1:
            raise RuntimeError(
                f"bagua.checkpoint: the ranks see different newest checkpoints in "
                f"{checkpoints_path} (iterations {seen}, by rank): it must be shared by every "
                "node")
    path = checkpoint_path(checkpoints_path, iteration, release)
    if not os.path.isfile(path):
        if iteration == 0 and not release:
            return 0  # no checkpoint yet
        raise FileNotFoundError(f"bagua.checkpoint: the tracker of {checkpoints_path} names "
                                f"{path}, which does not exist")
    state = torch.load(path, map_location=map_location, weights_only=False)
    module = _module(model)
    if strict:
        _check_same_model(path, _signature(state["model"]), _signature(module.state_dict()))
    module.load_state_dict(state["model"], strict=strict)
    optimizers = _optimizers(optimizer)
    if optimizers:
        saved = state.get("optimizer")
        saved = [] if saved is None else saved if isinstance(saved, list) else [saved]
        if len(saved) != len(optimizers):
            raise ValueError(f"bagua.checkpoint: {path} holds {len(saved)} optimizer state(s), "
                             f"{len(optimizers)} optimizer(s) given")
        for opt, opt_state in zip(optimizers, saved):
            opt.load_state_dict(opt_state)
    if lr_scheduler is not None:
        lr_scheduler.load_state_dict(state["lr_scheduler"])
    return 0 if release else state["iteration"]
