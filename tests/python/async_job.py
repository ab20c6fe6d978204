"""Worker for the asynchronous model average tests (torchrun, CPU, Gloo).

identical  ranks train at different paces with background averaging, then
           abort(): every rank ends with the same weights.
cycles     1000 abort/resume cycles (a few steps each): threads, open file
           descriptors and resident memory measured before and after.
dead       rank 1 exits mid-training: the others' next steps raise, and the
           time from its death to the error is recorded.
reshape    a parameter replaced by one of another shape after the averaging
           started: the next forward raises a clear error.
--device cuda: each rank on its local rank's GPU (NCCL; used with identical:
the averaging thread must act on its rank's GPU, not on GPU 0).
Writes OUT.rank<r>.json."""
import argparse
import json
import os
import time

import torch

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import async_model_average as am
from job_device import job_device

DEVICE = torch.device("cpu")


def model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def step(net, opt, rank):
    x, y = (torch.randn(8, 16) + rank).to(DEVICE), torch.randint(0, 4, (8,)).to(DEVICE)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()


def flat(net):
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def usage():
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return {"threads": len(os.listdir("/proc/self/task")), "fds": len(os.listdir("/proc/self/fd")),
            "rss_mb": rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20}


def setup(interval_ms=5, warmup=2):
    net = model().to(DEVICE)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    net.with_bagua([opt], am.AsyncModelAverageAlgorithm(sync_interval_ms=interval_ms,
                                                         warmup_steps=warmup))
    return net, opt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    global DEVICE
    DEVICE = job_device(args.device)
    bagua.init_process_group()
    rank, world = bagua.get_rank(), bagua.get_world_size()
    out = {"rank": rank}
    net, opt = setup()
    if args.case == "identical":
        for i in range(80 + 40 * rank):
            step(net, opt, rank)
            time.sleep(0.002)
        net.bagua_algorithm.abort(net)
        w = flat(net)
        everyone = [torch.zeros_like(w) for _ in range(world)]
        torch.distributed.all_gather(everyone, w)
        out.update(identical=all(torch.equal(e, everyone[0]) for e in everyone),
                   averages=net.bagua_algorithm.averages)
    elif args.case == "cycles":
        def cycle():
            net.bagua_algorithm.resume(net)
            for _ in range(2):
                step(net, opt, rank)
            net.bagua_algorithm.abort(net)

        for _ in range(4):  # past the warm-up
            step(net, opt, rank)
        for _ in range(50):  # allocator and thread pools settle
            cycle()
        before, start = usage(), time.time()
        for _ in range(args.cycles):
            cycle()
        out.update(before=before, after=usage(), seconds=time.time() - start,
                   averages=net.bagua_algorithm.averages)
    elif args.case == "dead":
        for _ in range(20):
            step(net, opt, rank)
            time.sleep(0.002)
        if rank == 1:
            with open(f"{args.out}.rank1.json", "w") as f:
                json.dump({"rank": 1, "died_at": time.time()}, f)
            os._exit(0)
        start = time.time()
        try:
            while time.time() - start < 60:
                step(net, opt, rank)
                time.sleep(0.002)
            out["error"] = None
        except Exception as e:  # noqa: BLE001 - the test reads it
            out["error"] = f"{type(e).__name__}: {e}"
        out["error_at"] = time.time()
        with open(f"{args.out}.rank{rank}.json", "w") as f:
            json.dump(out, f)
        os._exit(0)  # torch's group cannot shut down cleanly with a dead peer
    elif args.case == "reshape":
        for _ in range(4):
            step(net, opt, rank)
        with torch.no_grad():
            net[0].weight.data = torch.zeros(32, 17)[:, :16]  # new storage
        try:
            step(net, opt, rank)
            out["error"] = None
        except ValueError as e:
            out["error"] = str(e)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
