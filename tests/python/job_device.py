"""The device of a torchrun test job (algo_job.py, local_updates_job.py):
the CPU, or with "cuda" this local rank's GPU (on a one-GPU machine every
rank shares GPU 0, each its own NCCL host: shared/BENCHMARKING.md)."""
import torch


def job_device(name):
    if name != "cuda":
        return torch.device("cpu")
    import bagua.torch_api as bagua

    device = torch.device("cuda", bagua.get_local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device
