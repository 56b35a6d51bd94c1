#!/usr/bin/env bash
# A result that cannot be written to standard output is a failure with a message, not exit 0:
# `clustersim hardware show dgx-a100 > /dev/full` must exit non-zero and say why on stderr.
set -uo pipefail
clustersim=$1
[ -e /dev/full ] || { echo "no /dev/full here; nothing to check"; exit 0; }
err=$("$clustersim" hardware show dgx-a100 2>&1 >/dev/full)
code=$?
if [ "$code" -eq 0 ]; then
  echo "FAIL: exit 0 although standard output could not be written"; exit 1
fi
case "$err" in
  *"cannot write to standard output"*) echo "ok: exit $code: $err" ;;
  *) echo "FAIL: exit $code without the message; stderr: $err"; exit 1 ;;
esac
