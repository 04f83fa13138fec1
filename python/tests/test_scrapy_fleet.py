# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq.scrapy's fleet mode: two Scrapy processes (scrapy_fleet_spider.py),
one hq.fleet agent each, crawl one site set served by this test on several
loopback addresses (127.0.0.x: an IP address is its own site, so each host
is one site and the hosts spread over the fleet's partitions), against a
real ZooKeeper and nats-server (fleet_cluster.py).

The crawl starts once both agents serve their partitions (the test then
creates the plan's "go" file), so no partition moves during it: every page
must be fetched by exactly one process, and both must fetch some. Each
process closes when it has been idle for HQ_FLEET_IDLE_CLOSE seconds (its
partitions served and empty, nothing of its own in flight), leaving the
fleet. One page answers 503 once: its retry is the same task handed out
again. Every wait has a deadline; nothing is asserted about time."""

import http.server
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest

fleet = pytest.importorskip(
    "hq.fleet", reason="hq was built without the fleet library")
pytest.importorskip("scrapy")

from fleet_cluster import fleet_cluster  # noqa: E402,F401  (the fixture)

SPIDER = os.path.join(os.path.dirname(__file__), "scrapy_fleet_spider.py")
PARTITIONS = 2
HOSTS_PER_PARTITION = 3
PAGES = 30  # Per host.
DEADLINE = 180.0  # Seconds: for the processes to serve, and to finish.


def pick_hosts():
    """Loopback addresses, HOSTS_PER_PARTITION in each partition, so that
    whichever agent owns which partition, both get work."""
    by_part = {p: [] for p in range(PARTITIONS)}
    for k in range(1, 255):
        ip = f"127.0.0.{k}"
        p = fleet.partition_of(fleet.site_of(f"http://{ip}/"), PARTITIONS)
        if len(by_part[p]) < HOSTS_PER_PARTITION:
            by_part[p].append(ip)
        if all(len(v) == HOSTS_PER_PARTITION for v in by_part.values()):
            return [ip for v in by_part.values() for ip in v]
    pytest.fail("no loopback addresses cover every partition")


class Site:
    """PAGES pages per host; page i of host h links to pages 2i+1 and 2i+2
    of its host and to page i of the next host. Counts every answer. The
    page `flaky` answers 503 the first time (RetryMiddleware retries it);
    the first page also links to a URL too long for the fleet."""

    def __init__(self, hosts):
        self.flaky = None
        self.servers = []
        self.bases = []
        self.lock = threading.Lock()
        self.served = {}
        for ip in hosts:
            server = http.server.ThreadingHTTPServer((ip, 0), self.handler())
            server.daemon_threads = True
            self.servers.append(server)
            self.bases.append(f"http://{ip}:{server.server_address[1]}")
        self.threads = [threading.Thread(target=s.serve_forever, daemon=True)
                        for s in self.servers]
        for t in self.threads:
            t.start()
        self.flaky = f"{self.bases[0]}/p3"
        # Over the fleet's 1024 bytes: dropped by the scheduler.
        self.too_long = f"{self.bases[0]}/{'x' * 1100}"

    def urls(self):
        return {f"{b}/p{i}" for b in self.bases for i in range(PAGES)}

    def handler(self):
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                host = f"http://{self.headers['Host']}"
                h = site.bases.index(host)
                i = int(self.path[2:])
                with site.lock:
                    url = host + self.path
                    site.served[url] = site.served.get(url, 0) + 1
                    first = site.served[url] == 1
                if url == site.flaky and first:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                links = [f"/p{c}" for c in (2 * i + 1, 2 * i + 2)
                         if c < PAGES]
                links.append(f"{site.bases[(h + 1) % len(site.bases)]}/p{i}")
                if h == 0 and i == 0:
                    links.append(site.too_long)
                body = "".join(f'<a href="{x}">x</a>' for x in links)
                data = f"<html><body>{body}</body></html>".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()


def read_events(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def read_lines(path):
    try:
        with open(path) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def test_two_scrapy_processes_crawl_one_site_set(fleet_cluster, tmp_path):
    site = Site(pick_hosts())
    name = "s" + uuid.uuid4().hex[:16]
    go = tmp_path / "go"
    procs = []
    runs = []
    try:
        for k in range(2):
            run = tmp_path / f"crawler{k}"
            run.mkdir()
            plan = {
                "roots": [f"{b}/p0" for b in site.bases],
                "fetched": str(run / "fetched.log"),
                "events": str(run / "events.log"),
                "go": str(go),
                "settings": {
                    "JOBDIR": str(run / "job"),
                    "LOG_FILE": str(run / "scrapy.log"),
                    "HQ_FLEET_ZOOKEEPER": fleet_cluster["zookeeper"],
                    "HQ_FLEET_NATS": fleet_cluster["nats"],
                    "HQ_FLEET_AGENT": f"crawler{k}",
                    "HQ_FLEET_NAME": name,
                    "HQ_FLEET_PARTITIONS": PARTITIONS,
                    "HQ_FLEET_REPLICAS": 1,
                    "HQ_FLEET_SESSION_TIMEOUT": 10.0,
                    "HQ_FLEET_GRACE": 2.0,
                    "HQ_FLEET_OWNERSHIP_LEASE": 1.5,
                    # A request held longer is handed out again: ample for
                    # a local page on a loaded machine.
                    "HQ_FLEET_TASK_LEASE": 10.0,
                    "HQ_FLEET_IDLE_CLOSE": 4.0,
                    "HQ_FLEET_POLL": 0.1,
                },
            }
            with open(run / "plan.json", "w") as f:
                json.dump(plan, f)
            runs.append(run)
            procs.append(subprocess.Popen(
                [sys.executable, SPIDER, str(run / "plan.json")],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))

        def logs():
            out = []
            for run in runs:
                try:
                    with open(run / "scrapy.log") as f:
                        out.append(f.read()[-3000:])
                except FileNotFoundError:
                    out.append("")
            return "\n----\n".join(out)

        # Both agents serve their partitions: the assignment settled.
        end = time.monotonic() + DEADLINE
        while not all(any(e["event"] == "serving"
                          for e in read_events(run / "events.log"))
                      for run in runs):
            assert all(p.poll() is None for p in procs), logs()
            assert time.monotonic() < end, "not serving: " + logs()
            time.sleep(0.1)
        go.touch()
        for p in procs:
            try:
                p.wait(timeout=max(1.0, end + DEADLINE - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail("a crawler did not finish: " + logs())
        fetched = [read_lines(run / "fetched.log") for run in runs]
        closed = [[e for e in read_events(run / "events.log")
                   if e["event"] == "closed"] for run in runs]
        print(f"fetched per process: {[len(f) for f in fetched]}; "
              f"answers: {sum(site.served.values())} for "
              f"{len(site.urls())} pages")
        assert [p.returncode for p in procs] == [0, 0], logs()
        assert [c[0]["reason"] for c in closed] == ["finished", "finished"]
        union = set(fetched[0]) | set(fetched[1])
        assert union == site.urls(), logs()
        # No page twice: the crawl began after the assignment settled, so
        # every page was handed out by its partition's one owner, once.
        assert set(fetched[0]).isdisjoint(fetched[1])
        assert all(len(f) == len(set(f)) for f in fetched)
        assert all(fetched), "a process fetched nothing"
        # Each page was answered once, but the flaky one: twice, its retry
        # being its task's next hand-out (hq/fleet/retried).
        assert {u: n for u, n in site.served.items() if n != 1} == {
            site.flaky: 2}
        assert sum(c[0]["stats"].get("hq/fleet/retried", 0)
                   for c in closed) == 1
        assert sum(c[0]["stats"].get("hq/fleet/invalid_url", 0)
                   for c in closed) == 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stderr.close()
        site.close()


def test_fleet_settings_all_or_none():
    from scrapy.settings import Settings

    import hq.scrapy
    assert hq.scrapy._fleet_settings(Settings({})) is None
    with pytest.raises(ValueError, match="HQ_FLEET_AGENT"):
        hq.scrapy._fleet_settings(Settings({
            "HQ_FLEET_ZOOKEEPER": "127.0.0.1:1",
            "HQ_FLEET_NATS": "nats://127.0.0.1:1"}))
    f = hq.scrapy._fleet_settings(Settings({
        "HQ_FLEET_ZOOKEEPER": "127.0.0.1:1",
        "HQ_FLEET_NATS": "nats://127.0.0.1:1", "HQ_FLEET_AGENT": "a"}))
    assert (f["fleet"], f["partitions"], f["replicas"], f["idle_close"],
            f["site_of"]) == ("default", 1024, 3, 0.0, "site")


def test_fleet_priorities_map_onto_eight_levels():
    import hq.scrapy
    level = hq.scrapy.FleetScheduler._level
    assert [level(None, p) for p in (-100, -4, -1, 0, 1, 3, 100)] == [
        0, 0, 3, 4, 5, 7, 7]
