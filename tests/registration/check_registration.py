#!/usr/bin/env python3
"""Every Catch2 test case is registered with CTest under its own name, once.

catch_discover_tests (Catch2 v2) turns each name `clustersim_tests --list-test-names-only`
prints into one CTest test whose command runs that name. A name CMake cannot carry whole (a `;`
splits it into list elements) registers fragments that match no test case; Catch2 v2 then
prints "No tests ran" and exits 0, so the case silently never runs. This check compares the two
lists: the test cases the binary holds, and the names CTest runs it with.

Where the cases are registered one test per source file (CLUSTERSIM_CTEST_PER_FILE, the sanitizer
build: tests/sanitize/add_file_tests.cmake), it checks instead that the files' tests and the
"(slow)" test together run every case once: a test per file tag Catch2's -# gives, no other, and
the cases those tags count plus the "(slow)" ones add up to all of them.

    check_registration.py BUILD_DIR TEST_BINARY
"""
import json
import re
import subprocess
import sys


FILE_SPEC = re.compile(r"\[#([A-Za-z0-9_]+)\]~\[\.\]~\*\(slow\)\*")
SLOW_SPEC = "~[.]*(slow)*"


def check_per_file(binary: str, cases: list, registered: list, per_file: list) -> int:
    """The per-file registration: every case run by exactly one test (see the module's doc)."""
    listed = subprocess.run([binary, "-#", "~[.]~*(slow)*", "--list-tags"], check=False,
                            capture_output=True, text=True).stdout.splitlines()
    counts = {}
    for line in listed:
        match = re.fullmatch(r"\s*(\d+)\s+\[#([A-Za-z0-9_]+)\]", line)
        if match:
            counts[match.group(2)] = int(match.group(1))
    slow = [name for name in cases if "(slow)" in name.lower()]
    problems = [f"registered one test per case as well as per file: {name!r}" for name in registered]
    files = []
    slow_tests = []
    for name, args in per_file:
        match = FILE_SPEC.fullmatch(args[1]) if len(args) == 2 and args[0] == "-#" else None
        if match and name == f"cases.{match.group(1)}":
            files.append(match.group(1))
        elif args == [SLOW_SPEC] and "(slow)" in name:
            slow_tests.append(name)
        else:
            problems.append(f"a per-file test this check does not know: {name!r} {args!r}")
    for tag in sorted({t for t in files if files.count(t) > 1}):
        problems.append(f"file registered more than once: {tag!r}")
    for tag in sorted(set(counts) - set(files)):
        problems.append(f"file with cases but no test: {tag!r} ({counts[tag]} cases)")
    for tag in sorted(set(files) - set(counts)):
        problems.append(f"test for a file with no cases to run: {tag!r}")
    if len(slow_tests) != (1 if slow else 0):
        problems.append(f"{len(slow)} (slow) cases, {len(slow_tests)} tests running them")
    if sum(counts.values()) + len(slow) != len(cases):
        problems.append(f"{sum(counts.values())} cases by file and {len(slow)} (slow) cases, "
                        f"but the binary holds {len(cases)}")
    if problems:
        print("\n".join(problems))
        print(f"FAIL: {len(cases)} test cases, {len(per_file)} per-file CTest tests")
        return 1
    print(f"ok: {len(cases)} test cases, run by {len(files)} per-file tests and "
          f"{len(slow)} in the (slow) one")
    return 0


def main() -> int:
    build_dir, binary = sys.argv[1], sys.argv[2]
    listed = subprocess.run([binary, "--list-test-names-only"], check=False,
                            capture_output=True, text=True).stdout.splitlines()
    cases = [name for name in listed if name.strip()]
    shown = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                           check=True, capture_output=True, text=True).stdout
    registered = []
    per_file = []
    for test in json.loads(shown)["tests"]:
        command = test.get("command", [])
        if command and command[0] == binary:
            registered.append(test["name"])
        elif len(command) > 1 and command[1] == binary and command[0].endswith("run_cases.sh"):
            per_file.append((test["name"], command[2:]))
    if per_file:
        return check_per_file(binary, cases, registered, per_file)
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
