"""SyncBatchNorm: batch normalization with statistics over every rank's
batch, on the runtime's communicators (Gloo for CPU, NCCL for CUDA, so it
works on CPU too, unlike the original and torch's).

Training forward: per channel, the global mean from one allreduce of
(sum, count), then the global variance from a second allreduce of the sum
of squared deviations (two passes, as accurate as a local batch norm). The
allreduces are autograd functions whose backward allreduces the incoming
gradient, so backward gives each rank the gradient of every rank's loss,
which is what torch.nn.SyncBatchNorm computes. Evaluation (or a world of one
rank) is a plain batch norm with the running statistics.
"""
import torch
from torch.nn.modules.batchnorm import _BatchNorm

from ..communication import ReduceOp, allreduce_inplace
from ..process_group import _get_default_group


class _AllreduceSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, comm):
        ctx.comm = comm
        out = tensor.detach().clone().contiguous()
        allreduce_inplace(out, ReduceOp.SUM, comm)
        return out

    @staticmethod
    def backward(ctx, grad):
        grad = grad.detach().clone().contiguous()
        allreduce_inplace(grad, ReduceOp.SUM, ctx.comm)
        return grad, None


class SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _comm(self):
        return (self.process_group or _get_default_group()).get_global_communicator()

    def forward(self, input):
        self._check_input_dim(input)
        comm = self._comm()
        if not self.training or comm.nranks() == 1:
            return super().forward(input)
        dims = [0] + list(range(2, input.dim()))
        shape = [1, -1] + [1] * (input.dim() - 2)
        x = input.float()
        local = torch.cat([x.sum(dims), torch.full((1,), input.numel() / input.shape[1],
                                                  dtype=torch.float32, device=input.device)])
        total = _AllreduceSum.apply(local, comm)
        count = total[-1]
        mean = total[:-1] / count
        centered = x - mean.view(shape)
        var = _AllreduceSum.apply((centered * centered).sum(dims), comm) / count
        y = centered * torch.rsqrt(var + self.eps).view(shape)
        if self.affine:
            y = y * self.weight.view(shape) + self.bias.view(shape)
        if self.track_running_stats:
            self._update_running_stats(mean.detach(), var.detach(), float(count))
        return y.to(input.dtype)

    @torch.no_grad()
    def _update_running_stats(self, mean, var, count):
        self.num_batches_tracked += 1
        m = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
        unbiased = var * (count / max(count - 1.0, 1.0))
        self.running_mean.mul_(1 - m).add_(mean.to(self.running_mean.dtype), alpha=m)
        self.running_var.mul_(1 - m).add_(unbiased.to(self.running_var.dtype), alpha=m)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm holding
        the same parameters and buffers (call it before with_bagua)."""
        output = module
        if isinstance(module, _BatchNorm):
            output = cls(module.num_features, module.eps, module.momentum, module.affine,
                         module.track_running_stats, process_group)
            if module.affine:
                with torch.no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            if hasattr(module, "qconfig"):
                output.qconfig = module.qconfig
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output


convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm
