#!/usr/bin/python3
# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""A Scrapy crawl on hq.scrapy that survives SIGKILL, and checks itself.

    PYTHONPATH=build/python /usr/bin/python3 examples/scrapy/crawl.py DIR

crawls a generated site of --pages pages (every page reachable from the
root; each links to its two children in a tree and to --extra-links random
pages), served on --hosts loopback addresses (127.0.0.1, 127.0.0.2, ...,
each serving an equal block of pages: the root and its first descendants
live on the first) by servers this program starts in threads.
Everything lives in DIR: the site's seed and ports (site.json, so a
resumed run serves the same URLs), Scrapy's JOBDIR (DIR/job, the hq Db in
DIR/job/hq), a log of every page the spider's callback got (fetched.log)
and a log of every request the servers answered (served.log), one line
each, appended as it happens, and flight.log: "RUN EVENT URL" lines, RUN
naming the process, EVENT one of "reached" (the request reached Scrapy's
downloader), "served" (the server answered it) and "done" (its callback's
output was all taken in, so hq.scrapy completed it), from which
test_scrapy_crash.py tells, for each kill, which requests were in flight
(reached, not done) and which pages were fetched again after it.

The start URL is given as Scrapy's start_urls, so Scrapy requests it with
dont_filter on every run; hq.scrapy stores it once for the whole crawl.
--delay sets DOWNLOAD_DELAY and --per-host CONCURRENT_REQUESTS_PER_DOMAIN.

Kill it at any moment (kill -9) and run the same command again: it resumes.
When the crawl ends it checks, and prints as one JSON line:
  - every page was fetched (lost: pages never fetched, must be 0);
  - every URL was enqueued once (the hq queue holds each URL once: the
    duplicate filter held across restarts);
  - repeats: pages whose callback ran more than once, and served_twice:
    pages the servers answered more than once (served: answers in all).
    Both come from requests in flight at a kill: a page answered but not
    yet scraped, or scraped but whose request was not yet completed.
It exits 0 if the checks pass, 1 otherwise.

--scheduler=memory|jobdir runs the same crawl on Scrapy's own schedulers
(memory: not resumable; jobdir: Scrapy's JOBDIR disk queue) for the
comparison in bench/py_bench.py (--benchmarks=crash); the checks then
report only lost and repeats.
"""

import argparse
import collections
import http.server
import json
import os
import pickle
import random
import sys
import threading
import time
from urllib.parse import urlparse


def page_links(seed, pages, extra, i):
    """The pages that page i links to: a tree over 0..pages-1 (so every
    page is reachable from page 0) and `extra` random pages."""
    links = [c for c in (2 * i + 1, 2 * i + 2) if c < pages]
    rng = random.Random(seed * 1000003 + i)
    links += [rng.randrange(pages) for _ in range(extra)]
    return links


class Site:
    def __init__(self, directory, pages, extra, hosts):
        path = os.path.join(directory, "site.json")
        if os.path.exists(path):
            with open(path) as f:
                self.conf = json.load(f)
        else:
            self.conf = {"seed": random.randrange(1 << 30), "pages": pages,
                         "extra": extra, "ports": [0] * hosts}
        conf = self.conf
        site = self
        served = os.open(os.path.join(directory, "served.log"),
                         os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.flight = os.open(os.path.join(directory, "flight.log"),
                              os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # This process, in flight.log.
        self.run = f"{os.getpid()}-{time.time_ns()}"

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                try:
                    i = int(self.path.strip("/").removeprefix("p") or "0")
                except ValueError:
                    i = -1
                if not 0 <= i < conf["pages"]:
                    self.send_error(404)
                    return
                os.write(served, (site.url(i) + "\n").encode())
                site.note("served", site.url(i))
                links = "".join(
                    f'<a href="{site.url(j)}">page {j}</a>\n'
                    for j in page_links(conf["seed"], conf["pages"],
                                        conf["extra"], i))
                body = f"<html><body><h1>page {i}</h1>\n{links}</body></html>"
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        new = not conf["ports"][0]
        for h, port in enumerate(conf["ports"]):
            server = http.server.ThreadingHTTPServer((self.host(h), port),
                                                     Handler)
            server.daemon_threads = True
            conf["ports"][h] = server.server_address[1]
            threading.Thread(target=server.serve_forever, daemon=True).start()
        if new:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(conf, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
        site.root = self.url(0)

    def note(self, event, url):
        """Appends "RUN EVENT URL" to flight.log."""
        os.write(self.flight, f"{self.run} {event} {url}\n".encode())

    @staticmethod
    def host(h):
        """The h-th host: 127.0.0.(h+1), a loopback address."""
        return f"127.0.0.{h + 1}"

    def url(self, i):
        h = i * len(self.conf["ports"]) // self.conf["pages"]
        return f"http://{self.host(h)}:{self.conf['ports'][h]}/p{i}"

    def all_urls(self):
        return {self.url(i) for i in range(self.conf["pages"])}


def run_crawl(directory, site, scheduler, concurrency, delay, per_host):
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    log = os.open(os.path.join(directory, "fetched.log"),
                  os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class SiteSpider(scrapy.Spider):
        name = "site"

        # Scrapy requests these with dont_filter at every start.
        start_urls = [site.root]

        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            # Scrapy holds a receiver weakly: the spider's method lives as
            # long as the crawl.
            crawler.signals.connect(spider.reached,
                                    signal=signals.request_reached_downloader)
            return spider

        def reached(self, request, spider):
            site.note("reached", request.url)

        def parse(self, response):
            os.write(log, (response.url + "\n").encode())
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse)

    class NoteDone:
        """Notes "done" once a callback's output was all taken in: the
        callback's own output (which hq.scrapy completes the request after)
        is exhausted before this middleware's."""

        def process_spider_output(self, response, result, spider):
            yield from result
            site.note("done", response.request.url)

    settings = {
        "SPIDER_MIDDLEWARES": {NoteDone: 1000},
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": per_host,
        "DOWNLOAD_DELAY": delay,
        "LOG_LEVEL": os.environ.get("CRAWL_LOG_LEVEL", "WARNING"),
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "JOBDIR": os.path.join(directory, "job"),
    }
    if scheduler == "hq":
        settings["SCHEDULER"] = "hq.scrapy.Scheduler"
    elif scheduler == "memory":
        del settings["JOBDIR"]
    process = CrawlerProcess(settings)
    process.crawl(SiteSpider)
    process.start()
    os.close(log)


def read_log(directory, name):
    with open(os.path.join(directory, name)) as f:
        return collections.Counter(line.strip() for line in f if line.strip())


def check(directory, site, scheduler):
    fetches = read_log(directory, "fetched.log")
    served = read_log(directory, "served.log")
    urls = site.all_urls()
    result = {
        "pages": len(urls),
        "fetched": len(urls & set(fetches)),
        "lost": len(urls - set(fetches)),
        "fetches": sum(fetches.values()),
        "repeats": sum(1 for n in fetches.values() if n > 1),
        "served": sum(served.values()),
        "served_twice": sum(1 for n in served.values() if n > 1),
    }
    ok = result["lost"] == 0
    if scheduler == "hq":
        import hq
        with hq.Db.open(os.path.join(directory, "job", "hq"),
                        create_if_missing=False) as db:
            queue = db.open_queue("requests")
            enqueued = collections.Counter(
                pickle.loads(m.payload)["url"] for m in queue.scan())
            group = queue.group("crawl")
            stats = group.stats()
            reasons = collections.Counter(
                d.reason for d in group.dead_letters())
        result["enqueued"] = sum(enqueued.values())
        result["enqueued_twice"] = sum(1 for n in enqueued.values() if n > 1)
        result["dead_letters"] = stats.dead_letters
        result["dead_reasons"] = dict(reasons)
        ok = (ok and result["enqueued_twice"] == 0 and
              set(enqueued) == urls and stats.backlog == 0 and
              stats.in_flight == 0 and stats.dead_letters == 0)
    result["ok"] = ok
    print(json.dumps(result), flush=True)
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--pages", type=int, default=2000)
    p.add_argument("--extra-links", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--hosts", type=int, default=1)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--per-host", type=int, default=8)
    p.add_argument("--scheduler", choices=["hq", "memory", "jobdir"],
                   default="hq")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    site = Site(args.dir, args.pages, args.extra_links, args.hosts)
    start = time.monotonic()
    run_crawl(args.dir, site, args.scheduler, args.concurrency, args.delay,
              args.per_host)
    elapsed = time.monotonic() - start
    print(f"crawl: {elapsed:.2f} s", file=sys.stderr)
    sys.exit(0 if check(args.dir, site, args.scheduler) else 1)


if __name__ == "__main__":
    main()
