"""Decentralized SGD (the original's import path).

DecentralizedAlgorithm: the weights are sent at the start of a training
step (forward pre-hook), so communication overlaps forward and backward; at
the end of backward the averaged weights replace the local ones, and the
optimizer step then applies the gradient computed at the old weights:
x <- avg(x_self, x_peers) - lr g(x_self) (D-PSGD). `all` averages every
rank's weights; `shift_one` averages with one peer per step, the peers
paired by a rotating matching between the two halves of the ranks. With
`communication_interval=k` only steps 1, k+1, 2k+1... communicate. The
communication is the runtime's ("decentralized" in its registry).

LowPrecisionDecentralizedAlgorithm: after each optimizer step, each rank
sends the 8-bit compressed difference between its new weights (mixed with
its two ring neighbours' replicas) and its last sent state to both
neighbours, and every rank keeps replicas of its neighbours' weights from
those differences (DCD-PSGD; runtime/algorithms/low_precision_decentralized.h).
It does not overlap the step: the exchange runs after optimizer.step().
Every trained parameter must belong to one of the optimizers given to
with_bagua.
"""
import warnings
from .native import NativeAlgorithm, NativeAlgorithmImpl


class DecentralizedAlgorithmImpl(NativeAlgorithmImpl):
    def __init__(self, process_group, options):
        super().__init__(process_group, "decentralized", options)
        self.interval = int(options["communication_interval"])
        self._launched = False

    def init_tensors(self, bagua_ddp):
        return self.weight_tensors(bagua_ddp.bagua_build_params())

    def init_forward_pre_hook(self, bagua_ddp):
        def hook(inputs):
            if (bagua_ddp.bagua_train_step_counter - 1) % self.interval != 0:
                return
            bagua_ddp._sync_stream()
            bagua_ddp._bagua_backend.mark_all_ready()
            self._launched = True

        return hook

    def init_backward_hook(self, bagua_ddp):
        def hook(parameter_name, parameter):
            pass  # the weights were handed over before forward

        return hook

    def init_post_backward_hook(self, bagua_ddp):
        def hook():
            if self._launched:
                self._launched = False
                bagua_ddp._bagua_backend.wait_pending_comm_ops()

        return hook


class DecentralizedAlgorithm(NativeAlgorithm):
    registry_name = "decentralized"

    def __init__(self, hierarchical: bool = True, peer_selection_mode: str = "all",
                 communication_interval: int = 1, **options):
        super().__init__(hierarchical=hierarchical, peer_selection_mode=peer_selection_mode,
                         communication_interval=communication_interval, **options)
        if self.options["peer_selection_mode"] not in ("all", "shift_one"):
            raise ValueError(f"DecentralizedAlgorithm: peer_selection_mode must be 'all' or "
                             f"'shift_one', got {self.options['peer_selection_mode']!r}")
        if self.options["communication_interval"] < 1:
            raise ValueError(f"DecentralizedAlgorithm: communication_interval must be at least "
                             f"1, got {self.options['communication_interval']}")

    def reify(self, process_group):
        return DecentralizedAlgorithmImpl(process_group, self.options)


class LowPrecisionDecentralizedAlgorithmImpl(NativeAlgorithmImpl):
    autotune_unsupported = ("its replicas of the neighbours' weights live in the buckets and "
                            "start from identical weights, so the buckets cannot be rebuilt "
                            "mid-training; pick bucket_mb by hand")

    def __init__(self, process_group, options):
        super().__init__(process_group, "low_precision_decentralized", options)
        self.interval = int(options["communication_interval"])
        self._done_step = -1
        self._step_seen = -1
        self._stepped = set()
        self._warned_partial = False
        self._load_hook_installed = False

    def init_tensors(self, bagua_ddp):
        params = bagua_ddp.bagua_build_params()
        owned = {id(p) for opt in bagua_ddp.bagua_optimizers for g in opt.param_groups
                 for p in g["params"]}
        missing = [n for n, p in params if id(p) not in owned]
        if missing:
            raise ValueError(f"low_precision_decentralized: parameters {missing[:5]} are in no "
                             "optimizer given to with_bagua; every trained parameter must be "
                             "(or list it in module._bagua_params_and_buffers_to_ignore)")
        return self.weight_tensors(params)

    def make_backend(self, bagua_ddp, buckets):
        backend = super().make_backend(bagua_ddp, buckets)
        # Round 0 records the (just broadcast, identical) weights in the replicas.
        bagua_ddp._sync_stream()
        backend.mark_all_ready()
        backend.wait_pending_comm_ops()
        if not self._load_hook_installed:
            self._load_hook_installed = True
            bagua_ddp._hooks.append(bagua_ddp.module.register_load_state_dict_post_hook(
                lambda module, keys: warnings.warn(
                    "low_precision_decentralized: load_state_dict after with_bagua: the "
                    "replicas of the weights (this rank's and its neighbours') still hold "
                    "the weights of with_bagua, so the first exchange moves the loaded "
                    "weights by up to 1/510 of how far they jumped, for good; load a "
                    "checkpoint before with_bagua (as the original Bagua required)")))
        return backend

    def init_backward_hook(self, bagua_ddp):
        return lambda name, param: None

    def init_post_backward_hook(self, bagua_ddp):
        return lambda: None

    def init_post_optimizer_step_hook(self, bagua_ddp):
        def hook(optimizer):
            step = bagua_ddp.bagua_train_step_counter
            if step != self._step_seen:
                expected = len(bagua_ddp.bagua_optimizers)
                if 0 < len(self._stepped) < expected and not self._warned_partial:
                    self._warned_partial = True
                    warnings.warn(
                        f"low_precision_decentralized: only {len(self._stepped)} of the "
                        f"{expected} optimizers given to with_bagua stepped in training step "
                        f"{self._step_seen}; the weights are exchanged only in steps where "
                        "every one of them steps")
                self._step_seen, self._stepped = step, set()
            self._stepped.add(id(optimizer))
            # Once per training step, after every optimizer stepped: the
            # exchange sends x - x̂_self, and the weights become x̂_self, so an
            # update applied after it would be overwritten until next round.
            if len(self._stepped) < len(bagua_ddp.bagua_optimizers) or step == self._done_step:
                return
            if (step - 1) % self.interval != 0:
                return  # every k-th step
            self._done_step = step
            bagua_ddp._sync_stream()
            bagua_ddp._bagua_backend.mark_all_ready()
            bagua_ddp._bagua_backend.wait_pending_comm_ops()

        return hook


class LowPrecisionDecentralizedAlgorithm(NativeAlgorithm):
    registry_name = "low_precision_decentralized"

    def __init__(self, hierarchical: bool = True, communication_interval: int = 1, **options):
        super().__init__(hierarchical=hierarchical,
                         communication_interval=communication_interval, **options)

    def reify(self, process_group):
        return LowPrecisionDecentralizedAlgorithmImpl(process_group, self.options)
