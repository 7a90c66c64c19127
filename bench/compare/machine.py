"""What the comparison runs on: the machine, the library versions, and how
many CPUs this process can really use.

os.cpu_count() counts the machine's CPUs, not the ones this process may run
on: a CPU affinity mask (taskset, a container's cpuset) or a cgroup CPU
quota (docker --cpus) can leave fewer. A "2 threads" figure measured on one
usable CPU is two threads taking turns, so the comparison checks both before
it reports a figure as a 2-thread one.
"""
import math
import os
import platform
import resource
import time


def _cgroup_quota():
    """The cgroup CPU quota in CPUs (cgroup v2 cpu.max, else v1
    cfs_quota/cfs_period), or None when there is none or it cannot be read."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        rel = parts[2].lstrip("/")
        if parts[0] == "0":  # cgroup v2: one unified hierarchy
            path = os.path.join("/sys/fs/cgroup", rel, "cpu.max")
            try:
                quota, period = open(path).read().split()[:2]
            except (OSError, ValueError):
                continue
            if quota == "max":
                return None
            return int(quota) / int(period)
        if "cpu" in parts[1].split(","):  # cgroup v1
            for base in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
                try:
                    quota = int(open(os.path.join(base, rel, "cpu.cfs_quota_us")).read())
                    period = int(open(os.path.join(base, rel, "cpu.cfs_period_us")).read())
                except (OSError, ValueError):
                    continue
                return None if quota <= 0 else quota / period
    return None


def cpus():
    """{"online": CPUs of the machine, "affinity": the CPUs this process may
    run on (sorted list), "quota": cgroup quota in CPUs or None, "usable":
    how many threads can really run at once}."""
    online = os.cpu_count() or 1
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux: trust cpu_count
        affinity = list(range(online))
    quota = _cgroup_quota()
    usable = len(affinity)
    if quota is not None:
        usable = min(usable, max(1, math.ceil(quota - 1e-9)))
    return {"online": online, "affinity": affinity, "quota": quota, "usable": usable}


def _spin(deadline):
    while time.time() < deadline:
        pass


def parallelism(n, seconds=0.5):
    """The CPUs n busy processes really got over `seconds` of wall time:
    their CPU time divided by the wall time. Close to n on an idle machine;
    lower when other work competes for the CPUs, which affinity and quota
    cannot show."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    procs = [ctx.Process(target=_spin, args=(t0 + seconds,)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu / wall if wall > 0 else 0.0


def check(n):
    """cpus() plus what n busy processes really got and the load average."""
    c = cpus()
    c["measured"] = round(parallelism(n), 2)
    c["loadavg"] = round(os.getloadavg()[0], 2)
    return c


def cpus_text(c):
    aff = c["affinity"]
    ranges, start = [], None
    for i, a in enumerate(aff):  # 0,1,2,5 -> "0-2,5"
        if start is None:
            start = a
        if i + 1 == len(aff) or aff[i + 1] != a + 1:
            ranges.append(f"{start}" if start == a else f"{start}-{a}")
            start = None
    quota = "none" if c["quota"] is None else f"{c['quota']:g} CPUs"
    text = (f"{c['online']} online, affinity {{{','.join(ranges)}}} ({len(aff)}), "
            f"cgroup quota {quota}: {c['usable']} usable")
    if c.get("measured") is not None:
        text += (f"; {c['usable']} busy processes got {c['measured']:.2f} CPUs, "
                 f"load average {c.get('loadavg', 0):.2f}")
    return text


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}"


def versions():
    from importlib import metadata
    out = {}
    for p in ("quiver", "pyarrow", "duckdb", "vortex-data", "polars", "numpy"):
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out
