# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""The Scrapy crash test (issue 21): examples/scrapy/crawl.py on hq.scrapy,
killed with SIGKILL at random moments, then run to the end. It must fetch
every page and enqueue every URL once. Pages fetched more than once are
bounded (issue 41): after each kill, the pages the site serves again in a
later run are among the requests in flight at the kill, those that had
reached Scrapy's downloader in the killed run and whose callback's output
was not all taken in (crawl.py's flight.log). Their totals, both those the
site's server answered more than once (served_twice) and those whose
callback ran more than once (repeats), are reported.

Issue 38's test kills a polite crawl (10 hosts, DOWNLOAD_DELAY, one request
at a time per host) while the requests handed out wait in their hosts'
download slots: none may be dead-lettered.

HQ_CRASH_KILLS (default 10) and HQ_CRASH_PAGES (default 2000) size it;
HQ_CRASH_SEED replays a schedule (the seed is printed). The kill moments are
random points of the crawl's progress (pages fetched so far), each hit after
a random extra delay, so kills land in start-up, mid-crawl and while
callbacks run. bench/py_bench.py (--benchmarks=crash) runs the same
schedule on Scrapy's JOBDIR scheduler for comparison."""

import json
import os
import random
import signal
import subprocess
import sys
import time

CRAWL = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                     "scrapy", "crawl.py")
RUN_DEADLINE = 240.0  # Seconds one run of the crawl may take.


def fetched_lines(directory, log="fetched.log"):
    try:
        with open(os.path.join(directory, log), "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def run_with_kills(directory, cmd, rng, goals, window, log="fetched.log"):
    """Runs `cmd` once per entry of `goals`, each a function of the lines in
    `log` at the run's start that gives the line count to wait for; kills
    the run (SIGKILL) at a random moment within `window` seconds after it
    got there, then runs the crawl to its end. Returns the last run's JSON
    summary, the kills made and its exit code."""
    made = 0
    for goal_of in goals:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + RUN_DEADLINE
        goal = goal_of(fetched_lines(directory, log))
        while proc.poll() is None and fetched_lines(directory, log) < goal:
            assert time.monotonic() < deadline, "crawl made no progress"
            time.sleep(0.01)
        time.sleep(rng.uniform(0, window))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            made += 1
        proc.communicate(timeout=RUN_DEADLINE)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=RUN_DEADLINE)
    lines = proc.stdout.decode().strip().splitlines()
    assert lines, "the final run printed no summary"
    return json.loads(lines[-1]), made, proc.returncode


def kill_counts(directory):
    """Per run of crawl.py in `directory` but the last (each killed, or
    ended before its kill), from flight.log: {"in_flight": URLs that
    reached the downloader and were not done with in that run, "again":
    URLs the site served in that run and again in a later one}."""
    runs = {}  # Run -> {event: set of URLs}, in order of appearance.
    with open(os.path.join(directory, "flight.log")) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3:
                continue  # A line the kill cut short.
            run, event, url = parts
            runs.setdefault(run, {}).setdefault(event, set()).add(url)
    events = list(runs.values())
    counts = []
    for k, run in enumerate(events[:-1]):
        later = set()
        for r in events[k + 1:]:
            later |= r.get("served", set())
        counts.append({
            "in_flight": run.get("reached", set()) - run.get("done", set()),
            "again": run.get("served", set()) & later})
    return counts


def crawl_with_kills(directory, pages, kills, seed, extra_args=()):
    """Runs the crawl, killing it `kills` times; returns the last run's JSON
    summary and the kills made."""
    rng = random.Random(seed)
    cmd = [sys.executable, CRAWL, str(directory), "--pages", str(pages),
           *extra_args]
    # Kill points: progress targets spread over the crawl.
    targets = sorted(rng.randrange(0, int(pages * 0.9)) for _ in range(kills))
    goals = [lambda base, t=t: max(t, base + 1) for t in targets]
    return run_with_kills(directory, cmd, rng, goals, 0.3)


def test_scrapy_crawl_survives_sigkill(tmp_path):
    pages = int(os.environ.get("HQ_CRASH_PAGES", "2000"))
    kills = int(os.environ.get("HQ_CRASH_KILLS", "10"))
    seed = int(os.environ.get("HQ_CRASH_SEED", random.randrange(1 << 30)))
    result, made, rc = crawl_with_kills(tmp_path / "crawl", pages, kills, seed)
    print(f"seed {seed}: {made} kills, {json.dumps(result)}")
    print(f"pages the server answered more than once: "
          f"{result['served_twice']} of {pages} ({result['served']} "
          f"answers); callbacks run more than once: {result['repeats']}")
    counts = kill_counts(tmp_path / "crawl")
    print("per kill, fetched again / in flight: " + ", ".join(
        f"{len(c['again'])}/{len(c['in_flight'])}" for c in counts))
    assert made == kills
    assert result["pages"] == pages
    assert result["lost"] == 0, "pages never fetched"
    assert result["enqueued_twice"] == 0, "a URL enqueued twice"
    assert result["enqueued"] == pages
    assert result["dead_letters"] == 0
    assert rc == 0 and result["ok"]
    # The bound: a page served again after a kill was in flight at it.
    assert len(counts) == kills
    for k, c in enumerate(counts):
        assert c["again"] <= c["in_flight"], (
            f"kill {k}: fetched again but not in flight at the kill: "
            f"{sorted(c['again'] - c['in_flight'])[:10]}")
    again = sum(len(c["again"]) for c in counts)
    assert result["served_twice"] <= again


def crawl_killed_early(directory, pages, kills, seed, extra_args, window,
                       log="fetched.log"):
    """Runs the crawl, killing it `kills` times, each run at a random moment
    within `window` seconds of its first new line in `log` (so kills land
    while requests wait in Scrapy's per-host download slots); returns the
    last run's JSON summary and the kills made."""
    rng = random.Random(seed)
    cmd = [sys.executable, CRAWL, str(directory), "--pages", str(pages),
           *extra_args]
    goals = [lambda base: base + 1] * kills
    return run_with_kills(directory, cmd, rng, goals, window, log)


def test_scrapy_issue38_kills_alone_dead_letter_no_request(tmp_path):
    # Issue 38: 100 pages on 10 hosts (the root and its first descendants
    # on one), one download at a time per host, DOWNLOAD_DELAY 0.25 s and
    # 16 requests in the downloader, so that most requests handed out wait
    # in their host's download slot. Each run is killed within 0.2 s of its
    # first callback: the requests waiting then were never sent, and must
    # not use an attempt (HQ_MAX_ATTEMPTS 5). The crawl ends with every
    # page fetched, the start URL stored once, and no dead letter.
    seed = int(os.environ.get("HQ_CRASH_SEED", random.randrange(1 << 30)))
    result, made, rc = crawl_killed_early(
        tmp_path / "crawl", 100, 10, seed,
        ["--hosts", "10", "--delay", "0.25", "--per-host", "1",
         "--concurrency", "16"], 0.2)
    print(f"seed {seed}: {made} kills, {json.dumps(result)}")
    assert made >= 5
    assert result["dead_letters"] == 0, result["dead_reasons"]
    assert result["lost"] == 0, "pages never fetched"
    assert result["enqueued_twice"] == 0, "a URL enqueued twice"
    assert rc == 0 and result["ok"]
