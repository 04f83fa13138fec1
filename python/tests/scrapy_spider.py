# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""A Scrapy crawl on hq.scrapy.Scheduler driven by a JSON plan, run as a
subprocess by test_scrapy_scheduler.py (one crawl per process: Twisted's
reactor cannot be restarted).

    /usr/bin/python3 scrapy_spider.py PLAN.json

The plan (every key optional but base, jobdir and events):
  base:     the site's root URL, "http://127.0.0.1:PORT";
  jobdir:   Scrapy's JOBDIR (the hq Db is JOBDIR/hq);
  events:   a file this crawl appends JSON lines to: {"event": "callback",
            "path"}, {"event": "errback", "path", "failure": its exception
            type}, and at the end {"event": "closed", "reason", "stats"};
  start:    the start requests, [path, priority, dont_filter] each;
  links:    {path: [[path, priority, dont_filter], ...]}: the requests the
            callback of path yields;
  kill_in_callback: paths whose callback SIGKILLs this process (before
            yielding anything);
  kill_after_output: {path: marker}: once the callback of path has yielded
            all its requests, it creates marker and SIGKILLs this process,
            unless marker exists;
  mark_after_output: {path: marker}: the same, creating marker only;
  returns:  {path: style}: how the callback of path gives its requests:
            "yield" (a generator, the default), "request" (returns the one
            request), "list" (returns a list), "async_request" and
            "async_list" (an async def callback returning either);
  kill_in_output: {path: marker}: a spider middleware SIGKILLs this
            process when a request for path comes out of a callback (before
            the engine gets it), unless marker exists (it creates it);
  die_when_idle: SIGKILL this process when the crawl has nothing left to
            do, instead of closing it (a crash, not a clean stop);
  kill_when_queued: paths whose request SIGKILLs this process as it
            reaches Scrapy's downloader (signal request_reached_downloader:
            it enters its host's download slot, before it is sent);
  pacing:   {host: [max_in_flight, interval]}: the spider sets these
            hosts' own pacing through the scheduler as it opens;
  settings: more Scrapy settings.
Every request has the callback `parse` (`parse_async` for the async
styles) and the errback `failed`.
"""

import json
import os
import signal
import sys

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess


def main():
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    events = os.open(plan["events"], os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                     0o644)

    def log(**event):
        os.write(events, (json.dumps(event) + "\n").encode())

    def marker(path):
        with open(path, "w"):
            pass

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    class PlanSpider(scrapy.Spider):
        name = "plan"

        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            if plan.get("die_when_idle"):
                crawler.signals.connect(die, signal=signals.spider_idle)
            crawler.signals.connect(spider.reached,
                                    signal=signals.request_reached_downloader)
            crawler.signals.connect(spider.opened,
                                    signal=signals.spider_opened)
            return spider

        def reached(self, request, spider):
            path = request.url[len(plan["base"]):]
            log(event="reached", path=path)
            if path in plan.get("kill_when_queued", []):
                die()

        def opened(self, spider):
            scheduler = self.crawler.engine.slot.scheduler
            for host, (most, interval) in plan.get("pacing", {}).items():
                scheduler.set_host_pacing(host, max_in_flight=most,
                                          interval=interval)

        def request(self, path, priority, dont_filter):
            style = plan.get("returns", {}).get(path, "yield")
            callback = (self.parse_async if style.startswith("async_")
                        else self.parse)
            return scrapy.Request(plan["base"] + path, priority=priority,
                                  dont_filter=dont_filter,
                                  callback=callback, errback=self.failed)

        def start_requests(self):
            for spec in plan.get("start", []):
                yield self.request(*spec)

        def links(self, response):
            path = response.url[len(plan["base"]):]
            log(event="callback", path=path)
            if path in plan.get("kill_in_callback", []):
                die()
            links = [self.request(*spec)
                     for spec in plan.get("links", {}).get(path, [])]
            return path, links, plan.get("returns", {}).get(path, "yield")

        def parse(self, response):
            path, links, style = self.links(response)
            if style == "request":
                return links[0]
            if style == "list":
                return links
            return self.output(path, links)

        async def parse_async(self, response):
            path, links, style = self.links(response)
            return links[0] if style == "async_request" else links

        def output(self, path, links):
            yield from links
            if path in plan.get("mark_after_output", {}):
                marker(plan["mark_after_output"][path])
            if path in plan.get("kill_after_output", {}):
                done = plan["kill_after_output"][path]
                if not os.path.exists(done):
                    marker(done)
                    die()

        def failed(self, failure):
            path = failure.request.url[len(plan["base"]):]
            log(event="errback", path=path,
                failure=type(failure.value).__name__)

        def closed(self, reason):
            stats = {k: v for k, v in self.crawler.stats.get_stats().items()
                     if isinstance(v, int)}
            log(event="closed", reason=reason, stats=stats)

    class KillInOutput:
        def process_spider_output(self, response, result, spider):
            for x in result:
                if isinstance(x, scrapy.Request):
                    path = x.url[len(plan["base"]):]
                    done = plan.get("kill_in_output", {}).get(path)
                    if done and not os.path.exists(done):
                        marker(done)
                        die()
                yield x

    settings = {
        "SCHEDULER": "hq.scrapy.Scheduler",
        "JOBDIR": plan["jobdir"],
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "SPIDER_MIDDLEWARES": {KillInOutput: 1000},
        **plan.get("settings", {}),
    }
    process = CrawlerProcess(settings)
    process.crawl(PlanSpider)
    process.start()


if __name__ == "__main__":
    main()
