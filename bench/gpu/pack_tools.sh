#!/usr/bin/env bash
# Packs command-line tools of this machine with the shared libraries they load,
# for a machine that has none of them and no package archive (the GPU host has
# no iproute2 and no perf): iproute2's ip, tc and nstat for
# bench/cpu/link_bench.sh and delay_bench.sh, perf for bench/cpu/wake_placement.sh.
# Writes DEST/bin/TOOL (wrappers setting LD_LIBRARY_PATH), DEST/exe and
# DEST/lib; libc, libm and the loader are left to the target's own.
#
# Usage: bench/gpu/pack_tools.sh DEST [TOOL ...]   (default: ip tc nstat perf;
#        then carry DEST, and on the target:
#        PATH=DEST/bin:$PATH taskset -c 0-1 bash bench/cpu/link_bench.sh OUT 8)
set -euo pipefail
DEST=${1:?usage: pack_tools.sh DEST [TOOL ...]}
shift
TOOLS=("$@")
[ ${#TOOLS[@]} -gt 0 ] || TOOLS=(ip tc nstat perf)
mkdir -p "$DEST/bin" "$DEST/exe" "$DEST/lib"
for tool in "${TOOLS[@]}"; do
  path=$(command -v "$tool") || {
    echo "no $tool here (apt-get install iproute2 for ip/tc/nstat, linux-perf for perf)" >&2
    exit 1
  }
  cp -L "$path" "$DEST/exe/$tool"
  ldd "$path" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|ld-linux*) ;;
      *) cp -L "$lib" "$DEST/lib/" ;;
    esac
  done
  cat >"$DEST/bin/$tool" <<WRAP
#!/bin/sh
D=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH=\$D/lib exec "\$D/exe/$tool" "\$@"
WRAP
  chmod +x "$DEST/bin/$tool"
done
echo "packed ${TOOLS[*]} and $(find "$DEST/lib" -type f | wc -l) libraries into $DEST" >&2
