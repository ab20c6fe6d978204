#!/usr/bin/env bash
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:?not started by mpirun}}
export NCCL_HOSTID=bagua-host-$rank NCCL_TESTS_DEVICE=0 CUDA_VISIBLE_DEVICES=0
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING NCCL_DEBUG_FILE=/tmp/rP1/small4/all_reduce__main_old__r4_2.nccl.%h.%p.log
export NCCL_NET_PLUGIN=/work/main/.device/plugin_px/libnccl-net-bagua.so
export NCCL_NET=Bagua
export NCCL_NET_PLUGIN=/work/main/.device/plugin_main/libnccl-net-bagua.so
exec "$@"
