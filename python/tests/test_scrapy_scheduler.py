# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq.scrapy.Scheduler's documented behaviour (doc/guide.md, "Scrapy")
beyond what the crash test covers, each through real Scrapy crawls
(scrapy_spider.py, one subprocess per run) of a site served on 127.0.0.1 by
a server this test starts: priorities, dont_filter and the duplicate filter
across a crash, retries and errbacks, dead letters, and completion only
after a callback's output was stored.

Every wait has a deadline; nothing asserts on elapsed time."""

import collections
import http.server
import json
import os
import pickle
import signal
import subprocess
import sys
import threading

import pytest

import hq
import hq.scrapy

SPIDER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "scrapy_spider.py")
DEADLINE = 60.0  # Seconds one crawl, or any wait, may take.


class Site:
    """An HTTP server on 127.0.0.1 (port 0) in a thread. Every path serves
    an empty page, but those in `behaviour`: 500 (an error response),
    "drop" (the connection closed without a response) or a function called
    before the page is served. `hits` lists the paths requested, in
    order."""

    def __init__(self):
        self.behaviour = {}
        self.hits = []
        self.lock = threading.Lock()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with site.lock:
                    site.hits.append(self.path)
                what = site.behaviour.get(self.path)
                if what == "drop":
                    self.close_connection = True
                    return
                if callable(what):
                    what()
                status = what if isinstance(what, int) else 200
                body = b"<html><body>page</body></html>"
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def count(self):
        with self.lock:
            return collections.Counter(self.hits)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(DEADLINE)


@pytest.fixture
def site():
    s = Site()
    yield s
    s.close()


class Crawl:
    """Runs crawls of `site` on one JOBDIR, each a new process."""

    def __init__(self, tmp_path, site):
        self.dir = tmp_path
        self.site = site
        self.jobdir = str(tmp_path / "job")
        self.runs = 0

    def run(self, **plan):
        """Runs one crawl of the plan (see scrapy_spider.py); returns its
        exit status (-9: it SIGKILLed itself) and its events."""
        self.runs += 1
        events = self.dir / f"events-{self.runs}.jsonl"
        plan = {"base": self.site.base, "jobdir": self.jobdir,
                "events": str(events), **plan}
        plan_path = self.dir / f"plan-{self.runs}.json"
        plan_path.write_text(json.dumps(plan))
        proc = subprocess.run([sys.executable, SPIDER, str(plan_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=DEADLINE)
        self.stderr = proc.stderr.decode(errors="replace")
        if events.exists():
            lines = events.read_text().splitlines()
        else:
            lines = []
        return proc.returncode, [json.loads(line) for line in lines]

    def state(self):
        """The hq group's stats and the URLs stored, once the crawl is
        over."""
        with hq.Db.open(os.path.join(self.jobdir, "hq"),
                        create_if_missing=False) as db:
            queue = db.open_queue(hq.scrapy.QUEUE)
            urls = collections.Counter(
                pickle.loads(m.payload)["url"][len(self.site.base):]
                for m in queue.scan())
            return queue.group(hq.scrapy.GROUP).stats(), urls


@pytest.fixture
def crawl(tmp_path, site):
    return Crawl(tmp_path, site)


def called(events, kind="callback"):
    return [e["path"] for e in events if e["event"] == kind]


def closed_stats(events, stderr):
    closed = [e for e in events if e["event"] == "closed"]
    assert len(closed) == 1, "the crawl did not close:\n" + stderr
    assert closed[0]["reason"] == "finished"
    return closed[0]["stats"]


def assert_all_done(stats):
    """Nothing left to fetch, nothing in flight or to deliver again: the
    next run would fetch nothing."""
    assert (stats.backlog, stats.in_flight, stats.redelivery,
            stats.delayed) == (0, 0, 0, 0)


@pytest.mark.parametrize("style", ["yield", "request", "list",
                                   "async_request", "async_list"])
def test_a_request_is_stored_before_the_callback_that_gave_it_completes(
        crawl, site, tmp_path, style):
    # The root's callback gives /child (yielded, or returned alone or in a
    # list, by a plain or an async def callback); a spider middleware kills
    # the crawl as /child goes by, before the engine enqueues it. The root
    # must not have been completed: it comes back and gives /child again.
    plan = dict(start=[["/", 0, False]],
                links={"/": [["/child", 0, False]]},
                returns={"/": style},
                kill_in_output={"/child": str(tmp_path / "killed")})
    rc, events = crawl.run(**plan)
    assert rc == -signal.SIGKILL, crawl.stderr
    assert called(events) == ["/"]

    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert called(events) == ["/", "/child"], "/child was lost"
    assert site.count() == {"/": 2, "/child": 1}
    closed_stats(events, crawl.stderr)
    group, urls = crawl.state()
    assert_all_done(group)
    assert urls == {"/": 1, "/child": 1}
