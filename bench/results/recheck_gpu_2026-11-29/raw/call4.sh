#!/bin/bash
cd "$(dirname "$0")/.." && EMU_MTU=65000 SLOW_CONFIGS="bagua socket socket_tuned" REPS=3 bash .device/call2.sh
