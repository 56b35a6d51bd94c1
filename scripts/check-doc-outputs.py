#!/usr/bin/env python3
"""Fails when an output shown in the documentation is not what its source holds.

Every output a reader sees in README.md, docs/*.md and examples/*/README.md comes from a file
that CI regenerates or checks (a golden examples/NAME/expected-output.txt, docs/validation.md,
docs/performance.md), and says which, so that a changed output fails here instead of leaving
the page stale. Three kinds of block (Python 3, standard library only):

  1. An output block is marked by an HTML comment on the line before it:

         <!-- output: examples/scale-before-renting/expected-output.txt -->
         ```
         $ clustersim scale configs/experiments/llama3-70B-h100.yaml --gpus 512,1024
         GPUs  tried  fit  best configuration ...
         ...
         ```

     Its lines must appear in the source in the same order, consecutive lines consecutive
     there: a line `...` elides source lines, nothing else may. Trailing blanks do not count.
     A line `$ COMMAND` (with its `\\` continuation lines) is the command that printed what
     follows: it must be a command of the example's run.sh (where `clustersim` is a function
     running the built binary, so run.sh and the page show the same words). The marker may
     also stand before a table or paragraph (no fence): its lines must then appear in the
     source in order, not necessarily consecutive (rows picked from a generated table).

  2. A code block is any other fenced block: it must name its language (```sh, ```yaml, ```json,
     ...) and, if it is a shell block, hold commands only (no `$ ` prompt lines: a transcript is
     an output and is marked as one). A block without a language and without a marker is an
     unmarked output and fails, as does ```console or ```text. A diagram is marked
     `<!-- diagram -->`.

  3. A figures block, marked `<!-- figures -->` before a list or table: each of its items (a list
     item with its continuation lines, or a table row) links to a section of a generated page
     ([..](docs/validation.md#section)), and every figure of the item (a number with a decimal
     point or followed by %, x, a time or a rate) appears in one line of that section. A
     headline that quotes a number the page no longer prints fails.

Files that say "Do not edit by hand" in their first lines are generated and skipped.

Usage: scripts/check-doc-outputs.py [ROOT]   (ROOT: the repository root, default this checkout)
"""
import glob
import os
import re
import shlex
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))

MARK_OUTPUT = re.compile(r"^\s*<!--\s*output:\s*(\S+)\s*-->\s*$")
MARK_DIAGRAM = re.compile(r"^\s*<!--\s*diagram\s*-->\s*$")
MARK_FIGURES = re.compile(r"^\s*<!--\s*figures\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
# Languages of code: what a reader types or writes, never what a command printed.
CODE_LANGS = {"sh", "bash", "yaml", "json", "python", "cpp", "c++", "cmake", "dot", "toml", "ini",
              "diff", "csv"}
SHELL_LANGS = {"sh", "bash"}
ELISION = "..."
# A figure: a number with a decimal point, or one followed by %, x, a time or a rate.
# Not a model's size (1.7B) nor a name (H100).
FIGURE = re.compile(r"(?<![\w.])(\d[\d,]*\.\d+(?![A-Za-wyz\d])|\d[\d,]*(?=\s?(?:%|x\b|ns\b|us\b|ms\b"
                    r"|s\b|days\b|[KMG]?/s\b|M events/s)))")
LINK = re.compile(r"\]\(([^)\s]+\.md)#([^)\s]+)\)")


def pages():
    names = ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + sorted(
        glob.glob(os.path.join(ROOT, "examples", "*", "README.md")))
    for name in names:
        rel = os.path.relpath(os.path.join(ROOT, name), ROOT)
        if os.path.exists(os.path.join(ROOT, rel)):
            yield rel


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def generated(text):
    return any("Do not edit by hand" in line for line in text.splitlines()[:10])


def previous_nonblank(lines, i):
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return lines[j] if j >= 0 else ""


def split_commands(block):
    """The block's `$ ` commands (continuation lines joined) and its other lines, in order."""
    commands, output = [], []
    i = 0
    while i < len(block):
        line = block[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(block):
                i += 1
                cmd = cmd[:-1] + " " + block[i].strip()
            commands.append(normalise(cmd))
        else:
            output.append(line)
        i += 1
    return commands, output


def normalise(cmd):
    try:
        return " ".join(shlex.split(cmd, comments=True))
    except ValueError:
        return " ".join(cmd.split())


def script_commands(path):
    """The commands of a run.sh, continuation lines joined, normalised as split_commands does."""
    out, cur = [], ""
    for line in read(path).splitlines():
        stripped = line.strip()
        if cur:
            cur += " " + stripped
        else:
            cur = stripped
        if cur.endswith("\\"):
            cur = cur[:-1]
            continue
        if cur and not cur.startswith("#"):
            cmd = re.sub(r'^"?\$\{?CLUSTERSIM\}?"?(?=\s)', "clustersim", cur)
            out.append(normalise(cmd))
            # `clustersim validate ... || echo ...`: the page shows the command alone.
            head = re.split(r"\s(?:\|\||&&|\|)\s", cmd)[0]
            if head != cmd:
                out.append(normalise(head))
        cur = ""
    return out


def find_runs(block, source, consecutive):
    """None when `block`'s lines appear in `source` in order (runs between `...` lines
    consecutive when `consecutive`), else (block index, source index searched from) of the
    first line that does not."""
    runs, run = [], []
    for n, line in enumerate(block):
        if line.strip() == ELISION:
            if run:
                runs.append(run)
            run = []
        else:
            run.append((n, line.rstrip()))
    if run:
        runs.append(run)
    src = [s.rstrip() for s in source]
    at = 0
    for run in runs:
        if not consecutive:
            for n, line in run:
                try:
                    at = src.index(line, at) + 1
                except ValueError:
                    return n, at
            continue
        first = run[0][1]
        found = None
        start = at
        while True:
            try:
                k = src.index(first, start)
            except ValueError:
                break
            if all(k + d < len(src) and src[k + d] == line for d, (_, line) in enumerate(run)):
                found = k
                break
            start = k + 1
        if found is None:
            # Name the line where the longest partial match breaks off, for a useful message.
            best = 0
            for k in range(at, len(src)):
                d = 0
                while d < len(run) and k + d < len(src) and src[k + d] == run[d][1]:
                    d += 1
                best = max(best, d)
            return run[best][0], at
        at = found + len(run)
    return None


def check_output(page, lineno, source_rel, block, fenced, problems):
    where = f"{page}:{lineno}"
    full = os.path.join(ROOT, source_rel)
    if not os.path.isfile(full):
        problems.append(f"{where}: output marked as from {source_rel}: no such file")
        return
    commands, output = split_commands(block) if fenced else ([], block)
    if commands:
        script = os.path.join(os.path.dirname(source_rel), "run.sh")
        if not os.path.isfile(os.path.join(ROOT, script)):
            problems.append(f"{where}: `$` commands in a block from {source_rel}, which is no "
                            "example's golden: show commands in a ```sh block")
        else:
            known = script_commands(script)
            for c in commands:
                if c not in known:
                    problems.append(f"{where}: command `{c}` is not one {script} runs")
    if not [line for line in output if line.strip() not in ("", ELISION)]:
        problems.append(f"{where}: output block from {source_rel} shows no output")
        return
    source = read(source_rel).splitlines()
    miss = find_runs(output, source, consecutive=fenced)
    if miss is not None:
        n, at = miss
        problems.append(
            f"{where}: output line {n + 1} of the block is not in {source_rel}"
            f"{' (after its line ' + str(at) + ')' if at else ''}: {output[n].rstrip()!r}; "
            f"copy the excerpt again from {source_rel} (regenerated by its script), or mark "
            "a gap with a line `...`")


def section_lines(rel, anchor):
    """The lines of the section of `rel` whose heading's GitHub anchor is `anchor`."""
    lines = read(rel).splitlines()
    start, level = None, 0
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)$", line)
        if not m:
            continue
        if start is not None and len(m.group(1)) <= level:
            return lines[start:i]
        if start is None and slug(m.group(2)) == anchor:
            start, level = i, len(m.group(1))
    return lines[start:] if start is not None else None


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def figures(text):
    return [m.group(1).replace(",", "") for m in FIGURE.finditer(text)]


def items(block):
    """The list items or table rows of a block, with their continuation lines joined, each with
    the index of its first line."""
    out = []
    for k, line in enumerate(block):
        if out and not re.match(r"^\s*(?:[-*+]\s|\d+\.\s|\|)", line):
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        else:
            out.append((k, line))
    return out


def check_figures(page, lineno, block, problems):
    for k, line in items(block):
        where = f"{page}:{lineno + k}"
        if re.match(r"^\s*\|?\s*:?-{3,}", line):
            continue
        # Figures of the line's own text, not of its link targets.
        text = re.sub(r"\]\([^)]*\)", "]", line)
        figs = figures(text)
        if not figs:
            continue
        links = LINK.findall(line)
        if not links:
            problems.append(f"{where}: a headline with figures links to no section of a page "
                            "([..](docs/PAGE#section), a markdown page) that they come from")
            continue
        target, anchor = links[0]
        rel = os.path.normpath(os.path.join(os.path.dirname(page), target))
        if not os.path.isfile(os.path.join(ROOT, rel)):
            problems.append(f"{where}: links to {rel}: no such file")
            continue
        section = section_lines(rel, anchor)
        if section is None:
            problems.append(f"{where}: {rel} has no section #{anchor}")
            continue
        if not any(all(re.search(r"(?<![\d.])" + re.escape(f) + r"(?![\d])",
                                 s.replace(",", "")) for f in figs) for s in section):
            problems.append(f"{where}: no line of {rel}#{anchor} holds all of {', '.join(figs)}; "
                            "take the headline's figures from one line of that section as it "
                            "is generated now")


def paragraph(lines, i):
    block = []
    while i < len(lines) and lines[i].strip() and not lines[i].lstrip().startswith("<!--"):
        block.append(lines[i])
        i += 1
    return block


def check_page(page, problems):
    text = read(page)
    if generated(text):
        return 0
    lines = text.splitlines()
    blocks = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if MARK_FIGURES.match(line) or (MARK_OUTPUT.match(line) and not FENCE.match(
                lines[i + 1] if i + 1 < len(lines) else "")):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and FENCE.match(lines[j]):
                if MARK_FIGURES.match(line):
                    problems.append(f"{page}:{i + 1}: a figures mark before a fenced block; "
                                    "use an output mark")
                i = j
                continue
            block = paragraph(lines, j)
            if not block:
                problems.append(f"{page}:{i + 1}: a mark with nothing under it")
            elif MARK_FIGURES.match(line):
                check_figures(page, j + 1, block, problems)
            else:
                check_output(page, j + 1, MARK_OUTPUT.match(line).group(1), block, False,
                             problems)
            blocks += 1
            i = j + len(block)
            continue
        m = FENCE.match(line)
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        block = [b[len(indent):] if b.startswith(indent) else b for b in lines[i + 1:j]]
        mark = previous_nonblank(lines, i)
        out = MARK_OUTPUT.match(mark)
        if out:
            check_output(page, i + 1, out.group(1), block, True, problems)
        elif MARK_DIAGRAM.match(mark):
            pass
        elif lang not in CODE_LANGS:
            kind = f"```{lang}" if lang else "a fenced block without a language"
            problems.append(f"{page}:{i + 1}: {kind} with no source: an output is marked "
                            "<!-- output: FILE --> with the golden or generated file it comes "
                            "from; code names its language (```sh, ```yaml, ...)")
        elif lang in SHELL_LANGS:
            for k, b in enumerate(block):
                if b.startswith("$ "):
                    problems.append(f"{page}:{i + 2 + k}: a `$ ` prompt in a ```{lang} block: "
                                    "commands only here; a transcript is an output block with "
                                    "its source marked")
                    break
        blocks += 1
        i = j + 1
    return blocks


def main():
    problems = []
    count = 0
    for page in pages():
        count += check_page(page, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-doc-outputs: {len(problems)} problem(s) in the documentation's outputs",
              file=sys.stderr)
        return 1
    print(f"check-doc-outputs: {count} blocks; every output shown matches its source")
    return 0


if __name__ == "__main__":
    sys.exit(main())
