#!/usr/bin/env bash
# run_cases.sh BINARY ARGS...: runs the Catch2 cases that ARGS select, in one process (the
# sanitizer build's one CTest test per test file: add_file_tests.cmake). Catch2 names a case that
# fails an assertion or throws; a sanitizer's report names the code but not the case, and a leak
# is reported at exit, after the last case. So on a failure each selected case runs again alone,
# and the ones that fail alone are named (none: the failure needs the cases run before it).
set -u
binary=$1
"$@"
status=$?
[ "$status" -eq 0 ] && exit 0
echo "run_cases.sh: exit status $status; each case again on its own:"
failed=0
while IFS= read -r name; do
  [ -n "$name" ] || continue
  # A name is a Catch2 test spec: its ',', '[', ']' and '\' are escaped with '\'.
  spec=$(printf '%s' "$name" | sed 's/[],[\\]/\\&/g')
  if output=$("$binary" "$spec" 2>&1); then
    echo "  passed alone: $name"
  else
    failed=$((failed + 1))
    echo "  FAILED alone: $name"
    printf '%s\n' "$output" | sed 's/^/    /'
  fi
done < <("$@" --list-test-names-only)
[ "$failed" -gt 0 ] || echo "run_cases.sh: no case fails alone: it fails after the cases before it"
exit "$status"
