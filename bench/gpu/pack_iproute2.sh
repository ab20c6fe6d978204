#!/usr/bin/env bash
# Packs this machine's iproute2 tools (ip, tc, nstat) with the shared libraries
# they load, for a machine that has none (the GPU host: no iproute2, no package
# archive), so bench/cpu/link_bench.sh and delay_bench.sh can run there.
# Writes DEST/bin/{ip,tc,nstat} (wrappers setting LD_LIBRARY_PATH), DEST/exe and
# DEST/lib; libc, libm and the loader are left to the target's own.
#
# Usage: bench/gpu/pack_iproute2.sh DEST   (then carry DEST, and on the target:
#        PATH=DEST/bin:$PATH taskset -c 0-1 bash bench/cpu/link_bench.sh OUT 8)
set -euo pipefail
DEST=${1:?usage: pack_iproute2.sh DEST}
mkdir -p "$DEST/bin" "$DEST/exe" "$DEST/lib"
for tool in ip tc nstat; do
  path=$(command -v "$tool") || { echo "no $tool here: apt-get install iproute2" >&2; exit 1; }
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
echo "packed ip, tc, nstat and $(find "$DEST/lib" -type f | wc -l) libraries into $DEST" >&2
