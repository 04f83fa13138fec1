# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""One process of a Scrapy crawl in hq.scrapy's fleet mode, run by
test_scrapy_fleet.py (several at once, one agent each).

    /usr/bin/python3 scrapy_fleet_spider.py PLAN.json

The plan:
  roots:    the start URLs (one per host);
  fetched:  a file this process appends one line per page its callback
            got (the URL), with one write(2) each;
  events:   a file it appends JSON lines to: {"event": "serving"} once its
            agent serves every partition it owns (and owns some), and
            {"event": "closed", "reason", "stats"} at the end;
  go:       a file whose existence starts the crawl: the spider then hands
            the roots to the engine (until then it does not close, and
            puts nothing), so the test starts the crawl once the fleet's
            assignment settled;
  settings: Scrapy settings (JOBDIR, HQ_FLEET_*, ...).
Every page's links (the <a href> of the test's server) are followed.
"""

import json
import os
import sys

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import DontCloseSpider
from twisted.internet import task


def main():
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    fetched = os.open(plan["fetched"], os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                      0o644)
    events = os.open(plan["events"], os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                     0o644)

    def log(**event):
        os.write(events, (json.dumps(event) + "\n").encode())

    class FleetSpider(scrapy.Spider):
        name = "fleet"
        started = False
        serving = False

        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.idle, signal=signals.spider_idle)
            crawler.signals.connect(spider.opened,
                                    signal=signals.spider_opened)
            return spider

        def opened(self, spider):
            self.loop = task.LoopingCall(self.tick)
            self.loop.start(0.1)

        def tick(self):
            scheduler = self.crawler.engine.slot.scheduler
            if not self.serving and scheduler.agent is not None:
                owned = scheduler.agent.stats().owned
                if owned and all(p.serving for p in owned):
                    self.serving = True
                    log(event="serving",
                        partitions=[p.partition for p in owned])
            if not self.started and os.path.exists(plan["go"]):
                self.started = True
                for url in plan["roots"]:
                    self.crawler.engine.crawl(scrapy.Request(url))
            if self.started:
                self.loop.stop()

        def idle(self, spider):
            if not self.started:
                raise DontCloseSpider()

        def start_requests(self):
            return []

        def parse(self, response):
            os.write(fetched, (response.url + "\n").encode())
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)

        def closed(self, reason):
            stats = {k: v for k, v in self.crawler.stats.get_stats().items()
                     if isinstance(v, int)}
            log(event="closed", reason=reason, stats=stats)

    settings = {
        "SCHEDULER": "hq.scrapy.Scheduler",
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        **plan["settings"],
    }
    process = CrawlerProcess(settings)
    process.crawl(FleetSpider)
    process.start()


if __name__ == "__main__":
    main()
