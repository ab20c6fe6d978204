# sourced by the call scripts: nccl-tests (all_reduce only, MPI) against torch's NCCL
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
build_nt() {
  [ -x /tmp/nt/build_mpi/all_reduce_perf ] && return 0
  local t0=$SECONDS nccl cuda s=/tmp/nccl-pip
  nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
  mkdir -p $s/lib && ln -sfn "$nccl/include" $s/include && ln -sf "$nccl/lib/libnccl.so.2" $s/lib/libnccl.so
  cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  rm -rf /tmp/nt && cp -r .device/nccl-tests /tmp/nt
  make -C /tmp/nt/src -j16 build MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi NCCL_HOME=$s \
    CUDA_HOME="$cuda" NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=/tmp/nt/build_mpi \
    BIN_FILES_LIST=all_reduce >"$OUT/nt_build.log" 2>&1 || { tail -n 30 "$OUT/nt_build.log"; return 1; }
  echo "nccl-tests built in $((SECONDS - t0)) s"
}
export NCCL_TESTS_BIN=/tmp/nt/build_mpi
