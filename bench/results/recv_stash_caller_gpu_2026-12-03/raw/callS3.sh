#!/bin/bash
# call S3: call S2's diagnostic part only (off, main's plugin and the stash build once each at
# 4 ranks, logs and thread states kept), run as `bash .device/callS3.sh` beside callS2.sh.
DIAG_ONLY=1 exec bash "$(dirname "$0")/callS2.sh"
