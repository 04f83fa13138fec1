# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq.scrapy.Scheduler's documented behaviour (doc/guide.md, "Scrapy")
beyond what the crash test covers, each through real Scrapy crawls
(scrapy_spider.py, one subprocess per run) of a site served on 127.0.0.1 by
a server this test starts: priorities, dont_filter and the duplicate filter
across a crash, retries and errbacks, dead letters, and completion only
after a callback's output was stored; and, without a crawl, the priority
mapping and the serialization round trip.

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
import time

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


def test_higher_priorities_are_fetched_first(crawl, site, tmp_path):
    # The root yields a gate (the highest priority) and then children of
    # mixed priorities. One request at a time: the gate's response waits
    # until the root's callback has yielded everything, so every child is
    # waiting in hq when the first of them is handed out.
    priorities = [0, -5, 7, 3, -16, 14, -1, 9]
    enqueued = tmp_path / "enqueued"
    gate = threading.Event()

    def hold_gate():
        deadline = time.monotonic() + DEADLINE
        while not enqueued.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        if enqueued.exists():
            gate.set()

    site.behaviour["/gate"] = hold_gate
    children = [[f"/p{p}", p, False] for p in priorities]
    rc, events = crawl.run(
        start=[["/", 0, False]],
        links={"/": [["/gate", 15, False]] + children},
        mark_after_output={"/": str(enqueued)},
        settings={"CONCURRENT_REQUESTS": 1})
    assert rc == 0, crawl.stderr
    assert gate.is_set(), "the root's callback never finished its output"
    assert site.hits == ["/", "/gate"] + [
        f"/p{p}" for p in sorted(priorities, reverse=True)]
    closed_stats(events, crawl.stderr)
    assert_all_done(crawl.state()[0])


def test_dont_filter_requests_are_enqueued_again_and_duplicates_dropped_across_a_crash(
        crawl, site):
    # First run: the start request twice, /a twice, /b twice with
    # dont_filter; it ends by SIGKILL once idle, so nothing is written at
    # close.
    rc, events = crawl.run(
        start=[["/", 0, False], ["/", 0, False]],
        links={"/": [["/a", 0, False], ["/a", 0, False],
                     ["/b", 0, True], ["/b", 0, True]]},
        die_when_idle=True)
    assert rc == -signal.SIGKILL, crawl.stderr
    assert site.count() == {"/": 1, "/a": 1, "/b": 2}
    assert sorted(called(events)) == ["/", "/a", "/b", "/b"]

    # After the crash: / and /a are still filtered, /b with dont_filter is
    # fetched again, /c is new.
    rc, events = crawl.run(
        start=[["/", 0, False], ["/a", 0, False], ["/b", 0, True],
               ["/c", 0, False]])
    assert rc == 0, crawl.stderr
    assert site.count() == {"/": 1, "/a": 1, "/b": 3, "/c": 1}
    assert sorted(called(events)) == ["/b", "/c"]
    stats = closed_stats(events, crawl.stderr)
    assert stats["dupefilter/filtered"] == 2
    assert stats["scheduler/enqueued"] == 2
    group, urls = crawl.state()
    assert_all_done(group)
    assert urls == {"/": 1, "/a": 1, "/b": 3, "/c": 1}


def test_failed_downloads_are_retried_then_errback_runs_and_they_are_dead_lettered(
        crawl, site):
    site.behaviour["/500"] = 500
    site.behaviour["/drop"] = "drop"
    site.behaviour["/404"] = 404
    plan = dict(start=[["/", 0, False]],
                links={"/": [["/500", 0, False], ["/drop", 0, False],
                             ["/404", 0, False]]},
                settings={"RETRY_TIMES": 3})
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    # RetryMiddleware: the first try and RETRY_TIMES retries, then the
    # errback once, with the last failure. A 404 is not retried.
    assert site.count() == {"/": 1, "/500": 4, "/drop": 4, "/404": 1}
    assert called(events) == ["/"]
    errbacks = {e["path"]: e["failure"] for e in events
                if e["event"] == "errback"}
    assert errbacks == {"/500": "HttpError",
                        "/drop": "ResponseNeverReceived",
                        "/404": "HttpError"}
    assert len(called(events, "errback")) == 3
    stats = closed_stats(events, crawl.stderr)
    assert stats["retry/count"] == 6
    assert stats["retry/max_reached"] == 2
    # Each retry is a new request (dont_filter), stored before the one it
    # replaces is completed. The last tries of /500 and /drop failed over
    # and over: their errbacks ran, then they were dead-lettered. /404
    # failed once: its errback ran and it was completed.
    assert stats["hq/rejected"] == 2
    assert stats["hq/dead_letters"] == 2
    group, urls = crawl.state()
    assert_all_done(group)
    assert group.dead_letters == 2
    assert urls == {"/": 1, "/500": 4, "/drop": 4, "/404": 1}
    dead = hq.scrapy.dead_letters(crawl.jobdir)
    assert sorted(r["url"] for _, r in dead) == [site.base + "/500",
                                                 site.base + "/drop"]
    for letter, request in dead:
        assert letter.reason == "rejected" and letter.attempts == 1
        assert request["meta"]["retry_times"] == 3

    # Run again: nothing is delivered again, nothing fetched.
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert site.count() == {"/": 1, "/500": 4, "/drop": 4, "/404": 1}
    assert called(events) == [] and called(events, "errback") == []
    closed_stats(events, crawl.stderr)

    # Requeued by the hq tool, they are fetched again, with their retry
    # count (so each fails once more and goes back to the dead letters).
    cli = os.environ.get("HQ_CLI")
    assert cli, "HQ_CLI names the hq tool (meson test sets it)"
    out = subprocess.run([cli, "--db=" + os.path.join(crawl.jobdir, "hq"),
                          "dead", hq.scrapy.QUEUE, hq.scrapy.GROUP,
                          "--requeue"],
                         capture_output=True, text=True, timeout=DEADLINE)
    assert out.returncode == 0, out.stderr
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert site.count() == {"/": 1, "/500": 5, "/drop": 5, "/404": 1}
    assert closed_stats(events, crawl.stderr)["hq/dead_letters"] == 2


def test_a_request_that_kills_the_crawl_every_time_ends_in_dead_letters(
        crawl, site):
    # /poison's callback SIGKILLs the crawl. With HQ_MAX_ATTEMPTS = 3 it is
    # sent three times (one run each), then dead-lettered by the fourth
    # run's claim (its fourth hand-out), which ends normally. (It is the
    # only request: any other could be in flight at every kill too.)
    plan = dict(start=[["/poison", 0, False]],
                kill_in_callback=["/poison"],
                settings={"HQ_MAX_ATTEMPTS": 3})
    codes = []
    events = []
    while len(codes) < 5 and (not codes or codes[-1] != 0):
        rc, events = crawl.run(**plan)
        codes.append(rc)
    assert codes == [-signal.SIGKILL] * 3 + [0], crawl.stderr
    assert site.count() == {"/poison": 3}
    stats = closed_stats(events, crawl.stderr)
    assert stats["hq/dead_letters"] == 1 and stats["hq/rejected"] == 1
    # Dead letters are an error of the crawl, in its log and its stats.
    assert stats["log_count/ERROR"] >= 1
    assert "1 requests are dead letters" in crawl.stderr

    dead = hq.scrapy.dead_letters(crawl.jobdir)
    assert len(dead) == 1
    letter, request = dead[0]
    assert request["url"] == site.base + "/poison"
    assert letter.attempts == 4  # Hand-outs: three sent, the fourth not.
    assert letter.reason == "rejected"
    group, urls = crawl.state()
    assert_all_done(group)
    assert group.dead_letters == 1
    assert urls == {"/poison": 1}


def test_issue38_a_request_killed_before_it_is_sent_uses_no_attempt(
        crawl, site):
    # /wait SIGKILLs the crawl as it reaches the downloader, before it is
    # sent (a kill while it waits in its host's download slot), four runs
    # in a row. With HQ_MAX_ATTEMPTS = 2 it is not dead-lettered: it was
    # never sent. The fifth run, without the kill, fetches it.
    plan = dict(start=[["/wait", 0, False]], kill_when_queued=["/wait"],
                settings={"HQ_MAX_ATTEMPTS": 2})
    for _ in range(4):
        rc, events = crawl.run(**plan)
        assert rc == -signal.SIGKILL, crawl.stderr
        assert called(events, "reached") == ["/wait"]
    assert site.count() == {}
    del plan["kill_when_queued"]
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert called(events) == ["/wait"]
    assert site.count() == {"/wait": 1}
    stats = closed_stats(events, crawl.stderr)
    assert stats["hq/dead_letters"] == 0
    assert stats["hq/redelivered"] == 1
    group, urls = crawl.state()
    assert_all_done(group)
    assert group.dead_letters == 0
    assert urls == {"/wait": 1}


def test_issue38_a_start_request_is_stored_once_across_runs(crawl, site,
                                                            tmp_path):
    # Scrapy requests start_urls with dont_filter at every start. The first
    # run is killed once the root's output was stored; the second does not
    # store (nor fetch) the root again beyond the delivery it owes.
    plan = dict(start=[["/", 0, True]], links={"/": [["/a", 0, False]]},
                kill_after_output={"/": str(tmp_path / "killed")})
    rc, events = crawl.run(**plan)
    assert rc == -signal.SIGKILL, crawl.stderr
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert site.count() == {"/": 2, "/a": 1}
    closed_stats(events, crawl.stderr)
    assert crawl.state()[1] == {"/": 1, "/a": 1}
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert site.count() == {"/": 2, "/a": 1}

    # HQ_START_ONCE = False: every run stores and fetches it again.
    plan["settings"] = {"HQ_START_ONCE": False}
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert site.count() == {"/": 3, "/a": 1}
    assert crawl.state()[1] == {"/": 2, "/a": 1}


def test_issue38_host_max_in_flight_hands_out_one_request_of_a_host_at_a_time(
        crawl, site):
    # The root yields six requests of its host. Scrapy would download up to
    # 8 at once (CONCURRENT_REQUESTS_PER_DOMAIN); with
    # HQ_HOST_MAX_IN_FLIGHT = 1 the next is handed out only once the one
    # before is done with (its callback ran): downloads and callbacks
    # alternate.
    children = [[f"/c{i}", 0, False] for i in range(6)]
    plan = dict(start=[["/", 0, False]], links={"/": children},
                settings={"HQ_HOST_MAX_IN_FLIGHT": 1})
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    order = [(e["event"], e["path"]) for e in events
             if e["event"] in ("reached", "callback")]
    expected = []
    for path in ["/"] + [c[0] for c in children]:
        expected += [("reached", path), ("callback", path)]
    assert order == expected
    closed_stats(events, crawl.stderr)
    assert_all_done(crawl.state()[0])

    # Without it, Scrapy downloads several at once.
    crawl.jobdir = str(crawl.dir / "job2")
    plan["settings"] = {}
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    order = [e["event"] for e in events
             if e["event"] in ("reached", "callback")]
    assert order[2:4] == ["reached", "reached"]


def test_a_request_is_completed_only_after_its_output_was_stored(
        crawl, site, tmp_path):
    # The root's callback yields /c1 and /c2, then the crawl is killed
    # before the root completes (once: the marker says it happened).
    plan = dict(start=[["/", 0, False]],
                links={"/": [["/c1", 0, False], ["/c2", 0, False]]},
                kill_after_output={"/": str(tmp_path / "killed")})
    rc, events = crawl.run(**plan)
    assert rc == -signal.SIGKILL, crawl.stderr
    assert called(events)[0] == "/"

    # The root comes back and is fetched again; the children it yields
    # again were stored before the kill: duplicates, with the start request.
    rc, events = crawl.run(**plan)
    assert rc == 0, crawl.stderr
    assert "/" in called(events)
    assert site.count()["/"] == 2
    assert site.count()["/c1"] >= 1 and site.count()["/c2"] >= 1
    stats = closed_stats(events, crawl.stderr)
    assert stats["hq/redelivered"] >= 1
    assert stats["dupefilter/filtered"] == 3
    group, urls = crawl.state()
    assert_all_done(group)
    assert urls == {"/": 1, "/c1": 1, "/c2": 1}


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


# ---- Units: the scheduler without a crawl


class UnitSpider:
    """Made a scrapy.Spider in `scheduler` (Scrapy is imported lazily)."""

    def parse_item(self, response, n=0):
        pass

    def failed(self, failure):
        pass


@pytest.fixture
def scheduler(tmp_path):
    """Opens hq.scrapy.Scheduler on tmp_path/hq for a real crawler and
    spider; call it with settings. Closed at the end."""
    import scrapy
    from scrapy.utils.test import get_crawler

    opened = []

    def open_scheduler(**settings):
        spidercls = type("Unit", (UnitSpider, scrapy.Spider),
                         {"name": "unit"})
        crawler = get_crawler(spidercls, {
            "HQ_DIR": str(tmp_path / "hq"),
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7", **settings})
        crawler.spider = spidercls.from_crawler(crawler)
        s = hq.scrapy.Scheduler.from_crawler(crawler)
        s.open(crawler.spider)
        opened.append(s)
        return s

    yield open_scheduler
    for s in opened:
        s.close("finished")


def test_priorities_map_onto_levels_in_order_and_saturate(scheduler):
    s = scheduler()
    assert s.levels == 32
    assert [s._level(p) for p in (-100, -17, -16, -1, 0, 1, 15, 16, 100)] == [
        0, 0, 0, 15, 16, 17, 31, 31, 31]
    levels = [s._level(p) for p in range(-40, 41)]
    assert levels == sorted(levels)
    s.close("finished")

    # HQ_PRIORITIES sizes a new queue only; an existing one keeps its levels.
    s = scheduler(HQ_PRIORITIES=8)
    assert s.levels == 32


def test_priority_levels_follow_hq_priorities(tmp_path, scheduler):
    s = scheduler(HQ_PRIORITIES=4)
    assert s.levels == 4
    assert [s._level(p) for p in (-3, -2, -1, 0, 1, 2)] == [0, 0, 1, 2, 3, 3]


def test_a_request_comes_back_as_it_was_enqueued_also_after_a_reopen(
        scheduler):
    import scrapy

    s = scheduler()
    spider = s.spider
    request = scrapy.Request(
        "http://127.0.0.1:1/item?x=1", method="POST", body=b"\x00body",
        headers={"X-Test": "1"}, cookies={"c": "v"}, priority=3,
        meta={"depth": 2, "k": [1, "a"]}, cb_kwargs={"n": 7},
        callback=spider.parse_item, errback=spider.failed, flags=["f"],
        dont_filter=True)
    expected = request.to_dict(spider=spider)
    assert s.enqueue_request(request)
    assert len(s) == 1
    s.close("shutdown")  # Stopped before it was handed out.

    s = scheduler()
    got = s.next_request()
    assert got is not None and s.next_request() is None
    # Wrapped to complete the task when done; the spider's methods inside.
    assert got.callback.original == s.spider.parse_item
    assert got.errback.original == s.spider.failed
    s._unwrap(got)
    assert got.to_dict(spider=s.spider) == expected
    assert got.body == b"\x00body" and got.headers["X-Test"] == b"1"


def test_issue38_host_interval_spaces_the_hand_outs_of_a_host(scheduler):
    import scrapy

    # An interval no test outlasts: a host's second request is held back,
    # another host's is not.
    s = scheduler(HQ_HOST_INTERVAL=3600.0)
    for url in ("http://127.0.0.1:1/a", "http://127.0.0.1:1/b",
                "http://127.0.0.2:1/c"):
        assert s.enqueue_request(scrapy.Request(url))
    first = s.next_request()
    second = s.next_request()
    assert {first.url, second.url} >= {"http://127.0.0.2:1/c"}
    assert s.next_request() is None
    assert len(s) == 1 and s.has_pending_requests()
    # Both hosts are within their interval in the group's pacing state.
    assert s.group.stats().paced_topics == 2
    s.close("shutdown")

    # Without the setting, the held request comes (the pacing is not kept:
    # only a host's own pacing is).
    s = scheduler()
    assert s.next_request() is not None
    assert s.next_request() is not None  # The two handed out: again.
    assert s.next_request() is not None


def test_issue38_a_host_pacing_override_persists_across_a_restart(scheduler):
    import scrapy

    s = scheduler(HQ_HOST_PACING={"127.0.0.3": {"interval": 7.5}})
    assert s.host_pacing("127.0.0.1") is None
    s.set_host_pacing("127.0.0.1", max_in_flight=1, interval=3600.0)
    assert s.host_pacing("127.0.0.3") == hq.TopicPacing(max_in_flight=0,
                                                         interval=7.5)
    with pytest.raises(ValueError):
        s.set_host_pacing("127.0.0.1", max_in_flight=-1)
    with pytest.raises(hq.InvalidArgument):
        s.set_host_pacing("127.0.0.1", interval=-1.0)
    assert s.host_pacing("127.0.0.1").interval == 3600.0  # Left as it was.
    s.close("shutdown")

    s = scheduler()
    assert s.host_pacing("127.0.0.1") == hq.TopicPacing(max_in_flight=1,
                                                         interval=3600.0)
    assert s.host_pacing("127.0.0.3").interval == 7.5
    for path in ("a", "b"):
        assert s.enqueue_request(scrapy.Request("http://127.0.0.1:1/" + path))
    assert s.next_request() is not None
    assert s.next_request() is None, "the override did not hold"
    s.clear_host_pacing("127.0.0.1")
    assert s.host_pacing("127.0.0.1") is None
    s.clear_host_pacing("127.0.0.1")  # None: nothing happens.


def test_an_unserializable_request_is_kept_in_memory(scheduler):
    import scrapy

    s = scheduler()
    request = scrapy.Request("http://127.0.0.1:1/x",
                             callback=lambda response: None)
    assert s.enqueue_request(request)
    assert len(s) == 1 and s.has_pending_requests()
    assert s.next_request() is request
    assert s.stats.get_value("scheduler/unserializable") == 1
    # Filtered like the others.
    again = scrapy.Request("http://127.0.0.1:1/x",
                           callback=lambda response: None)
    assert not s.enqueue_request(again)
    assert s.next_request() is None


class Other:
    def parse_elsewhere(self, response):
        pass


def test_issue41_a_request_is_stored_as_request_to_dict_gives_it(scheduler):
    # request_payload finds a callback by its name, without Scrapy's search
    # of every member of the spider; what it stores is what to_dict gives.
    import scrapy
    from scrapy.http import FormRequest
    from scrapy.utils.request import request_from_dict

    s = scheduler()
    spider = s.spider
    requests = [
        scrapy.Request("http://127.0.0.1:1/a"),
        scrapy.Request("http://127.0.0.1:1/b", callback=spider.parse_item,
                       errback=spider.failed, meta={"k": [1]}, priority=-2,
                       cb_kwargs={"n": 1}, dont_filter=True),
        scrapy.Request("http://127.0.0.1:1/c", errback=spider.failed),
        FormRequest("http://127.0.0.1:1/d", formdata={"q": "x"},
                    callback=spider.parse_item),
    ]
    for request in requests:
        payload = hq.scrapy.request_payload(request, spider)
        assert pickle.loads(payload) == request.to_dict(spider=spider)
        back = request_from_dict(pickle.loads(payload), spider=spider)
        assert type(back) is type(request) and back.body == request.body
    # Not a method of the spider: Scrapy's own error.
    other = scrapy.Request("http://127.0.0.1:1/e",
                           callback=Other().parse_elsewhere)
    with pytest.raises(ValueError):
        hq.scrapy.request_payload(other, spider)
    with pytest.raises(ValueError):
        other.to_dict(spider=spider)


def test_issue41_duplicates_are_filtered_in_memory_and_by_the_db_after_a_reopen(
        scheduler):
    import scrapy

    url = "http://127.0.0.1:1/page"
    s = scheduler()
    first = scrapy.Request(url)
    assert s.enqueue_request(first)
    assert not s.enqueue_request(scrapy.Request(url))
    assert s.enqueue_request(scrapy.Request(url, dont_filter=True))
    assert s.stats.get_value("dupefilter/filtered") == 1
    assert s.stats.get_value("scheduler/enqueued") == 2
    # Claimed in the run that stored it: the request enqueued, not a copy.
    got = s.next_request()
    assert got is first
    s.close("shutdown")

    # A new process remembers nothing: the Db filters.
    s = scheduler()
    assert not s.enqueue_request(scrapy.Request(url))
    assert s.stats.get_value("dupefilter/filtered") == 1
    # Both stored requests are delivered again (handed out or not, none
    # was done with), loaded from the Db.
    again = [s.next_request(), s.next_request()]
    assert [r.url for r in again] == [url, url] and first not in again
    assert s.next_request() is None


def test_issue41_one_request_enqueued_twice_completes_each_task(scheduler):
    # The same object enqueued twice (dont_filter) is two tasks: handed out
    # together, each is its own request, and each completes.
    import scrapy

    s = scheduler()
    request = scrapy.Request("http://127.0.0.1:1/twice", dont_filter=True,
                             callback=s.spider.parse_item)
    assert s.enqueue_request(request) and s.enqueue_request(request)
    a, b = s.next_request(), s.next_request()
    assert a is not b and a.url == b.url
    for r in (a, b):
        list(r.callback(None) or [])  # The callback ran; output taken in.
    assert s.group.stats().in_flight == 0
    assert_all_done(s.group.stats())
