#!/usr/bin/env bash
# Runs a command as its own NCCL "host": NCCL_HOSTID from the launcher's RANK,
# so ranks that share one GPU reach each other through the network plugin
# (shared/BENCHMARKING.md). Use as the command of torchrun --no-python or
# python -m bagua.distributed.launch --no_python.
export NCCL_HOSTID="bagua-host-${RANK:?RANK is not set: start under torchrun or bagua.distributed.launch}"
exec "$@"
