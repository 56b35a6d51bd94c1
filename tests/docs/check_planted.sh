#!/usr/bin/env bash
# The documentation's output check (scripts/check-doc-outputs.py) against planted pages: a page
# whose every block is right passes; each planted fault (an output line that drifted, lines that
# are not consecutive in the golden, an unmarked output, a command run.sh does not run, a
# headline figure its page no longer prints, a prompt in a shell block, a mark naming a missing
# file) fails with the message that names it.
#   check_planted.sh CHECK_SCRIPT
set -euo pipefail
check=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A tree with an example golden and a generated page.
make_tree() {
  local root=$1
  mkdir -p "$root/examples/walk" "$root/docs"
  cat >"$root/examples/walk/run.sh" <<'EOF'
clustersim() { "$CLUSTERSIM" "$@"; }
clustersim scale configs/experiments/x.yaml --gpus 64,128 \
  --tokens 1T
clustersim validate --hardware h.yaml --max-error 5 || echo "(exit $?)"
EOF
  printf '%s\n' "GPUs  best" "  64  tp 8 x pp 4" " 128  tp 8 x pp 8" "plot  no" "" "check: 1.38% passed" \
    >"$root/examples/walk/expected-output.txt"
  cat >"$root/docs/results.md" <<'EOF'
# Results

## Steps on one node

| rows | count | mean | max |
|---|---:|---:|---:|
| every row | 1440 | 6.94% | 27.1% |
| held out | 1152 | 6.93% | 26.9% |
EOF
}

good_readme() {
  cat <<'EOF'
# Walk

```sh
clustersim scale configs/experiments/x.yaml --gpus 64,128 --tokens 1T
```

<!-- output: examples/walk/expected-output.txt -->
```
$ clustersim scale configs/experiments/x.yaml --gpus 64,128 \
    --tokens 1T
GPUs  best
  64  tp 8 x pp 4
...
check: 1.38% passed
```

<!-- output: examples/walk/expected-output.txt -->
```
$ clustersim validate --hardware h.yaml --max-error 5
check: 1.38% passed
```

<!-- output: docs/results.md -->
| rows | count | mean | max |
|---|---:|---:|---:|
| held out | 1152 | 6.93% | 26.9% |

<!-- figures -->
- Steps: 1,440 rows, mean 6.94%, worst 27.1% ([results](docs/results.md#steps-on-one-node))

<!-- diagram -->
```
a/  b/
```
EOF
}

expect_pass() {
  local root=$1
  if ! out=$(python3 "$check" "$root" 2>&1); then
    echo "check_planted: the good tree failed:" >&2
    echo "$out" >&2
    exit 1
  fi
}

# expect_fail NAME MESSAGE OLD NEW: the good README with its first OLD replaced by NEW.
expect_fail() {
  local name=$1 message=$2
  local root="$work/$name"
  make_tree "$root"
  good_readme | OLD=$3 NEW=$4 python3 -c '
import os, sys
text = sys.stdin.read()
assert os.environ["OLD"] in text, os.environ["OLD"]
sys.stdout.write(text.replace(os.environ["OLD"], os.environ["NEW"], 1))' >"$root/README.md"
  if out=$(python3 "$check" "$root" 2>&1); then
    echo "check_planted: planted fault '$name' passed the check" >&2
    exit 1
  fi
  if ! grep -qF -- "$message" <<<"$out"; then
    echo "check_planted: planted fault '$name' failed without saying '$message':" >&2
    echo "$out" >&2
    exit 1
  fi
}

make_tree "$work/good"
good_readme >"$work/good/README.md"
expect_pass "$work/good"

golden=examples/walk/expected-output.txt
expect_fail drifted "output line 2 of the block is not in $golden" \
  '  64  tp 8 x pp 4' '  64  tp 4 x pp 8'
expect_fail gap "output line 3 of the block is not in $golden" \
  $'  64  tp 8 x pp 4\n...\n' $'  64  tp 8 x pp 4\n'
expect_fail unmarked "a fenced block without a language with no source" \
  $'<!-- output: examples/walk/expected-output.txt -->\n```\n$ clustersim validate' \
  $'```\n$ clustersim validate'
expect_fail command "is not one examples/walk/run.sh runs" \
  '--max-error 5' '--max-error 6'
expect_fail figure "no line of docs/results.md#steps-on-one-node holds all of" \
  'worst 27.1%' 'worst 25.1%'
expect_fail anchor "docs/results.md has no section #steps" \
  '#steps-on-one-node' '#steps'
expect_fail prompt 'a `$ ` prompt in a ```sh block' \
  $'```sh\nclustersim' $'```sh\n$ clustersim'
expect_fail missing "output marked as from examples/walk/golden.txt: no such file" \
  'walk/expected-output.txt -->' 'walk/golden.txt -->'
expect_fail console '```console with no source' \
  $'<!-- diagram -->\n```\n' $'```console\n'
expect_fail table "output line 3 of the block is not in docs/results.md" \
  '| held out | 1152 | 6.93% |' '| held out | 1152 | 6.95% |'
echo "check_planted: every planted fault fails the check with its message; the good tree passes"
