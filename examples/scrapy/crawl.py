#!/usr/bin/python3
# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""A Scrapy crawl on hq.scrapy that survives SIGKILL, and checks itself.

    PYTHONPATH=build/python /usr/bin/python3 examples/scrapy/crawl.py DIR

crawls a generated site of --pages pages (every page reachable from the
root; each links to its two children in a tree and to --extra-links random
pages), served on 127.0.0.1 by a server this program starts in a thread.
Everything lives in DIR: the site's seed and port (site.json, so a resumed
run serves the same URLs), Scrapy's JOBDIR (DIR/job, the hq Db in
DIR/job/hq) and a log of every page fetched (fetched.log, one line per
fetch, appended as it happens).

Kill it at any moment (kill -9) and run the same command again: it resumes.
When the crawl ends it checks, and prints as one JSON line:
  - every page was fetched (lost: pages never fetched, must be 0);
  - every URL was enqueued once (the hq queue holds each URL once: the
    duplicate filter held across restarts);
  - repeats: pages fetched more than once (those in flight at a kill).
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
    def __init__(self, directory, pages, extra):
        path = os.path.join(directory, "site.json")
        if os.path.exists(path):
            with open(path) as f:
                self.conf = json.load(f)
        else:
            self.conf = {"seed": random.randrange(1 << 30), "pages": pages,
                         "extra": extra, "port": 0}
        conf = self.conf
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                try:
                    i = int(self.path.strip("/").removeprefix("p") or "0")
                except ValueError:
                    i = -1
                if not 0 <= i < conf["pages"]:
                    self.send_error(404)
                    return
                links = "".join(
                    f'<a href="/p{j}">page {j}</a>\n'
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
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", conf["port"]), Handler)
        self.server.daemon_threads = True
        if not conf["port"]:
            conf["port"] = self.server.server_address[1]
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(conf, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        site.root = f"http://127.0.0.1:{conf['port']}/p0"

    def all_urls(self):
        return {f"http://127.0.0.1:{self.conf['port']}/p{i}"
                for i in range(self.conf["pages"])}


def run_crawl(directory, site, scheduler, concurrency):
    import scrapy
    from scrapy.crawler import CrawlerProcess

    log = os.open(os.path.join(directory, "fetched.log"),
                  os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    class SiteSpider(scrapy.Spider):
        name = "site"

        def start_requests(self):
            # Filtered like any link, so a resumed run does not fetch the
            # root again (Scrapy's default start_requests sets dont_filter).
            yield scrapy.Request(site.root)

        def parse(self, response):
            os.write(log, (response.url + "\n").encode())
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse)

    settings = {
        "CONCURRENT_REQUESTS": concurrency,
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


def check(directory, site, scheduler):
    with open(os.path.join(directory, "fetched.log")) as f:
        fetches = collections.Counter(line.strip() for line in f if line.strip())
    urls = site.all_urls()
    result = {
        "pages": len(urls),
        "fetched": len(urls & set(fetches)),
        "lost": len(urls - set(fetches)),
        "fetches": sum(fetches.values()),
        "repeats": sum(1 for n in fetches.values() if n > 1),
    }
    ok = result["lost"] == 0
    if scheduler == "hq":
        import hq
        with hq.Db.open(os.path.join(directory, "job", "hq"),
                        create_if_missing=False) as db:
            queue = db.open_queue("requests")
            enqueued = collections.Counter(
                pickle.loads(m.payload)["url"] for m in queue.scan())
            stats = queue.group("crawl").stats()
        result["enqueued"] = sum(enqueued.values())
        result["enqueued_twice"] = sum(1 for n in enqueued.values() if n > 1)
        result["dead_letters"] = stats.dead_letters
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
    p.add_argument("--scheduler", choices=["hq", "memory", "jobdir"],
                   default="hq")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    site = Site(args.dir, args.pages, args.extra_links)
    start = time.monotonic()
    run_crawl(args.dir, site, args.scheduler, args.concurrency)
    elapsed = time.monotonic() - start
    print(f"crawl: {elapsed:.2f} s", file=sys.stderr)
    sys.exit(0 if check(args.dir, site, args.scheduler) else 1)


if __name__ == "__main__":
    main()
