"""Worker for the hierarchical test (torchrun, 4 CPU processes presented as
--nodes nodes: GROUP_RANK, LOCAL_RANK and LOCAL_WORLD_SIZE are set from the
rank before bagua starts, as torchrun sets them on real nodes). Trains the
same model twice with the same data, hierarchical=False then True, and
writes OUT.rank<r>.json: both runs' weights, and the bytes each TCP socket of
this process sent during the hierarchical run (from `ss -tinp`: local port,
peer port, bytes acknowledged), so the test can tell which ranks talked, and
the bytes the engine counted (`bytes_sent`) over the same steps of both runs.
--device cuda (bench/gpu/run_multi_gpu.sh, several GPUs): rank r on GPU
r % (GPUs), NCCL_HOSTID set per node before NCCL starts, so
NCCL uses NVLink inside a node and the network plugin between nodes; the
socket bytes are left out (null) where `ss` is missing."""
import argparse
import json
import os
import re
import shutil
import subprocess

import torch

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import Algorithm
from bagua.torch_api.algorithms import q_adam

SOCKET = re.compile(r"^ESTAB\s+\d+\s+\d+\s+\S+:(\d+)\s+\S+:(\d+)\s+users:.*pid=(\d+),")


def socket_bytes():
    """{(local port, peer port): bytes sent} of this process's TCP sockets:
    counted when they leave, not when acknowledged (a peer's delayed ACK, 40
    ms under load, moved QAdam's state broadcast of the step before into the
    measured steps: 126720 bytes from a leader to another node's non-leader)."""
    out = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True, check=True).stdout
    table, current = {}, None
    for line in out.splitlines():
        m = SOCKET.match(line)
        if m:
            current = (int(m.group(1)), int(m.group(2))) if int(m.group(3)) == os.getpid() \
                else None
        elif current is not None:
            sent = re.search(r"bytes_sent:(\d+)", line) or re.search(r"bytes_acked:(\d+)", line)
            table[f"{current[0]}:{current[1]}"] = int(sent.group(1)) if sent else 0
    return table


def train(algorithm_name, hierarchical, rank, device, steps=4, measure=False):
    torch.manual_seed(11)
    net = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.Tanh(),
                              torch.nn.Linear(256, 256), torch.nn.Tanh(),
                              torch.nn.Linear(256, 8)).to(device)
    if algorithm_name == "qadam":
        opt = q_adam.QAdamOptimizer(net.parameters(), lr=0.01, warmup_steps=2)
        algorithm = q_adam.QAdamAlgorithm(opt, hierarchical=hierarchical)
    else:
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        algorithm = Algorithm.init(algorithm_name, hierarchical=hierarchical)
    net.with_bagua([opt], algorithm)
    # QAdam's warm-up (2 steps) and its switch, which rebroadcasts the state,
    # come before the measured steps.
    first_measured = 3 if algorithm_name == "qadam" else 0
    compared = None
    before = None
    engine = net.__dict__["bagua_ddp"]
    for step in range(steps):
        if step == first_measured:
            counted_before = engine.bytes_sent
        if measure and step == first_measured:
            before = socket_bytes()
        g = torch.Generator().manual_seed(100 * step + rank)
        x, y = torch.randn(32, 128, generator=g), torch.randint(0, 8, (32,), generator=g)
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        if algorithm_name == "qadam" and step == 2:
            # QAdam is compared by its first compressed momentum: later steps
            # see weights moved by m / sqrt(v), which magnifies any difference.
            compared = [opt.state[p]["exp_avg"].clone() for p in net.parameters()]
    weights = compared if compared is not None else list(net.parameters())
    sent = None
    if measure:
        after = socket_bytes()
        sent = {k: v - before.get(k, 0) for k, v in after.items()}
    counted = engine.bytes_sent - counted_before
    flat = torch.cat([w.detach().reshape(-1) for w in weights]).cpu().tolist()
    return flat, sent, counted


def per_node_sums(rank, device):
    """The public per-node communicators of the default group (user code's
    get_intra/inter_node_communicator): each rank's global rank summed over
    each, with its members."""
    from bagua.torch_api.communication import _get_default_group

    group = _get_default_group()
    out = {}
    for kind, comm in (("intra", group.get_intra_node_communicator()),
                       ("inter", group.get_inter_node_communicator())):
        x = torch.tensor([float(rank)], device=device)
        bagua.allreduce_inplace(x, comm=comm)
        out[f"{kind}_ranks"], out[f"{kind}_sum"] = comm.ranks, x.item()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--algorithm", required=True)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    per_node = world // args.nodes
    os.environ.update(GROUP_RANK=str(rank // per_node), LOCAL_RANK=str(rank % per_node),
                      LOCAL_WORLD_SIZE=str(per_node))
    device = torch.device("cpu")
    if args.device == "cuda":
        os.environ["NCCL_HOSTID"] = f"bagua-node-{rank // per_node}"
        device = torch.device("cuda", rank % torch.cuda.device_count())  # a GPU per rank
        torch.cuda.set_device(device)
    bagua.init_process_group()
    node_sums = per_node_sums(rank, device)
    flat, _, counted_flat = train(args.algorithm, False, rank, device)
    hier, sent, counted = train(args.algorithm, True, rank, device,
                                measure=shutil.which("ss") is not None)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump({"rank": rank, "node": rank // per_node, "flat": flat, "hierarchical": hier,
                   "sent": sent, "pid": os.getpid(), "counted_flat": counted_flat,
                   "counted": counted, **node_sums}, f)


if __name__ == "__main__":
    main()
