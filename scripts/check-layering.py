#!/usr/bin/env python3
"""Fails when a source includes a header of a layer it may not use, or when code below app/
prints or exits. Run by .ci/run (through scripts/check-layering.sh) and by the layering.* tests.

    scripts/check-layering.sh [ROOT]     ROOT: the repository root (default: this script's)

Exit status: 0 clean, 1 violations (one line each: FILE:LINE: message), 2 bad usage.

Reads every .h/.cpp/.cu/.cuh file under the folders of LAYERS. Includes are the quoted ones
(`#include "hardware/topology.h"`), written from the repository root; a quoted include with
`..` in it is refused (it would walk around this check). A folder of LAYERS that does not exist
is skipped, so layers can be listed before they are created.
"""

import os
import re
import sys

# ---------------------------------------------------------------------------------------------
# The layers, lowest first: each folder and the layers its files may include (itself always).
# A file belongs to the longest folder that contains it ("calibrate/cuda/x.cpp" is in
# calibrate/cuda, not calibrate), and so does an included header. "*" allows every layer;
# "strategies/*" a layer and every layer below it (strategies/ and its sub-folders).
# ---------------------------------------------------------------------------------------------
LAYERS = {
    "sim": [],  # the discrete-event kernel
    "base": ["sim"],  # errors, units (sim::Time), text helpers
    "config": ["sim", "base"],  # YamlMap, presets/extends:, CSV and JSON readers
    "hardware": ["sim", "base", "config"],
    # strategies/: its sub-folders are layers of their own. The collectives and the models
    # know nothing of each other; the parallel schedules build on both.
    "strategies": ["sim", "base", "config", "hardware"],  # what the sub-folders share
    "strategies/collectives": ["sim", "base", "config", "hardware", "strategies"],
    "strategies/models": ["sim", "base", "config", "hardware", "strategies"],
    "strategies/parallel": ["sim", "base", "config", "hardware", "strategies",
                            "strategies/collectives", "strategies/models"],
    "explore": ["sim", "base", "config", "hardware", "strategies/*"],  # the sweep engine
    "calibrate": ["sim", "base", "config", "hardware", "strategies/*"],  # formats, import, fit
    "calibrate/cuda": ["sim", "base", "config", "hardware", "strategies/*", "calibrate"],
    # the study of the model against data/reference that writes docs/validation.md
    "validation": ["sim", "base", "config", "hardware", "strategies/*", "calibrate"],
    # a result as the record users read by program (JSON, rows): shared by app/ and python/
    "results": ["sim", "base", "config", "hardware", "strategies/*", "explore"],
    "app": ["*"],
    # the Python module: a thin binding of the library calls app/ makes, never of app/ itself
    "python": ["sim", "base", "config", "hardware", "strategies/*", "explore", "results"],
    "bench": ["*"],
    "tests": ["*"],
}

# Layers that may neither print nor exit: they report through return values and exceptions,
# and only app/ decides what is printed and with which exit code.
QUIET_LAYERS = [
    "sim", "base", "config", "hardware", "strategies", "strategies/collectives",
    "strategies/models", "strategies/parallel", "explore", "calibrate", "calibrate/cuda",
    "validation", "results", "python"
]

# What "prints or exits" looks like (matched in code with comments and string literals blanked;
# snprintf, formatting into a string, and writing to a stream one is given are fine).
FORBIDDEN_CALLS = [
    (re.compile(r"\b(std::(?:cout|cerr|clog|wcout|wcerr|wclog))\b"), "writes to {0}"),
    (re.compile(r"(?<![\w:])((?:std::)?(?:printf|vprintf|puts|putchar|perror))\s*\("),
     "calls {0}()"),
    (re.compile(r"(?<![\w:])((?:std::)?(?:fprintf|vfprintf))\s*\(\s*(?:stdout|stderr)\b"),
     "calls {0}() on stdout/stderr"),
    (re.compile(r"(?<![\w:])((?:std::)?(?:fputs|fputc|putc|fwrite))"
                r"\s*\([^;]*\b(?:stdout|stderr)\s*\)"),
     "calls {0}() on stdout/stderr"),
    (re.compile(r"\b(fmt::(?:print|println|printf))\s*\(\s*(?:stdout\b|stderr\b|\")"),
     "calls {0}() to stdout/stderr"),
    (re.compile(r"(?<![\w.>])((?:std::)?(?:exit|_exit|_Exit|quick_exit|abort))\s*\("),
     "calls {0}()"),
    (re.compile(r"\b(std::terminate)\b"), "calls {0}()"),
]

# Known violations, each to be fixed by the owner of the file: (file, what), where `what` is the
# included path ("calibrate/cuda/runners.h") or the forbidden name ("std::cout", "std::exit").
# Each is listed on its own, with why and whose, so that new ones still fail. An entry that no
# longer occurs is reported as stale (a note, not an error) so that it can be removed.
ALLOWED = [
    # (none: the tree at the time of writing has no violation)
]

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


def layer_of(path):
    """The longest folder of LAYERS containing `path` (relative, '/'-separated), or None."""
    best = None
    for layer in LAYERS:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def allows(allowed, other):
    """Whether a layer whose list is `allowed` may include a header of layer `other`."""
    for a in allowed:
        if a == "*" or a == other:
            return True
        if a.endswith("/*") and (other == a[:-2] or other.startswith(a[:-1])):
            return True
    return False


def blank(text, strings):
    """`text` with comments (and string/char literals when `strings`) replaced by spaces, line
    breaks kept, so that positions and line numbers stay."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum()
                                                                       or text[i - 1] == "_")):
            m = re.compile(r'R"([^()\\ \n]{0,16})\(').match(text, i)
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]) if strings else text[i:j])
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator: 1'000'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if strings and j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_at(text, pos):
    return text.count("\n", 0, pos) + 1


def check_file(root, rel, problems, allowed_seen):
    layer = layer_of(rel)
    allowed = LAYERS[layer]
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    code = blank(text, strings=False)

    def report(line, what, message):
        key = (rel, what)
        if key in ALLOWED:
            allowed_seen.add(key)
            return
        problems.append(f"{rel}:{line}: {message}")

    for m in INCLUDE.finditer(code):
        target = m.group(1)
        line = line_at(code, m.start())
        if ".." in target.split("/"):
            report(line, target, f"'{layer}' includes '{target}': include from the repository "
                   "root, without '..'")
            continue
        other = layer_of(target)
        if other is None or other == layer or allows(allowed, other):
            continue
        may = ", ".join(allowed + [layer])
        report(line, target, f"'{layer}' may not include '{target}' (allowed: {may})")

    if layer in QUIET_LAYERS:
        quiet = blank(text, strings=True)
        for pattern, message in FORBIDDEN_CALLS:
            for m in pattern.finditer(quiet):
                what = m.group(1)
                report(line_at(quiet, m.start()), what,
                       f"'{layer}' may not print or exit: {message.format(m.group(1))} "
                       "(return or throw; only app/ prints and picks exit codes)")


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        print(f"check-layering: {root}: not a directory", file=sys.stderr)
        return 2
    files = []
    for top in sorted({layer.split("/")[0] for layer in LAYERS}):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root)
                                 .replace(os.sep, "/"))
    problems = []
    allowed_seen = set()
    for rel in files:
        check_file(root, rel, problems, allowed_seen)
    for key in ALLOWED:
        if key not in allowed_seen:
            print(f"check-layering: note: allowed violation {key} no longer occurs; remove it "
                  "from ALLOWED", file=sys.stderr)
    for p in problems:
        print(p)
    if problems:
        print(f"check-layering: {len(problems)} violation{'s' if len(problems) != 1 else ''} "
              f"in {len(files)} files (the layers are at the top of scripts/check-layering.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
