#!/usr/bin/env python3
"""Median latency of single file operations, per directory, side by side.

Usage: scripts/op-latency.py [--files N] [--rounds R] DIR [DIR ...]

Each DIR (a chibifs mount's /shared, a bindfs mount, a plain directory) gets R rounds of N small
files: create (open O_CREAT|O_TRUNC), write, close, stat, open for reading, read, close, unlink,
each timed on its own, the DIRs in alternation. It prints the median of every operation in
microseconds, per DIR. bench.sh times whole workloads; this tells which operation a gap is in.
Pin client and daemons to one CPU (taskset) to see CPU cost without cross-CPU wake-ups.
"""
import argparse
import os
import statistics
import time

OPS = ["create", "write", "close", "stat", "open", "read", "close-read", "unlink"]


def round_in(base, files):
    d = os.path.join(base, "op-latency.%d" % os.getpid())
    os.mkdir(d)
    t = {op: [] for op in OPS}
    now = time.perf_counter_ns
    names = [os.path.join(d, "f%d" % i) for i in range(files)]
    for p in names:
        t0 = now(); fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        t1 = now(); os.write(fd, b"hello small\n")
        t2 = now(); os.close(fd)
        t3 = now()
        t["create"].append(t1 - t0); t["write"].append(t2 - t1); t["close"].append(t3 - t2)
    for p in names:
        t0 = now(); os.lstat(p)
        t1 = now(); fd = os.open(p, os.O_RDONLY)
        t2 = now(); os.read(fd, 100)
        t3 = now(); os.close(fd)
        t4 = now()
        t["stat"].append(t1 - t0); t["open"].append(t2 - t1)
        t["read"].append(t3 - t2); t["close-read"].append(t4 - t3)
    for p in names:
        t0 = now(); os.unlink(p)
        t["unlink"].append(now() - t0)
    os.rmdir(d)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    for d in a.dirs:
        if not os.path.isdir(d):
            ap.error("%s is not a directory" % d)
    samples = {d: {op: [] for op in OPS} for d in a.dirs}
    for _ in range(a.rounds):  # the directories in alternation, as bench.sh does
        for d in a.dirs:
            for op, v in round_in(d, a.files).items():
                samples[d][op].extend(v)
    width = max(len(d) for d in a.dirs)
    print("us (median)".ljust(width) + "".join(op.rjust(11) for op in OPS))
    for d in a.dirs:
        print(d.ljust(width) + "".join(("%.1f" % (statistics.median(samples[d][op]) / 1000)).rjust(11) for op in OPS))


if __name__ == "__main__":
    main()
