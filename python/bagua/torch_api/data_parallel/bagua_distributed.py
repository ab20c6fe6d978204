"""The training engine behind `model.with_bagua(...)` and
`DistributedDataParallel(...)`: not a module itself (the user's module keeps
its state_dict keys), it

- makes the optimizers fused first with fused_optimizer=True
  (contrib.fuse_optimizer: they step on flat buffers; the buckets stay the
  Reducer's own, so the runtime communicates what it did before);
- broadcasts parameters, buffers and optimizer state from rank 0 of the
  process group at the start (and after an algorithm asks for a reset);
- asks the algorithm's impl for the tensors to communicate, groups them into
  buckets (registration order, one dtype per bucket, about the bucket size
  each), lets the impl append operations and build the backend that runs them;
- calls the impl's hooks: before each training forward, when each
  parameter's gradient is ready, once after backward, after each
  optimizer step;
- broadcasts buffers (BatchNorm statistics) from rank 0 before each forward
  (the original never synced them), and treats parameters that got no
  gradient as zero with find_unused_parameters (without it: an error that
  names them);
- with `autotune`, rebuilds its buckets at the step boundaries the
  autotuner decides (autotune.py).

Its communicators are its own (created over the group's ranks), so user
collectives on the group never interleave with the step's buckets.
"""
import itertools
import json
import logging
import os

import torch

from .. import env
from ..collectives import _call
from ..communication import broadcast_object
from ..process_group import BaguaCommunicator, register_engine
from . import autotune as autotuning

_logger = logging.getLogger("bagua")
# Engines per set of ranks: each engine's communicator is named by its
# ordinal among the engines of the same ranks, so ranks that belong to
# several overlapping groups agree on every name.
_instances = {}


def _next_instance(ranks):
    key = tuple(ranks)
    _instances[key] = _instances.get(key, -1) + 1
    return _instances[key]


def _to_cpu(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    return obj


def _fused(optimizers, algorithm, fused_optimizer):
    """The optimizers, made fused (contrib.fuse_optimizer) when asked. QAdam's
    algorithm communicates its optimizer's own exp_avg tensors: refused."""
    if not fused_optimizer:
        return optimizers
    from ..algorithms.q_adam import QAdamAlgorithm, QAdamOptimizer
    from ..contrib.fuse import fuse_optimizer

    if isinstance(algorithm, QAdamAlgorithm) or any(isinstance(o, QAdamOptimizer)
                                                    for o in optimizers):
        raise ValueError("bagua: fused_optimizer=True does not combine with QAdam (its algorithm "
                         "communicates the QAdamOptimizer's own momentum tensors)")
    return [fuse_optimizer(o) for o in optimizers]


class BaguaDistributedDataParallel:
    def __init__(self, module, optimizers, algorithm, process_group, bagua_module_name=None,
                 gradient_as_bucket_view=True, find_unused_parameters=False, bucket_bytes=None,
                 broadcast_buffers=True, timeout_s=None, fused_optimizer=False,
                 autotune=None):
        self.module = module
        if bagua_module_name is None:  # the original's default
            bagua_module_name = getattr(module, "_bagua_module_name",
                                        f"{type(module).__name__}_{id(module)}")
        self.bagua_module_name = bagua_module_name
        self.bagua_optimizers = _fused(list(optimizers or []), algorithm, fused_optimizer)
        self.process_group = process_group
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.find_unused_parameters = find_unused_parameters
        self.broadcast_buffers = broadcast_buffers
        autotune_options = autotuning.resolve(autotune)
        self.bucket_bytes = int(autotuning.starting_bucket(
            autotune_options, int(bucket_bytes or env.get_default_bucket_size())))
        self.timeout_s = float(timeout_s or env.number_from_env("BAGUA_TIMEOUT_S", 300.0,
                                                                kind=float, minimum=1e-3))
        self.require_backward_grad_sync = True
        self.bagua_train_step_counter = 0
        self.communication_count = 0  # backward passes that communicated
        self.device = self._single_device()
        self._check_world_size()
        self.comm = BaguaCommunicator(process_group, f"ddp{_next_instance(process_group.ranks)}",
                                      process_group.ranks)
        if self.comm.rank() < 0:
            raise ValueError(f"bagua: this process is not in {process_group!r}")
        self.bagua_algorithm = algorithm.reify(process_group)
        if autotune is None:
            autotune_options = autotuning.from_environment(self)
        self._hooks = []
        self._marked = set()
        self._callback_queued = False
        self._generation = 0  # bucket builds so far (names the Reducer's store keys)
        self._comms = {}  # more communicators of this engine (native_backend.hierarchy_of)
        self._params = dict(self.bagua_build_params())
        self._check_dense()
        # What the runtime registered of each parameter: a model changed
        # after wrapping (.double(), .to(other device)) is refused at its
        # next gradient instead of reduced wrongly (pointers and sizes stay).
        self._registered = {name: self._shape_of(p) for name, p in self._params.items()}
        start_hierarchical = self._start_hierarchical(autotune_options)
        autotuning.check_supported(self, autotune_options)
        self._broadcast_state()
        # Before the algorithm starts: async's background rounds must not
        # overlap another NCCL collective on the same GPU (docs/algorithms.md).
        autotuning.check_settings_agree(self, autotune_options)
        self._init_algorithm()
        self._autotuner = autotuning.make_tuner(self, autotune_options, start_hierarchical)
        self._install_hooks()
        register_engine(self)

    # -- what the algorithms read ---------------------------------------------
    def _ignored(self):
        """Names of the parameters and buffers the user keeps local
        (`_bagua_params_and_buffers_to_ignore`, or DDP's
        `_ddp_params_and_buffers_to_ignore`): neither reduced nor broadcast."""
        return set(getattr(self.module, "_bagua_params_and_buffers_to_ignore", ())) | \
            set(getattr(self.module, "_ddp_params_and_buffers_to_ignore", ()))

    def _synced_buffers(self):
        ignore = self._ignored()
        return [b for name, b in self.module.named_buffers() if name not in ignore]

    def bagua_build_params(self):
        """(name, parameter) of every parameter that requires a gradient and
        is not ignored (_ignored), each parameter once."""
        ignore = self._ignored()
        seen, out = set(), []
        for name, param in self.module.named_parameters():
            if param.requires_grad and name not in ignore and id(param) not in seen:
                seen.add(id(param))
                out.append((name, param))
        return out

    @property
    def rank(self):
        return self.comm.rank()

    @property
    def world_size(self):
        return self.comm.nranks()

    def backend(self):
        """The engine's runtime communicator for the module's device."""
        return self.comm.backend(self.device)

    @property
    def bytes_sent(self):
        """Bytes this rank sent so far through the engine's communicators (the
        background one of DiLoCo too) and,
        where the algorithm runs hierarchically, its intra- and inter-node ones
        (every collective of the algorithm and the engine's broadcasts, by the
        runtime's count: runtime/comm/counting_communicator.h)."""
        self.backend()  # made on first use, as before: its count starts at 0
        total = self.comm.bytes_sent(self.device)
        hierarchy = self._comms.get("hierarchy")
        if hierarchy is not None:
            intra, inter, _ = hierarchy
            total += intra.backend(self.device).bytes_sent
            if inter is not None:
                total += inter.backend(self.device).bytes_sent
        return total

    # -- setup --------------------------------------------------------------------
    def _single_device(self):
        tensors = itertools.chain(self.module.parameters(), self.module.buffers())
        devices = {t.device for t in tensors}
        if len(devices) > 1:
            raise ValueError(f"bagua: the module spans several devices "
                             f"{sorted(map(str, devices))}; one device per process")
        return next(iter(devices), torch.device("cpu"))

    @staticmethod
    def _shape_of(param):
        return param.dtype, param.device, param.numel()

    def _check_dense(self):
        """Sparse gradients (nn.Embedding or EmbeddingBag with sparse=True)
        cannot be bucketed: refused here, not mid-backward."""
        trained = {id(p) for p in self._params.values()}
        for name, m in self.module.named_modules():
            if getattr(m, "sparse", False) and isinstance(
                    m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and id(m.weight) in trained:
                raise ValueError(f"bagua: {name or type(m).__name__} has sparse=True, whose "
                                 "gradients are sparse; Bagua reduces dense gradients only (use "
                                 "sparse=False, or list its weight in "
                                 "_bagua_params_and_buffers_to_ignore)")

    def _check_world_size(self):
        declared = os.environ.get("WORLD_SIZE")
        world = torch.distributed.get_world_size()
        if declared is not None and int(declared) != world:
            raise ValueError(f"bagua: WORLD_SIZE={declared} in the environment but "
                             f"torch.distributed has {world} ranks")

    def _sync_stream(self):
        if self.device.type == "cuda":
            self.backend().wait_stream(torch.cuda.current_stream(self.device).cuda_stream)

    def _broadcast_tensor(self, t):
        if t.numel() == 0:
            return
        if not t.is_contiguous():
            raise ValueError("bagua: cannot broadcast a non-contiguous parameter or buffer")
        _call(self.backend(), self.device, "broadcast", t.data_ptr(),
              t.numel() * t.element_size(), 0)

    def _broadcast_state(self):
        """Parameters, buffers and optimizer state from rank 0."""
        if self.world_size == 1:
            return
        ignore = self._ignored()
        with torch.no_grad():
            for name, t in itertools.chain(self.module.named_parameters(),
                                           self.module.named_buffers()):
                if name not in ignore:
                    self._broadcast_tensor(t)
        # The state travels on the parameters' device (their communicator),
        # not the current CUDA device, which a script that never called
        # set_device leaves at cuda:0 on every rank.
        device = next((p.device for p in self.module.parameters()), None)
        for optimizer in self.bagua_optimizers:
            state = broadcast_object(_to_cpu(optimizer.state_dict()) if self.rank == 0 else None,
                                     0, self.process_group.get_global_communicator(),
                                     device=device)
            if self.rank != 0:
                optimizer.load_state_dict(state)

    def _split_into_buckets(self, tensors, bucket_bytes=None):
        """Consecutive tensors of one dtype, about bucket_bytes per bucket
        (the runtime's rule, runtime/bucket/bucket_plan.h: never splits a tensor)."""
        bucket_bytes = bucket_bytes or self.bucket_bytes
        buckets, current, size = [], [], 0
        for t in tensors:
            value = t.bagua_getter_closure()
            if current and (size >= bucket_bytes or
                            value.dtype != current[-1].bagua_getter_closure().dtype):
                buckets.append(current)
                current, size = [], 0
            current.append(t)
            size += value.numel() * value.element_size()
        if current:
            buckets.append(current)
        return buckets

    def _start_hierarchical(self, autotune_options):
        """The algorithm's hierarchical option (None where it has none), set
        first to a loaded autotune state's winner."""
        options = getattr(self.bagua_algorithm, "options", None)
        if not isinstance(options, dict) or "hierarchical" not in options:
            return None
        if autotune_options is not None and autotune_options.state is not None:
            loaded = autotune_options.state["winner"].get("hierarchical")
            if loaded is not None:
                options["hierarchical"] = bool(loaded)
        return bool(options["hierarchical"])

    def _init_algorithm(self):
        impl = self.bagua_algorithm
        self._generation += 1
        self._bagua_tensors = impl.init_tensors(self)
        self.bagua_buckets = impl.tensors_to_buckets(self._split_into_buckets(self._bagua_tensors),
                                                     self.gradient_as_bucket_view)
        for bucket in self.bagua_buckets:
            impl.init_operations(self, bucket)
        self._bagua_backend = impl.make_backend(self, self.bagua_buckets)
        self._forward_pre_hook = impl.init_forward_pre_hook(self)
        self._backward_hook = impl.init_backward_hook(self)
        self._post_backward_hook = impl.init_post_backward_hook(self)
        self._post_step_hook = impl.init_post_optimizer_step_hook(self)

    def _reset(self):
        """The algorithm asked for it (need_reset): rebroadcast and rebuild."""
        self._broadcast_state()
        self._init_algorithm()
        self._autotuner.on_reset()

    def _rebuild_buckets(self, bucket_bytes, hierarchical):
        """New buckets (the autotuner's decision, the same step on every
        rank): the old backend goes first (its pending work finished at the
        last step's wait), then the impl's init_* run again. Nothing is
        broadcast: the weights and the algorithm's own state stay (its
        per-element state, error-feedback residuals, moved to the new buckets)."""
        self.bucket_bytes = int(bucket_bytes)
        options = getattr(self.bagua_algorithm, "options", None)
        same_form = True
        if hierarchical is not None and isinstance(options, dict) and "hierarchical" in options:
            # The autotuner switches it only where the two forms differ
            # (autotune._hierarchy_differs).
            same_form = bool(options["hierarchical"]) == bool(hierarchical)
            options["hierarchical"] = bool(hierarchical)
        old, self._bagua_backend = self._bagua_backend, None
        # Per-element state of the algorithm (ByteGrad's error-feedback
        # residuals) moves to the new buckets tensor by tensor; not across a
        # switch of hierarchical, where the residual is of another message
        # (a rank's gradient, or its node's average on the leaders).
        carried = None
        try:
            if same_form and hasattr(old, "save_element_state"):
                carried = old.save_element_state()
        finally:
            if hasattr(old, "close"):
                old.close()
            del old
        self._init_algorithm()
        if carried is not None and hasattr(self._bagua_backend, "load_element_state"):
            self._bagua_backend.load_element_state(carried)

    def autotune_state(self, path=None):
        """What autotune decided (status, winner, every trial) as a JSON-ready
        dict; with `path`, rank 0 also writes it there (autotune=path reuses it)."""
        state = self._autotuner.state()
        if path is not None and self.rank == 0:
            tmp = f"{path}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(state, f, indent=1)
            os.replace(tmp, path)
        return state

    def _install_hooks(self):
        self._hooks.append(self.module.register_forward_pre_hook(self._on_forward))
        for name, param in self._params.items():
            self._hooks.append(param.register_post_accumulate_grad_hook(
                lambda p, name=name: self._on_gradient(name, p)))
        for optimizer in self.bagua_optimizers:
            self._hooks.append(optimizer.register_step_post_hook(
                lambda opt, args, kwargs: self._post_step_hook(opt)))

    def close(self):
        """Removes the hooks and releases the engine's communicators; the
        module trains locally afterwards."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if self._bagua_backend is None:
            return  # closed already
        if hasattr(self._bagua_backend, "close"):
            self._bagua_backend.close()
        self._bagua_backend = None
        hierarchy = self._comms.pop("hierarchy", None)
        for comm in (hierarchy or ())[:2]:
            if comm is not None:
                comm.release()
        self.comm.release()

    # -- hooks ----------------------------------------------------------------------
    def _on_forward(self, module, inputs):
        # Forwards that train only: one that a rank runs alone (`if rank == 0:
        # evaluate(model)` or a logged prediction, in eval mode or under
        # no_grad) is no step. It must not wait for the others in a buffer
        # broadcast (DDP's rule), nor count a step: autotune's decisions and
        # the algorithms' hooks are collectives at step boundaries, and one
        # rank a step ahead deadlocked the job until the timeout.
        if not module.training or not torch.is_grad_enabled():
            return
        if self.broadcast_buffers and self.world_size > 1:
            with torch.no_grad():
                for b in self._synced_buffers():
                    self._broadcast_tensor(b)
        if self.bagua_algorithm.need_reset():
            self._reset()
        self.bagua_train_step_counter += 1
        self._autotuner.on_forward(self.bagua_train_step_counter)
        self._forward_pre_hook(inputs)

    def _on_gradient(self, name, param):
        if not self.require_backward_grad_sync or self._bagua_backend is None:
            return
        if self._shape_of(param) != self._registered[name]:
            was, now = self._registered[name], self._shape_of(param)
            raise RuntimeError(f"bagua: parameter {name} changed after with_bagua (dtype, device, "
                               f"elements: {was[0]}, {was[1]}, {was[2]} -> {now[0]}, {now[1]}, "
                               f"{now[2]}); convert or move the model before wrapping it")
        self._sync_stream()
        self._marked.add(name)
        self._backward_hook(name, param)
        if not self._callback_queued:
            self._callback_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._after_backward)

    def _after_backward(self):
        self._callback_queued = False
        missing = [n for n in self._params if n not in self._marked]
        self._marked = set()
        if missing and not self.find_unused_parameters:
            raise RuntimeError(
                f"bagua: {len(missing)} parameter(s) received no gradient in this step "
                f"({', '.join(missing[:8])}); pass find_unused_parameters=True to treat them "
                "as zero")
        for name in missing:
            param = self._params[name]
            # A gradient from an earlier backward of this step, or accumulated
            # under no_sync(), is kept and reduced as it is (as DDP does).
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            self._sync_stream()
            self._backward_hook(name, param)
        self._post_backward_hook()
        self.communication_count += 1
