#!/usr/bin/python3
# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""Python binding and Scrapy scheduler benchmarks (issue 21), not in the
default test suite:

  PYTHONPATH=build/python /usr/bin/python3 bench/py_bench.py build [--num N]
      [--pages 5000] [--crash_pages 2000] [--kills 10] [--seed 1]
      [--rounds R] [--benchmarks=put,put_batch,put_many,claim_complete,crawl,
      crash]

  put             hq.Queue.put of --num 100-byte messages, one thread, next to
                  hq_bench's C++ `put` of the same messages in the same run
                  (ratio python/C++).
  put_batch       put_batch of 100 payloads per call, against hq_bench
                  --batch=100.
  put_many        put_many of 100 (payload, topic, priority) tuples per call,
                  against hq_bench --batch=100.
  claim_complete  claim(max=--claim_batch) + complete(list) of a filled queue
                  until drained, against hq_bench's claim_complete.
  crawl           examples/scrapy/crawl.py on --pages pages (5000; no
                  delay, CONCURRENT_REQUESTS 8) with hq.scrapy, Scrapy's
                  memory scheduler and its JOBDIR disk scheduler: pages/s of
                  each (wall time, with start-up), the CPU seconds the crawl
                  process used (user+sys, its site's server threads
                  included: steadier than wall time on a loaded machine),
                  and each one's rate over the memory scheduler's, by wall
                  and by CPU time.
  crash           the crash test's kill schedule (python/tests/
                  test_scrapy_crash.py, --kills kills of a crawl of
                  --crash_pages pages, --seed) on hq.scrapy and on Scrapy's
                  JOBDIR scheduler: pages lost by each, callbacks run more
                  than once, and (hq) the pages fetched again after each
                  kill against the requests in flight at it.

The ratio lines (put, put_batch, put_many, claim_complete) run --rounds
rounds of the Python and the C++ side, in alternating order (a loaded
machine drifts), and print each round's ratio and their median. Both sides
run with Abseil's Mutex deadlock detection off, as hq_bench does by default
(--mutex_deadlock_detection turns it on in both), and hq_bench runs no
peer. Both start with a warm heap: before its first line this process
does what hq_bench does before its first workload (WarmHeap in
hq_bench.cc): glibc's malloc keeps freed memory, and two write buffers and
16 MiB are allocated in LevelDB's arena block size, touched and freed, so
that neither side's memtables page-fault their memory in (about 7,200
faults in a put line of 200,000 messages, about a fifth of its time on
this machine's VM). --cold_heap skips it, for the Python side's figures
as a process that has not reused its memory yet gets them.
"""

import argparse
import ctypes
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import hq

HERE = os.path.dirname(os.path.abspath(__file__))
CRAWL = os.path.join(HERE, "..", "examples", "scrapy", "crawl.py")


def cxx(args, name, extra=()):
    out = subprocess.run(
        [os.path.join(args.build, "bench", "hq_bench"), f"--benchmarks={name}",
         f"--num={args.num}", "--value_size=100", "--peers=none",
         f"--mutex_deadlock_detection={str(args.mutex_deadlock_detection).lower()}",
         *extra],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    m = re.search(rf"^{name}\s*:.*?([\d.]+) msgs/s", out, re.M)
    return float(m.group(1))


def warm_heap(nbytes):
    """hq_bench's WarmHeap in this process: malloc's M_TRIM_THRESHOLD at
    its maximum (freed memory stays in the heap), then `nbytes` allocated in
    4 KiB blocks (LevelDB's arena block size), each touched, and freed."""
    libc = ctypes.CDLL(None, use_errno=True)
    m_trim_threshold = -1  # <malloc.h>
    if libc.mallopt(m_trim_threshold, 2**31 - 1) != 1:
        sys.exit("mallopt(M_TRIM_THRESHOLD) failed: run with --cold_heap")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    block = 4096
    blocks = []
    for _ in range(nbytes // block):
        p = libc.malloc(block)
        if not p:
            sys.exit("out of memory warming the heap: run with --cold_heap")
        ctypes.memset(p, 1, block)
        blocks.append(p)
    for p in blocks:
        libc.free(p)


def line(args, name, python, cxx_rate):
    """Runs python() and cxx_rate() --rounds times, alternating which goes
    first; prints the medians and the median of the rounds' ratios."""
    rates, cxx_rates, ratios = [], [], []
    for r in range(args.rounds):
        if r % 2 == 0:
            rates.append(python())
            cxx_rates.append(cxx_rate())
        else:
            cxx_rates.append(cxx_rate())
            rates.append(python())
        ratios.append(rates[-1] / cxx_rates[-1])
    print(f"{name:16}: {statistics.median(rates):12.0f} msgs/s  "
          f"C++ {statistics.median(cxx_rates):12.0f} msgs/s  "
          f"python/C++ {statistics.median(ratios):.2f} "
          f"({', '.join(f'{x:.2f}' for x in ratios)})", flush=True)


def bench_put(args, batch, rows=False):
    with tempfile.TemporaryDirectory() as d, hq.Db.open(d) as db:
        q = db.create_queue("q")
        payload = b"x" * 100
        start = time.perf_counter()
        if batch == 1:
            for _ in range(args.num):
                q.put(payload)
        elif not rows:
            msgs = [payload] * batch
            for _ in range(args.num // batch):
                q.put_batch(msgs)
        else:
            msgs = [(payload, "t", 0)] * batch
            for _ in range(args.num // batch):
                q.put_many(msgs, fields=("payload", "topic", "priority"))
        return args.num / (time.perf_counter() - start)


def bench_claim(args):
    with tempfile.TemporaryDirectory() as d, hq.Db.open(d) as db:
        q = db.create_queue("q")
        for _ in range(args.num // 100):
            q.put_batch([b"x" * 100] * 100)
        g = q.group("g")
        n = 0
        start = time.perf_counter()
        while True:
            tasks = g.claim(args.claim_batch)
            if not tasks:
                break
            g.complete(tasks)
            n += len(tasks)
        return n / (time.perf_counter() - start)


def crawl_times(pages, scheduler):
    """(wall seconds, CPU seconds) of one crawl of `pages` pages."""
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, CRAWL, d, "--pages",
                                 str(pages), "--scheduler", scheduler],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            sys.exit(f"the {scheduler} crawl failed ({proc.returncode})")
        return wall, usage.ru_utime + usage.ru_stime


def load_crash_test():
    path = os.path.join(HERE, "..", "python", "tests", "test_scrapy_crash.py")
    spec = importlib.util.spec_from_file_location("crash", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--num", type=int, default=200000)
    p.add_argument("--claim_batch", type=int, default=100)
    p.add_argument("--pages", type=int, default=5000)
    p.add_argument("--crash_pages", type=int, default=2000)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mutex_deadlock_detection", action="store_true")
    p.add_argument("--cold_heap", action="store_true",
                   help="do not warm this process's heap as hq_bench does")
    p.add_argument(
        "--benchmarks",
        default="put,put_batch,put_many,claim_complete,crawl,crash")
    args = p.parse_args()
    if hasattr(hq, "set_mutex_deadlock_detection"):
        hq.set_mutex_deadlock_detection(args.mutex_deadlock_detection)
    elif not args.mutex_deadlock_detection:
        sys.exit("this hq keeps Abseil's deadlock detection on: pass "
                 "--mutex_deadlock_detection to measure both sides with it")
    if not args.cold_heap:
        # hq_bench's: two write buffers (hq.Db.open's default, 64 MiB) and
        # 16 MiB.
        warm_heap(2 * (64 << 20) + (16 << 20))
    for b in args.benchmarks.split(","):
        if b == "put":
            line(args, "put", lambda: bench_put(args, 1),
                 lambda: cxx(args, "put"))
        elif b == "put_batch":
            line(args, "put_batch", lambda: bench_put(args, 100),
                 lambda: cxx(args, "put", ["--batch=100"]))
        elif b == "put_many":
            line(args, "put_many", lambda: bench_put(args, 100, rows=True),
                 lambda: cxx(args, "put", ["--batch=100"]))
        elif b == "claim_complete":
            line(args, "claim_complete", lambda: bench_claim(args),
                 lambda: cxx(args, "claim_complete",
                             [f"--claim_batch={args.claim_batch}"]))
        elif b == "crawl":
            times = {}
            for sched in ("memory", "hq", "jobdir"):
                times[sched] = crawl_times(args.pages, sched)
            wall_m, cpu_m = times["memory"]
            for sched, (wall, cpu) in times.items():
                print(f"crawl_{sched:10}: {args.pages / wall:8.1f} pages/s "
                      f"({wall:.1f} s with start-up, CPU {cpu:.1f} s)  "
                      f"/memory: wall {wall_m / wall:.2f} CPU "
                      f"{cpu_m / cpu:.2f}", flush=True)
        elif b == "crash":
            crash = load_crash_test()
            for sched in ("hq", "jobdir"):
                with tempfile.TemporaryDirectory() as d:
                    r, made, _ = crash.crawl_with_kills(
                        os.path.join(d, "c"), args.crash_pages, args.kills,
                        args.seed, ["--scheduler", sched])
                    kills = crash.kill_counts(os.path.join(d, "c"))
                bound = ""
                if sched == "hq":
                    again = sum(len(k["again"]) for k in kills)
                    flight = sum(len(k["in_flight"]) for k in kills)
                    over = sum(1 for k in kills
                               if not k["again"] <= k["in_flight"])
                    each = ", ".join(f"{len(k['again'])}/{len(k['in_flight'])}"
                                     for k in kills)
                    bound = (f"; fetched again after a kill {again}, in "
                             f"flight at the kills {flight}, kills over the "
                             f"bound {over}; per kill, again/in flight: "
                             f"{each}")
                print(f"crash_{sched:10}: seed {args.seed}, {made} kills: "
                      f"lost {r['lost']} of {r['pages']} pages, "
                      f"{r['repeats']} callbacks run more than once{bound}",
                      flush=True)
        else:
            sys.exit(f"unknown benchmark {b}")


if __name__ == "__main__":
    main()
