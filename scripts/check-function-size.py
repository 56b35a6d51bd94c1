#!/usr/bin/env python3
"""Fails when a C++ function or a source file is longer than the project allows.

    scripts/check-function-size.py [ROOT] [--max-function N] [--max-file N] [--list K]

Limits (the developers' guide): no function over ~150 lines, no source file over ~1,000 lines,
generated files aside. A function is measured from the line of its opening brace to the line of
its closing brace; lambdas and local classes count toward the function that holds them. The
scan is lexical (comments, string, character and raw-string literals are skipped; braces are
matched), the way lizard and clang-tidy's readability-function-size count, without a compiler:
a brace opens a function body when it follows a parameter list at namespace or class scope.
`--list K` prints the K longest functions and files, a report rather than a check. CTest runs
the check on this tree (style.function_size) and on planted violations (tests/style).

A function that is a declarative table (the schema's key tables: one entry per key, no logic
between them) says so on the line before its signature, `// check-function-size: a table`, and
is not measured: its length is the number of keys, not complexity.
"""

import argparse
import importlib.util
import pathlib
import re
import sys

SOURCE_DIRS = ["app", "base", "calibrate", "config", "explore", "hardware", "python", "results",
               "sim", "strategies", "validation"]
EXTENSIONS = {".h", ".cpp", ".cu", ".cuh"}
TABLE_MARK = "check-function-size: a table"
SCOPE_WORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b|extern\s+\"C\"")


def _layering_lexer():
    """check-layering.py's `blank`: the one lexer of the C++ checks (comments and literals
    blanked, positions and line breaks kept)."""
    path = pathlib.Path(__file__).resolve().parent / "check-layering.py"
    spec = importlib.util.spec_from_file_location("check_layering", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.blank


blank = _layering_lexer()


def code_only(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept, so lines
    still count)."""
    return blank(re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", text), True)


def functions(text):
    """(name, first line, last line) of each function body at namespace or class scope."""
    code = code_only(text)
    found = []
    stack = []  # per open brace: "scope", "function" or "block"
    header_start = 0  # where the text before the next brace begins
    paren = 0
    line = 1
    start_line = 0
    name = ""
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "(":
            paren += 1
        elif c == ")":
            paren = max(0, paren - 1)
        elif c == ";":
            if paren == 0:
                header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            in_function = "function" in stack
            if in_function or paren > 0:
                stack.append("block")
            elif SCOPE_WORDS.search(header) and "(" not in header.split("{")[-1].split(":")[0]:
                stack.append("scope")
            elif ")" in header:
                stack.append("function")
                start_line = line
                m = re.findall(r"([~\w:<>]+)\s*\(", header)
                name = m[0] if m else "?"
            else:
                stack.append("block")
            header_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "block"
            if kind == "function":
                found.append((name, start_line, line))
            header_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--max-function", type=int, default=150)
    parser.add_argument("--max-file", type=int, default=1000)
    parser.add_argument("--list", type=int, default=0)
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    files = sorted(p for d in SOURCE_DIRS for p in (root / d).rglob("*")
                   if p.suffix in EXTENSIONS and p.is_file())
    long_functions, long_files, everything = [], [], []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(root)
        lines = text.count("\n")
        if lines > args.max_file:
            long_files.append((lines, str(rel)))
        lines_of = text.splitlines()
        for name, first, last in functions(text):
            if any(TABLE_MARK in lines_of[k] for k in range(max(0, first - 4), first - 1)):
                continue
            size = last - first + 1
            everything.append((size, f"{rel}:{first}", name))
            if size > args.max_function:
                long_functions.append((size, f"{rel}:{first}", name))
    if args.list:
        for size, where, name in sorted(everything, reverse=True)[:args.list]:
            print(f"{size:6d}  {where}  {name}")
        print()
        for lines, rel in sorted(long_files, reverse=True):
            print(f"{lines:6d}  {rel}")
        return 0
    for size, where, name in sorted(long_functions, reverse=True):
        print(f"check-function-size: {where}: {name} is {size} lines (at most {args.max_function})",
              file=sys.stderr)
    for lines, rel in sorted(long_files, reverse=True):
        print(f"check-function-size: {rel} is {lines} lines (at most {args.max_file}; split it "
              "by job)", file=sys.stderr)
    return 1 if long_functions or long_files else 0


if __name__ == "__main__":
    sys.exit(main())
