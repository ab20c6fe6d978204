"""What local SGD and DiLoCo share (local_sgd.py, diloco.py): the
algorithms that let every rank take local optimizer steps and synchronise
the weights only now and then, in the runtime (runtime/algorithms/
local_sgd.h, diloco.h).

- Warm-up: during `warmup_steps` training steps the gradients are averaged
  by the runtime's gradient allreduce; at the first forward after it the
  engine resets (broadcasts from rank 0, which changes nothing after a
  synchronous warm-up) and the runtime's LocalSGD / DiLoCo takes the
  weights in forward (registration) order.
- After every training step's optimizer steps (all the optimizers given to
  with_bagua), `after_step` runs on the training thread; only a sync
  communicates.
- Checkpoints: the module's state_dict gains `_bagua_<name>.*` entries (the
  step count and, for DiLoCo, the start point, outer momentum, error
  feedback residuals and updates in flight), and load_state_dict takes them
  back, so a restarted run continues exactly. The weights of different ranks
  differ between syncs: each rank saves its own state_dict for an exact
  restart; loading rank 0's file everywhere is a valid restart too (every
  rank resumes from rank 0's local weights). A checkpoint without these
  entries restarts the runtime's state from the loaded weights.
- Autotune (`autotune=True`) tunes sync_every, not the bucket size
  (data_parallel/autotune_sync.py): `change_sync_every` restarts the
  runtime's schedule at a step boundary, and the checkpoint keeps the
  schedule (`sync_every`, `schedule_base`).
- Bytes: `bytes_sent` (every collective of the engine's communicator, by the
  runtime's count: runtime/comm/counting_communicator.h) and
  `bytes_per_step` (since the end of the warm-up, per local step).
"""
import torch

from .base import AlgorithmImpl
from .native import NativeAlgorithmImpl

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}


def weight_specs(name, tensors):
    """(name, data pointer, numel, dtype) of each weight, checked."""
    specs = []
    for t in tensors:
        p = t.bagua_getter_closure()
        if p.dtype not in _DTYPES:
            raise ValueError(f"{name}: {t.bagua_tensor_name} has dtype {p.dtype}; supported: "
                             f"{', '.join(map(str, _DTYPES))}")
        if not p.is_contiguous():
            raise ValueError(f"{name}: {t.bagua_tensor_name} is not contiguous")
        specs.append((t.bagua_tensor_name, p.data_ptr(), p.numel(), _DTYPES[p.dtype]))
    return specs


class _RuntimeBackend:
    """The runtime object (LocalSGD or DiLoCo) as the engine's backend."""

    def __init__(self, runtime):
        self.runtime = runtime

    def close(self):
        if self.runtime is not None and hasattr(self.runtime, "flush"):
            self.runtime.flush()
        self.runtime = None


class LocalStepsImpl(NativeAlgorithmImpl):
    """Subclasses set `name` and implement `make_runtime(ddp, specs)` and,
    for extra checkpoint state, `save_state`/`load_state`."""

    autotune_knob = "sync_every"  # what autotune tunes (autotune_sync.py)

    def __init__(self, process_group, name, options):
        super().__init__(process_group, name, options)
        self.warmup_steps = int(options["warmup_steps"])
        self._ddp = None
        self._backend = None
        self._step_seen = None
        self._stepped = set()
        self._done_step = None
        self._bytes_at_switch = 0
        self._loaded = None  # entries popped by the load pre-hook
        # Set by autotune while it runs a trial without syncs (H beyond the trial):
        # the sync_every a checkpoint saves instead, with the schedule restarting there.
        self.checkpoint_sync_every = None

    # -- the runtime object ---------------------------------------------------
    @property
    def runtime(self):
        """The runtime's LocalSGD / DiLoCo (None during the warm-up)."""
        return self._backend.runtime if isinstance(self._backend, _RuntimeBackend) else None

    def _warming_up(self):
        return self._ddp.bagua_train_step_counter < self.warmup_steps

    def need_reset(self):
        return self.runtime is None and not self._warming_up()

    def init_tensors(self, bagua_ddp):
        if self._ddp is None:
            self._ddp = bagua_ddp
            if not bagua_ddp.bagua_optimizers:
                raise ValueError(f"{self.name}: pass the optimizers to with_bagua (or "
                                 "optimizers= to DistributedDataParallel): the algorithm acts "
                                 "after their steps")
            self._install_state_hooks(bagua_ddp)
        if self._warming_up():
            return AlgorithmImpl.init_tensors(self, bagua_ddp)
        return self.weight_tensors(bagua_ddp.bagua_build_params())

    def make_backend(self, bagua_ddp, buckets):
        tensors = [t for bucket in buckets for t in bucket.tensors]
        if self._backend is not None and hasattr(self._backend, "close"):
            self._backend.close()
        if self._warming_up():
            self._backend = self.warmup_backend(bagua_ddp, tensors)
            return self._backend
        bagua_ddp._sync_stream()  # the runtime copies the weights on its own stream
        self._bytes_at_switch = bagua_ddp.bytes_sent
        self._backend = _RuntimeBackend(self.make_runtime(bagua_ddp,
                                                          weight_specs(self.name, tensors)))
        return self._backend

    def make_runtime(self, ddp, specs):
        raise NotImplementedError

    # -- sync_every (autotune) -------------------------------------------------------
    @property
    def sync_every(self):
        return int(self.options["sync_every"])

    def sync_floor(self):
        """The smallest sync_every this configuration allows."""
        return 1

    def change_sync_every(self, every):
        """From the next local step on, sync every `every` steps counted from
        here (a runtime built later starts with it too)."""
        self.options["sync_every"] = int(every)
        if self.runtime is not None:
            self.change_runtime_sync_every(self.runtime, int(every))

    def change_runtime_sync_every(self, runtime, every):
        runtime.change_sync_every(every)

    def stream(self):
        if self._ddp.device.type == "cuda":
            return torch.cuda.current_stream(self._ddp.device).cuda_stream
        return 0

    # -- hooks after the warm-up --------------------------------------------------
    def init_backward_hook(self, bagua_ddp):
        if self.runtime is None:
            return super().init_backward_hook(bagua_ddp)
        return lambda name, param: None

    def init_post_backward_hook(self, bagua_ddp):
        if self.runtime is None:
            return super().init_post_backward_hook(bagua_ddp)
        return lambda: None

    def init_post_optimizer_step_hook(self, bagua_ddp):
        if self.runtime is None:
            return super().init_post_optimizer_step_hook(bagua_ddp)

        def hook(optimizer):
            step = bagua_ddp.bagua_train_step_counter
            if step != self._step_seen:
                self._step_seen, self._stepped = step, set()
            self._stepped.add(id(optimizer))
            if len(self._stepped) < len(bagua_ddp.bagua_optimizers) or step == self._done_step:
                return  # once per training step, after every optimizer stepped
            self._done_step = step
            self.runtime.after_step(self.stream())

        return hook

    # -- bytes ----------------------------------------------------------------------
    @property
    def bytes_sent(self):
        """Bytes this rank sent through the engine's communicator so far."""
        return self._ddp.bytes_sent

    @property
    def local_steps(self):
        """Local steps since the end of the warm-up."""
        return self.runtime.steps if self.runtime is not None else 0

    @property
    def bytes_per_step(self):
        """Bytes sent per local step since the end of the warm-up."""
        steps = self.local_steps
        return (self.bytes_sent - self._bytes_at_switch) / steps if steps else 0.0

    # -- checkpoints ------------------------------------------------------------------
    def _key(self, prefix, name):
        return f"{prefix}_bagua_{self.name}.{name}"

    def _install_state_hooks(self, ddp):
        # Plain functions: torch marks the hooks it is given (bound methods take no attributes).
        module = ddp.module
        ddp._hooks.append(module.register_state_dict_post_hook(
            lambda *args: self._save_hook(*args)))
        ddp._hooks.append(module.register_load_state_dict_pre_hook(
            lambda *args: self._load_pre_hook(*args)))
        ddp._hooks.append(module.register_load_state_dict_post_hook(
            lambda *args: self._load_post_hook(*args)))

    def _save_hook(self, module, state_dict, prefix, local_metadata):
        state = {"train_steps": torch.tensor(self._ddp.bagua_train_step_counter)}
        if self.runtime is not None:
            state["local_steps"] = torch.tensor(self.runtime.steps)
            if self.checkpoint_sync_every:
                state["sync_every"] = torch.tensor(self.checkpoint_sync_every)
                state["schedule_base"] = torch.tensor(self.runtime.steps)
            else:
                state["sync_every"] = torch.tensor(self.runtime.sync_every)
                state["schedule_base"] = torch.tensor(self.runtime.schedule_base)
            state.update(self.save_state(self.runtime))
        for name, value in state.items():
            state_dict[self._key(prefix, name)] = value

    def _load_pre_hook(self, module, state_dict, prefix, *args):
        mine = self._key(prefix, "")
        self._loaded = {k[len(mine):]: state_dict.pop(k) for k in list(state_dict)
                        if k.startswith(mine)}

    def _load_post_hook(self, module, incompatible_keys):
        loaded, self._loaded = self._loaded or {}, None
        ddp = self._ddp
        if "train_steps" in loaded:
            ddp.bagua_train_step_counter = int(loaded["train_steps"])
        # The loaded weights are this rank's: rebuild without a broadcast.
        if "local_steps" not in loaded or (self.runtime is None) != self._warming_up():
            ddp._init_algorithm()
        if self.runtime is not None and "local_steps" in loaded:
            self.load_state(self.runtime, int(loaded["local_steps"]), loaded)

    def save_state(self, runtime):
        return {}

    def load_state(self, runtime, local_steps, loaded):
        runtime.steps = local_steps
        every, base = loaded_schedule(loaded)
        if every:
            self.options["sync_every"] = every
            runtime.restore_schedule(every, base)


def loaded_schedule(loaded):
    """(sync_every, schedule_base) of a checkpoint; (0, 0) when it predates them."""
    if "sync_every" not in loaded:
        return 0, 0
    return int(loaded["sync_every"]), int(loaded.get("schedule_base", 0))


def buffer_tensors(runtime, device):
    """Empty tensors for each of the runtime's checkpointed buffers."""
    return {name: torch.empty(numel, dtype=_TORCH_DTYPES[dtype], device=device)
            for name, dtype, numel in runtime.state_buffers()}
