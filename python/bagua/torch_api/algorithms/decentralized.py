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

LowPrecisionDecentralizedAlgorithm: not available in this version yet.
"""
from .native import NativeAlgorithm, NativeAlgorithmImpl
from ..tensor import BaguaTensor


class DecentralizedAlgorithmImpl(NativeAlgorithmImpl):
    def __init__(self, process_group, options):
        super().__init__(process_group, "decentralized", options)
        self.interval = int(options["communication_interval"])
        self._launched = False

    def init_tensors(self, bagua_ddp):
        params = bagua_ddp.bagua_build_params()
        tensors = [BaguaTensor(n, p, getter=lambda p: p.data, setter=None) for n, p in params]
        self._communication_tensor_names = {t.bagua_tensor_name for t in tensors}
        return tensors

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


class LowPrecisionDecentralizedAlgorithm(NativeAlgorithm):
    registry_name = "low_precision_decentralized"

    def __init__(self, hierarchical: bool = True, communication_interval: int = 1, **options):
        super().__init__(hierarchical=hierarchical,
                         communication_interval=communication_interval, **options)
