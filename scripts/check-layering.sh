#!/usr/bin/env bash
# Fails when a source includes a header of a layer above it, or when code below app/ prints or
# exits. The layers, what each may include, and any known exception are listed at the top of
# scripts/check-layering.py (Python 3, standard library only), which does the work.
#   scripts/check-layering.sh [ROOT]     ROOT: the repository root (default: this checkout)
set -euo pipefail
exec python3 "$(dirname "$0")/check-layering.py" "$@"
