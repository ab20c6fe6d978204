"""The launcher tests' worker: writes what the launcher gave it (environment,
argv, how it was run) to <--out>.rank<RANK>.json. --allreduce meets the
other ranks (Gloo) and records the sum of rank+1 over all of them;
--exit-rank R makes rank R exit with --exit-code before anything else."""
import argparse
import json
import os
import sys

KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
        "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "BAGUA_DEFAULT_BUCKET_SIZE",
        "NCCL_NET_PLUGIN", "NCCL_NET", "BAGUA_AUTOTUNE")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--allreduce", action="store_true")
    parser.add_argument("--exit-rank", type=int, default=None)
    parser.add_argument("--exit-code", type=int, default=3)
    parser.add_argument("--local_rank", type=int, default=None)  # --set_additional_flag
    args, _ = parser.parse_known_args()  # the tests pass arguments of their own
    rank = int(os.environ["RANK"])
    if args.exit_rank == rank:
        print(f"rank {rank}: exiting with {args.exit_code}", flush=True)
        sys.exit(args.exit_code)
    record = {key: os.environ.get(key) for key in KEYS}
    record.update(argv=sys.argv, name=__name__, path0=sys.path[0], local_rank_arg=args.local_rank)
    if args.allreduce:
        import datetime

        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        total = torch.tensor([float(rank + 1)])
        dist.all_reduce(total)
        record["allreduce"] = total.item()
        dist.destroy_process_group()
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(record, f)
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    main()
