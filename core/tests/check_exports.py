#!/usr/bin/env python3
"""The public-surface test: libquiver.so exports exactly the functions that
the public headers (core/include/quiver/*.h) declare with QV_API.

Both directions are checked, and one more thing:
  - every symbol the shared library exports (nm -D --defined-only) is
    declared with QV_API in a public header (nothing internal leaks);
  - every QV_API declaration is exported (nothing public is missing, as it
    would be if a definition were static, misspelt or left out of the build);
  - every non-inline function a public header declares carries QV_API (a
    declaration without it would compile for a user and then fail to link).

The headers are read through the C preprocessor with QV_BUILDING_LIBRARY
defined, the way the library's own sources see them, so conditional code,
macros and comments are handled by the compiler and not by this script;
QV_API then reads __attribute__((visibility("default"))). Only the text the
preprocessor attributes to the public headers is parsed, never the system
headers they include.

usage: check_exports.py --lib libquiver.so --include core/include \
                        [--cc cc] [--nm nm]
Exit status 0 when the surface matches, 1 with a report otherwise.
"""
import argparse
import bisect
import glob
import os
import re
import subprocess
import sys

VISIBLE = 'visibility("default")'
# Symbols a linker may define in any shared object; they are no API.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}
FUNC_NAME = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def preprocess(cc, include_dir):
    """The public headers after the preprocessor: their lines, in order, as
    (header, line) pairs. Lines of system headers are dropped; a macro of a
    system header expanded in a public header (bool) stays, since the
    preprocessor attributes it to the public header's line."""
    headers = sorted(glob.glob(os.path.join(include_dir, "quiver", "*.h")))
    if not headers:
        sys.exit(f"check_exports: no headers under {include_dir}/quiver")
    source = "".join(f'#include "{h}"\n' for h in headers)
    out = subprocess.run(
        [cc, "-E", "-std=c11", "-D_GNU_SOURCE", "-DQV_BUILDING_LIBRARY", "-I", include_dir, "-x", "c", "-"],
        input=source, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"check_exports: preprocessing the public headers failed:\n{out.stderr}")
    public = {os.path.realpath(h) for h in headers}
    lines, keep = [], None
    for line in out.stdout.splitlines():
        marker = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if marker:
            path = os.path.realpath(marker.group(1)) if marker.group(1)[:1] != "<" else ""
            keep = path if path in public else None
        elif keep:
            lines.append((os.path.basename(keep), line))
    return lines


def statements(text):
    """File-scope statements of `text` as (offset, statement): declarations
    ending in ';' and definitions (a function body ends its statement).
    Brace contents are dropped, so struct members never look like
    file-scope declarations."""
    stmts, buf, start, i, n = [], [], 0, 0, len(text)

    def close(st):
        if st.strip():
            stmts.append((start, " ".join(st.split())))

    while i < n:
        c = text[i]
        if not buf and c.isspace():
            start = i + 1
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            buf.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "{":
            head = "".join(buf).strip()
            depth, j = 1, i + 1
            while j < n and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            i = j
            if "(" in head and not re.match(r"(typedef|struct|union|enum)\b", head):
                close(head + " {}")
                buf, start = [], i
            else:
                buf.append(" {} ")
            continue
        if c == ";":
            close("".join(buf))
            buf, start = [], i + 1
        else:
            buf.append(c)
        i += 1
    return stmts


def strip_attributes(st):
    """`st` without its __attribute__((...)) clauses (parentheses balanced)."""
    out, i = [], 0
    while True:
        j = st.find("__attribute__", i)
        if j < 0:
            return "".join(out) + st[i:]
        out.append(st[i:j])
        k = st.find("(", j)
        depth = 0
        while k < len(st):
            depth += {"(": 1, ")": -1}.get(st[k], 0)
            k += 1
            if depth == 0:
                break
        i = k


def declared(lines):
    """(QV_API names, names declared without QV_API) of the public headers,
    each mapped to the header that declares it."""
    text, owners, offsets = "", [], []
    for header, line in lines:
        offsets.append(len(text))
        owners.append(header)
        text += line + "\n"
    api, bare = {}, {}
    for start, st in statements(text):
        if st.startswith("typedef") or st.endswith("{}"):
            continue  # types, and inline definitions (no symbol to export)
        # The declared name is the first identifier followed by '(' once the
        # attributes are gone.
        names = [m.group(1) for m in FUNC_NAME.finditer(strip_attributes(st))]
        if not names:
            continue  # a variable, struct or enum declaration
        header = owners[max(0, bisect.bisect_right(offsets, start) - 1)]
        (api if VISIBLE in st else bare).setdefault(names[0], header)
    return api, bare


def exported(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"check_exports: {nm} -D --defined-only {lib} failed:\n{out.stderr}")
    syms = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms.add(parts[2].split("@")[0])
    return syms - LINKER_SYMBOLS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--nm", default="nm")
    args = ap.parse_args()

    api, bare = declared(preprocess(args.cc, args.include))
    syms = exported(args.nm, args.lib)
    extra = sorted(syms - set(api))
    missing = sorted(set(api) - syms)
    problems = 0
    if extra:
        problems += len(extra)
        print(f"exported by {os.path.basename(args.lib)} but not declared with QV_API in a public header:")
        for s in extra:
            print(f"  {s}")
    if missing:
        problems += len(missing)
        print("declared with QV_API but not exported:")
        for s in missing:
            print(f"  {s} ({api[s]})")
    if bare:
        problems += len(bare)
        print("declared in a public header without QV_API (hidden, so a user could not link it):")
        for s, h in sorted(bare.items()):
            print(f"  {s} ({h})")
    if len(api) < 50:
        # A parser that found almost nothing would make the comparison
        # vacuous; the library declares far more than this.
        print(f"only {len(api)} QV_API declarations found: the header parser is broken")
        problems += 1
    if problems:
        print(f"check_exports: {problems} problem(s)")
        return 1
    print(f"check_exports: {len(syms)} exported symbols == {len(api)} QV_API declarations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
