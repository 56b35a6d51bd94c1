#!/usr/bin/env python3
"""Fails when the repository points at a file it does not have.

Two checks over the files git tracks (Python 3, standard library only):
  1. Every relative link in a markdown file, [text](path) or ![alt](path) or [ref]: path,
     names a file or folder in the repository (resolved against the markdown file's folder).
     Links with a scheme (https:, mailto:) and pure anchors (#section) are not checked; links
     inside code blocks and code spans are not links.
  2. Every *.md file named in a source file, a script, a config or a markdown file's prose
     (`docs/measurements.md`, "see DESIGN.md") exists: resolved against the naming file's
     folder, the repository root, or docs/. A name a reader cannot open is a stale reference.
     Names under a folder the repository does not have (`doc/PERFORMANCE.md` of nccl-tests,
     cited with its repository) are another project's files and are not checked.
And nothing may point outside the checkout at ../shared/ (a folder only the authors have).

Usage: scripts/check-links.py [ROOT]   (ROOT: the repository root, default this checkout)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))

# Files whose text mentions missing files on purpose (this checker describes what it refuses; the
# documentation-output check's test plants pages in a scratch tree).
SKIP = {"scripts/check-links.py", "tests/docs/check_planted.sh"}

SOURCE_EXT = (".h", ".cpp", ".py", ".sh", ".yaml", ".yml", ".txt", ".cmake", ".md", ".dot")


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        return sorted(f for f in out.split("\0") if f)
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "build"]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
        return sorted(files)


FILES = tracked_files()
FILE_SET = set(FILES)
DIR_SET = {os.path.dirname(f) for f in FILES}
while True:
    parents = {os.path.dirname(d) for d in DIR_SET} - DIR_SET
    if not parents:
        break
    DIR_SET |= parents


def in_repo(rel):
    """Whether `rel` (normalised, relative to ROOT) is a tracked file or a folder of one."""
    rel = os.path.normpath(rel)
    return not rel.startswith("..") and (rel in FILE_SET or rel in DIR_SET or rel == ".")


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
MD_NAME = re.compile(r"(?<![\w./-])((?:\.\.?/)*[\w.-]+(?:/[\w.-]+)*\.md)\b")


def markdown_links(path, text):
    problems = []
    in_fence = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        prose = CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(prose)]
        m = REF.match(prose)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if SCHEME.match(t) or t.startswith("#"):
                continue
            target = t.split("#", 1)[0].split("?", 1)[0]
            if not target:
                continue
            if target.startswith("/"):
                rel = target.lstrip("/")
            else:
                rel = os.path.join(os.path.dirname(path), target)
            if not in_repo(rel):
                problems.append(f"{path}:{n}: link to {t}: no such file in the repository")
    return problems


def named_md_files(path, text):
    problems = []
    here = os.path.dirname(path)
    for n, line in enumerate(text.splitlines(), 1):
        for m in MD_NAME.finditer(line):
            name = m.group(1)
            # Part of a URL (https://host/path/README.md): not ours to check.
            before = line[:m.start()]
            if re.search(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S*$", before):
                continue
            # A path in another repository at a commit (owner/repo@commit:docs/x.md), as the
            # reference data cite their sources.
            if re.search(r"[\w.-]+/[\w.-]+@[0-9a-f]{7,40}:\S*$", before):
                continue
            # A name under a folder this repository does not have (network/README.md,
            # doc/PERFORMANCE.md) is a file of the other repository the comment cites.
            first = name.split("/")[0]
            if "/" in name and first not in ("..", ".") and not any(
                    in_repo(os.path.join(d, first)) for d in (here, "", "docs")):
                continue
            candidates = [os.path.join(here, name), name, os.path.join("docs", name)]
            if not any(in_repo(c) for c in candidates):
                problems.append(f"{path}:{n}: names {name}: no such file in the repository")
    return problems


def outside_checkout(path, text):
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        if "../shared/" in line or "../shared`" in line:
            problems.append(f"{path}:{n}: points at ../shared, outside the repository; cite "
                            "the public source or the copy in the repository instead")
    return problems


def main():
    problems = []
    for path in FILES:
        if path in SKIP or not path.endswith(SOURCE_EXT):
            continue
        full = os.path.join(ROOT, path)
        try:
            with open(full, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if path.endswith(".md"):
            problems += markdown_links(path, text)
        problems += named_md_files(path, text)
        problems += outside_checkout(path, text)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-links: {len(problems)} reference(s) to files not in the repository",
              file=sys.stderr)
        return 1
    print("check-links: every link and named document is in the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
