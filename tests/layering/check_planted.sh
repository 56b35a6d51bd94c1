#!/usr/bin/env bash
# The layering check fails on a tree with planted violations, naming each one (file and line),
# and passes what is allowed (includes down the layers, printing in app/, words in comments
# and strings, snprintf).
#   check_planted.sh CHECK_SCRIPT
set -euo pipefail
check=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{sim,hardware,strategies/models,strategies/collectives,strategies/parallel,calibrate/cuda,explore,validation,app,results,python}

cat > "$tree/sim/time.h" <<'SRC'
#pragma once
SRC
cat > "$tree/strategies/y.h" <<'SRC'
#pragma once
#include "hardware/ok.h"
SRC
cat > "$tree/hardware/ok.h" <<'SRC'
#pragma once
#include "sim/time.h"
#include <cstdio>
// Never std::cout or exit() here: comments say what they like.
inline int ok(char* buf) { return std::snprintf(buf, 8, "%s", "exit(1) std::cerr"); }
SRC
# Planted: an include upwards, and printing below app/.
cat > "$tree/hardware/x.h" <<'SRC'
#pragma once
#include "sim/time.h"
#include "strategies/y.h"
SRC
cat > "$tree/strategies/models/z.cpp" <<'SRC'
#include <iostream>
void z() {
    std::cout << "hello\n";
}
SRC
cat > "$tree/calibrate/quit.cpp" <<'SRC'
#include <cstdlib>
void quit() {
    /* a block comment: abort() */
    std::exit(3);
}
SRC
cat > "$tree/calibrate/fit.cpp" <<'SRC'
#include "calibrate/cuda/runners.h"
#include "explore/grid.h"
SRC
cat > "$tree/calibrate/cuda/runners.h" <<'SRC'
#pragma once
#include "calibrate/fit.h"
#include "strategies/y.h"
SRC
cat > "$tree/explore/grid.h" <<'SRC'
#pragma once
#include "calibrate/fit.h"
SRC
# Sub-folders of strategies/: the schedules build on the collectives; the collectives may not
# reach up to the schedules nor across to the models. validation/ sits above calibrate/.
cat > "$tree/strategies/parallel/plan.h" <<'SRC'
#pragma once
#include "strategies/collectives/ring.h"
#include "strategies/y.h"
SRC
cat > "$tree/strategies/collectives/ring.h" <<'SRC'
#pragma once
#include "hardware/ok.h"
SRC
cat > "$tree/strategies/collectives/up.h" <<'SRC'
#pragma once
#include "strategies/collectives/ring.h"
#include "strategies/parallel/plan.h"
#include "strategies/models/z.h"
SRC
cat > "$tree/validation/study.cpp" <<'SRC'
#include "calibrate/cuda/runners.h"
#include "strategies/parallel/plan.h"
SRC
cat > "$tree/calibrate/uses_validation.cpp" <<'SRC'
#include "validation/study.h"
SRC
cat > "$tree/app/main.cpp" <<'SRC'
#include "explore/grid.h"
#include "calibrate/cuda/runners.h"
#include <iostream>
int main() { std::cout << "fine in app/\n"; }
SRC
# The Python module binds the libraries, not the command; results/ is below app/.
cat > "$tree/python/bindings.cpp" <<'SRC'
#include "results/json.h"
#include "app/cli.h"
SRC
cat > "$tree/results/json.h" <<'SRC'
#pragma once
#include "strategies/y.h"
#include "app/cli.h"
SRC

status=0
out=$("$check" "$tree" 2>&1) || status=$?
echo "$out"
fail() {
    echo "check_planted: $*" >&2
    exit 1
}
[ "$status" -eq 1 ] || fail "expected exit status 1, got $status"
expect() {
    grep -qF -- "$1" <<<"$out" || fail "expected a line with: $1"
}
expect "hardware/x.h:3: 'hardware' may not include 'strategies/y.h'"
expect "strategies/models/z.cpp:3: 'strategies/models' may not print or exit: writes to std::cout"
expect "calibrate/quit.cpp:4: 'calibrate' may not print or exit: calls std::exit()"
expect "calibrate/fit.cpp:1: 'calibrate' may not include 'calibrate/cuda/runners.h'"
expect "calibrate/fit.cpp:2: 'calibrate' may not include 'explore/grid.h'"
expect "explore/grid.h:2: 'explore' may not include 'calibrate/fit.h'"
expect "python/bindings.cpp:2: 'python' may not include 'app/cli.h'"
expect "results/json.h:3: 'results' may not include 'app/cli.h'"
expect "strategies/collectives/up.h:3: 'strategies/collectives' may not include 'strategies/parallel/plan.h'"
expect "strategies/collectives/up.h:4: 'strategies/collectives' may not include 'strategies/models/z.h'"
expect "validation/study.cpp:1: 'validation' may not include 'calibrate/cuda/runners.h'"
expect "calibrate/uses_validation.cpp:1: 'calibrate' may not include 'validation/study.h'"
[ "$(grep -c ': .* may not ' <<<"$out")" -eq 12 ] || fail "expected exactly 12 violations"
for clean in hardware/ok.h strategies/y.h strategies/parallel/plan.h strategies/collectives/ring.h \
    calibrate/cuda/runners.h app/main.cpp; do
    if grep -q "^$clean:" <<<"$out"; then fail "$clean is allowed but was reported"; fi
done

# The same tree without the planted files passes (folders of the table that are missing, like
# base/ and config/ here, are fine).
rm "$tree/hardware/x.h" "$tree/strategies/models/z.cpp" "$tree/calibrate/quit.cpp" \
    "$tree/calibrate/fit.cpp" "$tree/explore/grid.h" "$tree/strategies/collectives/up.h" \
    "$tree/calibrate/uses_validation.cpp"
sed -i '/calibrate\/cuda/d' "$tree/validation/study.cpp"
sed -i '/explore/d' "$tree/app/main.cpp"
sed -i '/app\/cli.h/d' "$tree/python/bindings.cpp" "$tree/results/json.h"
out=$("$check" "$tree" 2>&1) || fail "expected the cleaned tree to pass, got: $out"
echo "check_planted: ok"
