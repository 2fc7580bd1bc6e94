#!/usr/bin/env bash
# Role: the layering check, run by scripts/test.sh (so by CI) right after
# check_tree.sh, before anything is built, and by ctest (layering_check and
# layering_check_catches_*, tests/CMakeLists.txt). It reads the #include lines
# of every C and C++ file of the library folders (arch/, recorder/, formats/),
# follows the quoted ones transitively inside the tree, and fails (exit 1,
# naming the include chain) when
#  1. Unicorn or Capstone reaches a format (formats/), the unwinder
#     (recorder/unwind/) or arch/'s facts headers (arch/arch_info.h,
#     arch/instruction_decoder.h): they build against the facts alone
#     (docs/design.md, "who may use whom"). Debian puts both libraries'
#     headers in /usr/include, so no include path can keep them out: the
#     include lines are what is checked;
#  2. a file outside the CLI (recorder/cli/) includes the CLI: nothing below the
#     CLI may use it (tests/ and bench/ sit above it and are not checked);
#  3. the folders include each other in a cycle (folder = arch, formats/<name>,
#     recorder/<name>; formats/'s own files form the folder "formats").
# Every #include is followed whatever #if surrounds it (stricter, never looser).
# A quoted include that is not in the tree (a generated header such as
# frames.pb.h) is not followed.
# Usage: scripts/check_layering.sh [ROOT]   (ROOT: the tree to check; default
# this checkout). Needs python3 only; nothing built.
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
exec /usr/bin/python3 - "$root" <<'PYTHON'
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1])
LIBRARY_DIRS = ("arch", "recorder", "formats")
SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp")
ENGINE_FREE_DIRS = ("formats/", "recorder/unwind/")
ENGINE_FREE_FILES = ("arch/arch_info.h", "arch/instruction_decoder.h")
FORBIDDEN_LIBRARIES = ("unicorn/", "capstone/")
CLI_DIR = "recorder/cli/"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def library_sources():
    for top in LIBRARY_DIRS:
        for directory, subdirs, files in os.walk(os.path.join(ROOT, top)):
            subdirs.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(directory, name), ROOT)


includes_cache = {}


def includes(path):
    """(kind, target) for each include of `path`: kind "tree" (a file of the
    tree, relative to ROOT) or "system" (an angle include, as written)."""
    if path in includes_cache:
        return includes_cache[path]
    found = []
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as text:
        for line in text:
            match = INCLUDE.match(line)
            if not match:
                continue
            bracket, name = match.groups()
            candidates = [name] if bracket == "<" else [os.path.join(os.path.dirname(path), name), name]
            resolved = next((os.path.normpath(c) for c in candidates
                             if os.path.isfile(os.path.join(ROOT, c))), None)
            if resolved:
                found.append(("tree", resolved))
            elif bracket == "<":
                found.append(("system", name))
    includes_cache[path] = found
    return found


def forbidden_chain(start):
    """The include chain from `start` to a Unicorn or Capstone header, or None."""
    parents = {start: None}
    queue = [start]
    while queue:
        current = queue.pop(0)
        for kind, target in includes(current):
            if kind == "system":
                if target.startswith(FORBIDDEN_LIBRARIES):
                    chain = ["<" + target + ">"]
                    node = current
                    while node:
                        chain.append(node)
                        node = parents[node]
                    return list(reversed(chain))
            elif target not in parents:
                parents[target] = current
                queue.append(target)
    return None


def folder_of(path):
    parts = path.split("/")
    if parts[0] == "arch":
        return "arch"
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def folder_cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, {})):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return cycles


problems = []
sources = list(library_sources())
for path in sources:
    if path.startswith(ENGINE_FREE_DIRS) or path in ENGINE_FREE_FILES:
        chain = forbidden_chain(path)
        if chain:
            problems.append("Unicorn or Capstone reaches " + path + ", which must build against arch/'s facts "
                            "alone (arch/arch_info.h, arch/instruction_decoder.h):\n    " + "\n -> ".join(chain))

edges = {}  # folder -> {folder: (file, included file)}
for path in sources:
    for kind, target in includes(path):
        if kind != "tree":
            continue
        if target.startswith(CLI_DIR) and not path.startswith(CLI_DIR):
            problems.append(path + " includes " + target + ": nothing below the CLI may include the CLI")
        if target.split("/")[0] in LIBRARY_DIRS and folder_of(target) != folder_of(path):
            edges.setdefault(folder_of(path), {}).setdefault(folder_of(target), (path, target))

for cycle in folder_cycles(edges):
    members = set(cycle)
    lines = [f"    {a} -> {b}: {edges[a][b][0]} includes {edges[a][b][1]}"
             for a in cycle for b in sorted(edges.get(a, {})) if b in members]
    problems.append("the folders " + ", ".join(cycle) + " include each other in a cycle:\n" + "\n".join(lines))

if problems:
    for problem in problems:
        print("check_layering: " + problem, file=sys.stderr)
    sys.exit(1)
print(f"check_layering: {len(sources)} files of {', '.join(LIBRARY_DIRS)}: layering holds")
PYTHON
