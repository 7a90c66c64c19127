"""Peak memory of quiver.write on a bench/compare dataset, above the table.

    PYTHONPATH=<package> python3 bench/write_rss.py lineitem|flights [THREADS]

The dataset is loaded first (bench/compare/datasets.py); the process's
high-water mark is then reset to its resident size (/proc/self/clear_refs)
and the table written (durable=False; THREADS as quiver.write takes them,
default SCAN_SYNC: on the calling thread). Prints the high-water mark above
the resident size before the write. Linux only. To compare two builds, run
each in its own process, alternating (the high-water mark is per process)."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import quiver  # noqa: E402
from compare import datasets  # noqa: E402


def status_mib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def main():
    name = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else quiver.SCAN_SYNC
    table = getattr(datasets, name)(*([1] if name == "lineitem" else [])).table
    with tempfile.TemporaryDirectory() as d:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the high-water mark starts again from the resident size
        base = status_mib("VmRSS")
        quiver.write(table, os.path.join(d, "w.qvr"), threads=threads, durable=False)
        peak = status_mib("VmHWM")
    print(f"{name} threads={threads}: write peak {peak - base:.0f} MiB above the table "
          f"({base:.0f} MiB resident before)")


if __name__ == "__main__":
    main()
