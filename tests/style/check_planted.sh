#!/usr/bin/env bash
# The function and file size check (scripts/check-function-size.py) on planted trees: a function
# of 161 lines fails, naming it; the same function marked as a table passes; a file of 1,100 lines
# fails; braces inside strings, comments and raw strings do not count.
set -euo pipefail
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/app"

body() { for i in $(seq 1 "$1"); do echo "    x += $i;"; done; }
{
  echo 'int short_one(int x) {'
  echo '    const char* s = "{{{"; // } } }'
  echo '    const char* r = R"({ { {)";'
  echo '    return x + (s != r);'
  echo '}'
  echo 'int long_one(int x) {'
  body 158
  echo '    return x;'
  echo '}'
} > "$tmp/app/long.cpp"
if "$check" "$tmp" 2> "$tmp/err"; then
  echo "planted: a 161-line function passed" >&2; exit 1
fi
grep -q "app/long.cpp:6: long_one is 161 lines" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
grep -q "short_one" "$tmp/err" && { echo "planted: short_one reported" >&2; exit 1; }

sed -i 's|^int long_one|// check-function-size: a table (planted)\nint long_one|' "$tmp/app/long.cpp"
"$check" "$tmp" || { echo "planted: a marked table failed" >&2; exit 1; }

{ for i in $(seq 1 1100); do echo "int v$i = $i;"; done; } > "$tmp/app/big.cpp"
if "$check" "$tmp" 2> "$tmp/err"; then
  echo "planted: a 1,100-line file passed" >&2; exit 1
fi
grep -q "app/big.cpp is 1100 lines" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
echo "check-function-size: the planted violations fail, the table and the short function pass"
