#!/usr/bin/env python3
"""Every Catch2 test case is registered with CTest under its own name, once.

catch_discover_tests (Catch2 v2) turns each name `clustersim_tests --list-test-names-only`
prints into one CTest test whose command runs that name. A name CMake cannot carry whole (a `;`
splits it into list elements) registers fragments that match no test case; Catch2 v2 then
prints "No tests ran" and exits 0, so the case silently never runs. This check compares the two
lists: the test cases the binary holds, and the names CTest runs it with.

    check_registration.py BUILD_DIR TEST_BINARY
"""
import json
import subprocess
import sys


def main() -> int:
    build_dir, binary = sys.argv[1], sys.argv[2]
    listed = subprocess.run([binary, "--list-test-names-only"], check=False,
                            capture_output=True, text=True).stdout.splitlines()
    cases = [name for name in listed if name.strip()]
    shown = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                           check=True, capture_output=True, text=True).stdout
    registered = []
    for test in json.loads(shown)["tests"]:
        command = test.get("command", [])
        if command and command[0] == binary:
            registered.append(test["name"])
    problems = []
    for name in sorted(set(registered) - set(cases)):
        problems.append(f"registered with CTest but no test case has this name: {name!r}")
    for name in sorted(set(cases) - set(registered)):
        problems.append(f"test case not registered with CTest under its name: {name!r}")
    for name in sorted({n for n in registered if registered.count(n) > 1}):
        problems.append(f"registered more than once: {name!r}")
    for name in cases:
        if ";" in name:
            problems.append(f"test case name holds ';' (CMake splits it): {name!r}")
    if problems:
        print("\n".join(problems))
        print(f"FAIL: {len(cases)} test cases, {len(registered)} CTest tests run the binary")
        return 1
    print(f"ok: {len(cases)} test cases, each registered once under its own name")
    return 0


if __name__ == "__main__":
    sys.exit(main())
