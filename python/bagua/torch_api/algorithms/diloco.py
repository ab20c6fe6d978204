"""DiLoCoAlgorithm (ours; no original import path): DiLoCo and Streaming
DiLoCo, for training over slow links.

Every rank trains with the user's (inner) optimizer. The ranks share a
start point x0; at a sync the outer gradient x0 - x (start point minus the
local weights) is averaged over the ranks, optionally compressed
(`compression="minmax_uint8"` or `"fp4"`, with error feedback), and an
outer SGD step with Nesterov momentum moves x0 (`outer_lr`,
`outer_momentum`, `nesterov`: torch.optim.SGD's meaning). `fragments=F`
syncs the weights in F fragments of whole tensors at staggered steps
(fragment f after local steps (f+1)H/F + kH, H = `sync_every`).

`overlap=True` (default): the averaging runs on the communicator's stream
while training goes on, and the new start point is mixed in `tau` local
steps after the sync as x <- x + (x0_new - x_sent), i.e. x0_new plus the
local progress made since the weights were sent; tau = `overlap_steps`,
or with 0 (default) min(H / F, H - 1). `overlap=False`: x <- x0_new at the
sync itself, every rank then bit-identical. The runtime does the work
(runtime/algorithms/diloco.h, docs/algorithms.md); checkpoints (start point,
outer momentum, residuals and updates in flight are in the module's
state_dict), warm-up and byte counts: local_steps.py.
"""
import torch

from .local_steps import LocalStepsImpl, buffer_tensors, loaded_schedule
from .native import NativeAlgorithm


class DiLoCoAlgorithmImpl(LocalStepsImpl):
    def __init__(self, process_group, options):
        super().__init__(process_group, "diloco", options)

    def make_runtime(self, ddp, specs):
        from ... import _C

        # Its own communicator on CUDA: the exchange runs beside training for many steps,
        # so it holds few SMs (ProcessGroup.backend(background=True)).
        backend = ddp.comm.backend(ddp.device, background=True)
        if ddp.device.type == "cuda":  # the runtime copies the weights on its own stream
            backend.wait_stream(torch.cuda.current_stream(ddp.device).cuda_stream)
        return _C.DiLoCo(backend, specs, dict(self.options), bucket_bytes=ddp.bucket_bytes,
                         timeout_s=ddp.timeout_s)

    def sync_floor(self):
        """F fragments need H >= F; overlap needs H >= 2, an explicit tau H > tau."""
        floor = max(int(self.options["fragments"]), 2 if self.options["overlap"] else 1)
        return max(floor, int(self.options["overlap_steps"]) + 1)

    def change_runtime_sync_every(self, runtime, every):
        runtime.change_sync_every(every, self.stream())

    def save_state(self, runtime):
        state = buffer_tensors(runtime, self._ddp.device)
        for name, tensor in state.items():
            runtime.save_buffer(name, tensor.data_ptr(), self.stream())
        state["due"] = torch.tensor(runtime.due_steps(), dtype=torch.int64)
        return state

    def load_state(self, runtime, local_steps, loaded):
        expected = dict((name, (dtype, numel)) for name, dtype, numel in runtime.state_buffers())
        missing = sorted(set(expected) - set(loaded))
        if missing:
            raise ValueError(f"diloco: the checkpoint lacks {missing[:4]} (it was saved with "
                             "other fragments, compression, overlap or bucket size)")
        for name, (dtype, numel) in expected.items():
            tensor = loaded[name].to(self._ddp.device).contiguous()
            if tensor.numel() != numel or str(tensor.dtype) != f"torch.{dtype}":
                raise ValueError(f"diloco: checkpoint entry {name} holds {tensor.numel()} "
                                 f"{tensor.dtype}, this model needs {numel} {dtype}")
            runtime.load_buffer(name, tensor.data_ptr(), self.stream())
        every, base = loaded_schedule(loaded)
        if every:
            self.options["sync_every"] = every
        runtime.restore(local_steps, [int(d) for d in loaded["due"]], sync_every=every,
                        schedule_base=base)

    # -- for tests and diagnostics ---------------------------------------------------
    def start_point(self):
        """The start point x0 of every bucket (flat, with its padding)."""
        runtime = self.runtime
        out = []
        for name, tensor in buffer_tensors(runtime, self._ddp.device).items():
            if name.startswith("x0."):
                runtime.save_buffer(name, tensor.data_ptr(), self.stream())
                out.append(tensor)
        return out

    def sync_steps(self):
        """Per fragment: (local step of its last sync, of its last applied update)."""
        runtime = self.runtime
        return [(runtime.last_send_step(f), runtime.last_apply_step(f))
                for f in range(runtime.fragments)]


class DiLoCoAlgorithm(NativeAlgorithm):
    registry_name = "diloco"

    def __init__(self, sync_every: int = 100, outer_lr: float = 0.7, outer_momentum: float = 0.9,
                 nesterov: bool = True, fragments: int = 1, overlap: bool = True,
                 overlap_steps: int = 0, compression=None, warmup_steps: int = 0, **options):
        """sync_every: inner steps between two syncs of a fragment (H);
        outer_lr, outer_momentum, nesterov: the outer SGD; fragments: F
        (1 <= F <= H and at most the number of parameter tensors); overlap,
        overlap_steps: apply each update tau steps after its sync (0: the
        default tau); compression: None, "minmax_uint8" or "fp4" (4 bits);
        warmup_steps: gradient allreduce steps first."""
        super().__init__(sync_every=sync_every, outer_lr=outer_lr,
                         outer_momentum=outer_momentum, nesterov=nesterov, fragments=fragments,
                         overlap=overlap, overlap_steps=overlap_steps,
                         compression="none" if compression is None else compression,
                         warmup_steps=warmup_steps, **options)

    def reify(self, process_group):
        return DiLoCoAlgorithmImpl(process_group, self.options)
