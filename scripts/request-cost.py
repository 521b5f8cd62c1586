#!/usr/bin/env python3
"""Wall time and daemon CPU per FUSE request, side by side, for single kinds of request.

Usage: scripts/request-cost.py [--rounds R] [--only W,...] DIR[=PID] [DIR[=PID] ...]

Each DIR (a chibifs mount's /shared, a bindfs mount, a plain directory) gets the same small
workloads, the DIRs in rotating order, R rounds (default 7). With =PID (the daemon serving DIR),
the daemon's CPU time (utime+stime from /proc/PID/stat, in clock ticks, so summed over all rounds)
per request is printed beside the wall time (the median round). Workloads:
  missing   lstat of a name that does not exist (one LOOKUP each, answered ENOENT)
  lookup    lstat of 2,000 files after their entries expired (one LOOKUP each)
  getattr   pwrite of 1 byte, then fstat (a WRITE, then a GETATTR: the write dropped the attributes)
  openread  open, read, close of 2,000 small files (OPEN and RELEASE; READ when pages are not kept)
  listdir   listing a directory of 2,000 names (OPENDIR, READDIRs, RELEASEDIR)
bench.sh times whole programs; op-latency.py single operations; this adds the daemon's CPU,
which is what decides a parallel client's time (git status preloads with up to 20 threads).
"""
import argparse
import os
import statistics
import time

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
FILES = 2000


def daemon_cpu_ns(pid):
    if pid is None:
        return 0
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_NS


def setup(work):
    os.makedirs(work, exist_ok=True)
    for i in range(FILES):
        with open(os.path.join(work, "f%d" % i), "wb") as f:
            f.write(b"hello small\n")


def missing(work):
    p, n = os.path.join(work, "no-such-name"), 20000
    for _ in range(n):
        try:
            os.lstat(p)
        except FileNotFoundError:
            pass
    return n


def lookup(work):
    for i in range(FILES):
        os.lstat(os.path.join(work, "f%d" % i))
    return FILES


def getattr_(work, n=3000):
    fd = os.open(os.path.join(work, "ga"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        for _ in range(n):
            os.pwrite(fd, b"x", 0)
            os.fstat(fd)
    finally:
        os.close(fd)
    return 2 * n


def openread(work):
    for i in range(FILES):
        fd = os.open(os.path.join(work, "f%d" % i), os.O_RDONLY)
        os.read(fd, 100)
        os.close(fd)
    return 2 * FILES


def listdir(work, n=50):
    for _ in range(n):
        os.listdir(work)
    return n


WORKLOADS = {"missing": missing, "lookup": lookup, "getattr": getattr_, "openread": openread, "listdir": listdir}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("targets", nargs="+", metavar="DIR[=PID]")
    a = ap.parse_args()
    targets = []
    for t in a.targets:
        d, _, pid = t.partition("=")
        if not os.path.isdir(d):
            ap.error("%s is not a directory" % d)
        # one directory per target: targets may be mounts of one store
        work = os.path.join(d, "request-cost.%d.%d" % (os.getpid(), len(targets)))
        targets.append((t, work, int(pid) if pid else None))
    for _, work, _ in targets:
        setup(work)
    try:
        for name in a.only.split(","):
            fn = WORKLOADS[name]
            wall = {t: [] for t, _, _ in targets}
            cpu = {t: 0 for t, _, _ in targets}
            requests = {t: 0 for t, _, _ in targets}
            for r in range(a.rounds):
                for k in range(len(targets)):
                    t, work, pid = targets[(r + k) % len(targets)]
                    if name == "lookup":
                        time.sleep(1.1)  # the kernel keeps entries for entry_timeout (1 s)
                    c0, t0 = daemon_cpu_ns(pid), time.perf_counter_ns()
                    n = fn(work)
                    t1, c1 = time.perf_counter_ns(), daemon_cpu_ns(pid)
                    wall[t].append((t1 - t0) / n / 1000)
                    cpu[t] += c1 - c0
                    requests[t] += n
            for t, _, pid in targets:
                line = "%-9s %-40s wall %8.2f us" % (name, t, statistics.median(wall[t]))
                if pid is not None:
                    line += "   daemon cpu %7.2f us" % (cpu[t] / requests[t] / 1000)
                print(line + " per %s" % ("listing" if name == "listdir" else "request"))
    finally:
        for _, work, _ in targets:
            for f in os.listdir(work):
                os.unlink(os.path.join(work, f))
            os.rmdir(work)


if __name__ == "__main__":
    main()
