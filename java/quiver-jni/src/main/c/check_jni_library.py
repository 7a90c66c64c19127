#!/usr/bin/env python3
"""The JNI library's surface test: libquiver_jni.so stands alone in a jar.

  - it exports only the JVM's entry points: JNI_OnLoad, JNI_OnUnload and
    Java_* functions (nm -D --defined-only), and at least JNI_OnLoad;
  - its NEEDED entries (readelf -d) are only libc, libm and the dynamic
    loader (libpthread and libdl too: older glibc splits them out of libc),
    plus the sanitizer runtimes when it is a sanitizer build (--sanitize);
    no libzstd, liblz4, libxxhash, libgcc_s or libquiver, which a user's
    machine need not have;
  - it has no RPATH/RUNPATH (nothing is looked up next to the build tree).

usage: check_jni_library.py --lib libquiver_jni.so [--nm nm] [--readelf readelf]
                            [--sanitize address|thread|]
Exit status 0 when the library passes, 1 with a report otherwise.
"""
import argparse
import os
import re
import subprocess
import sys

LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}
JNI_SYMBOL = re.compile(r"^(JNI_OnLoad|JNI_OnUnload|Java_[A-Za-z0-9_]+)$")
ALWAYS_ALLOWED = re.compile(r"^(libc|libm|libpthread|libdl)\.so\.[0-9]+$|^ld-linux[-a-z0-9_.]*\.so\.[0-9]+$")
SANITIZER_RUNTIMES = {
    "address": re.compile(r"^lib(asan|ubsan)\.so\.[0-9]+$"),
    "thread": re.compile(r"^libtsan\.so\.[0-9]+$"),
}


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"check_jni_library: {' '.join(cmd)} failed:\n{out.stderr}")
    return out.stdout


def exported(nm, lib):
    syms = set()
    for line in run([nm, "-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms.add(parts[2].split("@")[0])
    return syms - LINKER_SYMBOLS


def dynamic(readelf, lib):
    needed, paths = [], []
    for line in run([readelf, "-d", lib]).splitlines():
        m = re.search(r"\((NEEDED|RPATH|RUNPATH)\).*\[(.*)\]", line)
        if m:
            (needed if m.group(1) == "NEEDED" else paths).append(m.group(2))
    return needed, paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--sanitize", default="")
    args = ap.parse_args()
    if not os.path.isfile(args.lib):
        print(f"check_jni_library: {args.lib} is missing (was quiver_jni built?)")
        return 1
    name = os.path.basename(args.lib)
    problems = []

    syms = exported(args.nm, args.lib)
    extra = sorted(s for s in syms if not JNI_SYMBOL.match(s))
    if extra:
        problems.append(f"{name} exports symbols that are not JNI entry points:\n"
                        + "\n".join(f"  {s}" for s in extra))
    if "JNI_OnLoad" not in syms:
        problems.append(f"{name} does not export JNI_OnLoad")
    java = sorted(s for s in syms if s.startswith("Java_"))
    if not java:
        problems.append(f"{name} exports no Java_* function")

    needed, paths = dynamic(args.readelf, args.lib)
    sanitizer = SANITIZER_RUNTIMES.get(args.sanitize)
    bad = [n for n in needed if not ALWAYS_ALLOWED.match(n) and not (sanitizer and sanitizer.match(n))]
    if bad:
        problems.append(f"{name} needs libraries beyond libc and libm:\n" + "\n".join(f"  {n}" for n in bad))
    if paths:
        problems.append(f"{name} carries a library search path: {', '.join(paths)}")

    if problems:
        print("\n".join(problems))
        print(f"check_jni_library: {len(problems)} problem(s)")
        return 1
    print(f"check_jni_library: {name} exports {len(syms)} JNI entry points "
          f"({len(java)} Java_*), needs only {', '.join(needed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
