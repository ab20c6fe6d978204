#!/bin/bash
# call 2: channels on a 10 Gbit/s link without delay (veth + tbf) and with 5 ms each way (TUN)
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=$PWD/.device/tools/bin:$PATH
P=$PWD/.device/plugin
for part in $PARTS; do
  R=/tmp/r2/$part; rm -rf $R; mkdir -p $R
  case $part in
    veth0) LINKENV="LINK=veth DELAY_MS=0"; CFG="socket bagua ch4=NCCL_MIN_NCHANNELS=4 ch8=NCCL_MIN_NCHANNELS=8";;
    tun5) LINKENV="LINK=tun DELAY_MS=5 EMU_MTU=65000 EMU=$PWD/.device/bin/bench-link-emulator EMU_CPUS=14-15 QUEUE_MS=50 EMU_REALTIME=0"; CFG="socket bagua ch8=NCCL_MIN_NCHANNELS=8 ch16=NCCL_MIN_NCHANNELS=16";;
    tun1) LINKENV="LINK=tun DELAY_MS=1 EMU_MTU=65000 EMU=$PWD/.device/bin/bench-link-emulator EMU_CPUS=14-15 QUEUE_MS=50 EMU_REALTIME=0"; CFG="bagua socket socket_tuned ch16=NCCL_MIN_NCHANNELS=16";;
    tun1big) LINKENV="LINK=tun DELAY_MS=1 EMU_MTU=65000 EMU=$PWD/.device/bin/bench-link-emulator EMU_CPUS=14-15 QUEUE_MS=50 EMU_REALTIME=0 SIZES_MIB=64,256 SECONDS_PER_SIZE=5"; CFG="bagua socket socket_tuned";;
    veth0b) LINKENV="LINK=veth DELAY_MS=0"; CFG="bagua old=BAGUA_NET_TUNER_CHANNELS=2 socket";;
    tun5b) LINKENV="LINK=tun DELAY_MS=5 EMU_MTU=65000 EMU=$PWD/.device/bin/bench-link-emulator EMU_CPUS=14-15 QUEUE_MS=50 EMU_REALTIME=0"; CFG="bagua socket";;
    *) LINKENV="$(eval echo \$LINKENV_$part)"; CFG="$(eval echo \$CFG_$part)";;
  esac
  env $LINKENV RATE_GBIT=10 PLUGIN=$P/libnccl-net-bagua.so CAP_S=80 REPS=${REPS:-2} CONFIGS="$CFG" \
    timeout ${T:-250} bash bench/gpu/slow_link.sh $R > $OUT/$part.txt 2>&1
  grep -h "streams (widened" $R/*rank0.log | sed 's/.*NCCL INFO//' | sort | uniq -c > $OUT/${part}_lines.txt
  tail -14 $OUT/$part.txt
done
tar czf $OUT/raw.tgz -C /tmp/r2 .; grep -h "tuner" /tmp/r2/*/bagua_1.rank0.log | sed "s/.*NCCL INFO//" | sort | uniq -c > $OUT/tuner_lines.txt
