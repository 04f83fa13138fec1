# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""A crash-tolerant Scrapy scheduler on hq (Scrapy 2.8).

    # settings.py
    SCHEDULER = "hq.scrapy.Scheduler"
    JOBDIR = "crawls/somespider-1"     # the hq Db is JOBDIR/hq

What it keeps, whatever moment the process dies at (SIGKILL, power loss
with HQ_SYNC = True):

- Every request enqueued is stored in an hq queue (topic layout, topic = the
  request's host, which the group paces: HQ_HOST_* below), serialized with
  Scrapy's own request_to_dict. Scrapy priorities map onto hq priority
  levels.
- The request fingerprint is the hq dedup key: the duplicate filter is the
  queue itself, written in the same batch as the request. Requests with
  dont_filter skip it, as in Scrapy, but for start requests (see
  HQ_START_ONCE): Scrapy requests start_urls with dont_filter at every
  start, and a resumed crawl must not fetch them again.
- next_request claims a request under a lease (HQ_LEASE). The claim is
  completed only once the request is done with: its callback's output was
  taken in (every request it yielded was enqueued), or its errback ran, or
  it failed with no errback, or a downloader middleware replaced it (a retry
  or a redirect: the new request is enqueued first). So every request not
  completed when the process dies is delivered again on the next run: none
  is lost, each is fetched at least once (some twice: those in flight at
  the kill).
- An attempt is a sending: a request counts an attempt when Scrapy's
  downloader sends it (leaves its per-host slot for the download handler),
  not when it is handed out. Before the request goes to the download
  handler, a mark (task, attempt) is written to the queue "sent" (one
  small message per sending, kept like the requests). A request
  handed out but not yet sent when the process dies (it waited in its
  host's download slot, behind DOWNLOAD_DELAY) is delivered again without
  having used an attempt. So kills alone never dead-letter a request.
- A request that fails over and over ends in hq's dead-letter queue: one
  that RetryMiddleware gave up on (its errback ran, or it failed without
  one, after its last retry) is dead-lettered once its errback's output was
  taken in, and one sent HQ_MAX_ATTEMPTS times without completing (it
  kills or hangs the crawl every time) is dead-lettered by the claim that
  would send it once more, as is a stored request the spider could not load
  HQ_MAX_ATTEMPTS times. Both have reason "rejected" (the dead letter's
  attempts count its hand-outs, sent or not). Dead letters are an error:
  at close their count is logged at ERROR (log_count/ERROR) and kept in the
  stats (hq/dead_letters; hq/rejected for this run's dead-lettering), and
  dead_letters(jobdir) lists them; `hq --db=JOBDIR/hq dead requests crawl
  --requeue` puts them back.

Settings:
- HQ_DIR: the hq Db (default JOBDIR/hq; without either the crawl uses a
  temporary Db, deleted at close, and is not resumable).
- HQ_LEASE: seconds a handed-out request is held before it is handed out
  again (default 3600).
- HQ_MAX_ATTEMPTS: sendings of a request before it is dead-lettered
  (default 5).
- HQ_PRIORITIES: priority levels of a new queue (default 32: Scrapy
  priorities -16..15, others saturate).
- HQ_SYNC: sync every write, to survive a power loss (default False).
- HQ_START_ONCE: a start request (one of the spider's start_requests, as
  the engine takes it) with dont_filter is filtered by its fingerprint
  anyway, so the crawl stores it once however often it is
  resumed (default True). False: dont_filter holds for start requests too,
  and every run fetches them again, as Scrapy's JOBDIR scheduler does.
- HQ_HOST_MAX_IN_FLIGHT: at most this many requests of one host handed out
  and not yet done with (0, the default: no limit). A request is done with
  when its callback's output was taken in, so this is stricter than
  CONCURRENT_REQUESTS_PER_DOMAIN, which counts downloads only.
- HQ_HOST_INTERVAL: at least this many seconds between two hand-outs of
  one host (0, the default: none). Unlike DOWNLOAD_DELAY it holds across
  restarts and across processes sharing the Db; it is not randomized.
- HQ_HOST_PACING: {host: {"max_in_flight": n, "interval": seconds}}: set
  as these hosts' own pacing at open (durably; see set_host_pacing).
The group paces through hq's topic pacing (hq/group.h, "Per-topic
pacing"); while pacing holds every request back, the scheduler asks the
engine again every HQ_PACING_POLL seconds (default 0.1).

A host's own pacing (a site's Crawl-delay, say) is set, durably and in
place of HQ_HOST_*, by Scheduler.set_host_pacing(host, max_in_flight=,
interval=) (a spider reaches the scheduler as
self.crawler.engine.slot.scheduler) and removed by clear_host_pacing; it
holds across restarts until cleared. host_pacing(host) reads it.

Fleet mode (doc/fleet.md, "Python and Scrapy"): several Scrapy processes,
on one machine or many, crawl one frontier, each through an hq.fleet.Agent
whose hq Db is HQ_DIR (default JOBDIR/hq). It is on when HQ_FLEET_ZOOKEEPER,
HQ_FLEET_NATS and HQ_FLEET_AGENT are set (ValueError if only some are):
- HQ_FLEET_ZOOKEEPER: ZooKeeper's connect string ("host:port,host:port").
- HQ_FLEET_NATS: the NATS URLs ("nats://host:port,nats://host:port").
- HQ_FLEET_AGENT: this process's agent id, unique in the fleet and kept
  across its restarts (with its JOBDIR) to resume its partitions.
- HQ_FLEET_NAME (default "default"), HQ_FLEET_PARTITIONS (1024),
  HQ_FLEET_REPLICAS (3; 1 for a single nats-server): the same in every
  process of the fleet.
- HQ_FLEET_SESSION_TIMEOUT (10), HQ_FLEET_GRACE (30),
  HQ_FLEET_OWNERSHIP_LEASE (5), HQ_FLEET_TASK_LEASE (60): seconds, as
  hq.fleet.Agent.open's session_timeout, grace, ownership_lease and
  task_lease. The task lease must cover a request's download and callback
  (a request held longer is handed out again); a partition that moves is
  served by its new owner ownership_lease + task_lease after the move.
- HQ_FLEET_IDLE_CLOSE: close the spider (reason "finished") once this
  process has been idle this many seconds: its partitions served and empty
  (no URL stored, in flight or on its way from the streams) and none of its
  requests in flight. It then leaves the fleet, so its partitions move to
  the processes still crawling, which take over whatever is found for
  them later. 0 (the default): never close on idle; a fleet process runs
  until stopped (CLOSESPIDER_*, SIGTERM), and then keeps its partitions for
  HQ_FLEET_GRACE so that a restart resumes them. A crawl of N processes
  with HQ_FLEET_IDLE_CLOSE ends when each has been idle that long.
- HQ_FLEET_POLL: seconds between two claims while nothing is claimable
  (default 0.2): work may come from other processes at any time.
- HQ_FLEET_CLAIM_BATCH: tasks claimed at once (default 8); those not yet
  handed out are given back at close.
In fleet mode requests are put with their URL as the URL and
request_to_dict as the payload; Scrapy priorities map onto the fleet's
0..7 (priority + 4, saturated). next_request claims, and a request
completes at the same point as above (its callback's output taken in, so
the requests it found are put first). What differs from the local mode:
- The dedup key is the URL's text, not Scrapy's request fingerprint
  (hq.fleet takes no other key), so two requests for one URL (another
  method or body) are one, and dont_filter does not bypass it: a URL is
  crawled once per fleet. Unserializable requests are kept in memory,
  without dedup.
- A URL's site is hq.fleet.site_of under HQ_FLEET_SITE: "site" (the
  default: its host's registered domain; an IP address is its own site,
  whatever the port), "host" or "host:port" (for sites told apart by port
  alone, such as test servers on one address); the same in every process.
  Pacing and partitions are per site. HQ_HOST_MAX_IN_FLIGHT and HQ_HOST_INTERVAL pace
  every site alike; HQ_HOST_PACING and set_host_pacing are not supported.
- An attempt is a hand-out (HQ_MAX_ATTEMPTS hand-outs, then a dead
  letter), not a sending: there are no sending marks. A retry by
  RetryMiddleware gives the claimed task back (its next hand-out is the
  retry) instead of storing the copy, whose URL is stored already.
- A task claimed after its valid_until (its partition may have moved) is
  given back unfetched.
- A request whose URL the fleet refuses (no host, over 1024 bytes) is
  dropped with a warning (stat hq/fleet/invalid_url); one NATS does not
  acknowledge (hq.Unavailable) is kept in memory and crawled by this
  process, lost if it dies (stat hq/fleet/unpublished).
- An agent that owns no partition (more processes than partitions) counts
  as idle once HQ_FLEET_SESSION_TIMEOUT has passed since it joined.
- HQ_LEASE, HQ_PRIORITIES, HQ_SYNC, HQ_START_ONCE and HQ_PACING_POLL do
  not apply (HQ_FLEET_TASK_LEASE, the fleet's 8 levels, its own writes,
  URL dedup and HQ_FLEET_POLL take their places).

Not kept from Scrapy's scheduler: DUPEFILTER_CLASS is not used (hq's dedup
is the filter), and a request that cannot be serialized (a lambda callback,
unpicklable meta) is kept in memory, as Scrapy's disk queues do, and is lost
on a crash (stat scheduler/unserializable).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import pickle
import shutil
import tempfile
import weakref
from typing import Any, Optional

import hq

logger = logging.getLogger(__name__)

QUEUE = "requests"
GROUP = "crawl"
# Dedup keys of requests kept in memory (they could not be serialized).
SEEN_QUEUE = "seen"
# One message per sending of a stored request (see "An attempt is a
# sending"): topic = task_key(task), dedup key "<topic>/<attempt>".
SENT_QUEUE = "sent"
# The group's own max_attempts: hq never dead-letters a request by its
# hand-outs; the scheduler does by its sendings.
_GROUP_MAX_ATTEMPTS = 1000000


def _import_scrapy():
    # Deferred so that `import hq.scrapy` names this module, not Scrapy.
    import importlib
    return (importlib.import_module("scrapy.utils.request"),
            importlib.import_module("scrapy.utils.httpobj"),
            importlib.import_module("scrapy.http"))


def _db_dir(settings) -> Optional[str]:
    if settings.get("HQ_DIR"):
        return settings.get("HQ_DIR")
    if settings.get("JOBDIR"):
        return os.path.join(settings.get("JOBDIR"), "hq")
    return None


class _Done:
    """Completes a claimed request's task; wraps its callback or errback.

    The callback runs in Scrapy's scraper; its output goes through the
    spider middlewares to the engine, which enqueues each request at once
    (synchronously). So when the output this wrapper returns is exhausted,
    every request it yielded has been enqueued, and the task completes.
    """

    def __init__(self, scheduler, request, original, is_errback):
        self.scheduler = weakref.proxy(scheduler)
        self.request = weakref.ref(request)
        self.original = original
        self.is_errback = is_errback

    def __call__(self, *args, **kwargs):
        request = self.request()
        sched = self.scheduler
        sched._in_callback.add(id(request))
        if self.is_errback and sched._gave_up_on(request):
            sched._reject.add(id(request))
        if self.original is None:
            if self.is_errback:
                # No errback: Scrapy logs the failure; the request is done.
                sched._finish(request)
                return args[0]
            fn = sched.spider._parse
        else:
            fn = self.original
        try:
            out = fn(*args, **kwargs)
        except BaseException:
            sched._finish(request)
            raise
        import inspect
        if inspect.isasyncgen(out):
            return self._async_iter(out, request)
        if inspect.iscoroutine(out):
            return self._await(out, request)
        return self._output(out, request)

    def _output(self, out, request):
        """The callback's result `out`, as Scrapy takes it in, completing
        the request once exhausted. A single request or item is wrapped
        too: completed before being returned, a request could be lost if
        the process died before the engine enqueued it."""
        if out is None:
            self.scheduler._finish(request)
            return out
        if _is_single(out) or not hasattr(out, "__iter__"):
            out = [out]
        return self._iter(out, request)

    def _iter(self, out, request):
        try:
            yield from out
        finally:
            self.scheduler._finish(request)

    async def _async_iter(self, out, request):
        try:
            async for x in out:
                yield x
        finally:
            self.scheduler._finish(request)

    async def _await(self, coro, request):
        try:
            result = await coro
        except BaseException:
            self.scheduler._finish(request)
            raise
        # Not exhausted here: the engine takes the output in after the
        # coroutine returns.
        return self._output(result, request)


def _is_single(out) -> bool:
    _, _, http = _import_scrapy()
    return isinstance(out, http.Request) or (
        hasattr(out, "keys") and not hasattr(out, "__next__"))


class Scheduler:
    """SCHEDULER = "hq.scrapy.Scheduler": see this module's docstring."""

    def __init__(self, crawler, db_dir, lease, max_attempts, priorities,
                 sync, stats, start_once=True, host_max_in_flight=0,
                 host_interval=0.0, host_pacing=None, pacing_poll=0.1):
        self.crawler = crawler
        self.db_dir = db_dir
        self.lease = lease
        self.max_attempts = max_attempts
        self.levels = priorities
        self.sync = sync
        self.stats = stats
        self.start_once = start_once
        self.host_max_in_flight = host_max_in_flight
        self.host_interval = host_interval
        self.host_pacing_settings = dict(host_pacing or {})
        self.pacing_poll = pacing_poll
        self.spider = None
        self.db = None
        self.queue = None
        self.group = None
        self.sent = None  # The queue SENT_QUEUE.
        self._sent_marked = weakref.WeakSet()  # Requests with a mark written.
        self._starts = weakref.WeakSet()  # The spider's start requests.
        self._wake_call = None  # The pending engine wake-up (pacing).
        self._temp_dir = None
        self._tasks = weakref.WeakKeyDictionary()  # Request -> hq.Task.
        self._in_callback = set()  # id() of requests inside their callback.
        # id() of requests RetryMiddleware gave up on, inside their errback.
        self._reject = set()
        self._peeked = None  # A claimed request not yet handed out.
        self._memory = []  # Unserializable requests: (-priority, n, request).
        self._counter = itertools.count()

    @classmethod
    def from_crawler(cls, crawler):
        s = crawler.settings
        if cls is Scheduler and _fleet_settings(s) is not None:
            from hq._scrapy_fleet import FleetScheduler
            cls = FleetScheduler
        return cls(crawler, _db_dir(s), s.getfloat("HQ_LEASE", 3600.0),
                   s.getint("HQ_MAX_ATTEMPTS", 5), s.getint("HQ_PRIORITIES", 32),
                   s.getbool("HQ_SYNC", False), crawler.stats,
                   start_once=s.getbool("HQ_START_ONCE", True),
                   host_max_in_flight=s.getint("HQ_HOST_MAX_IN_FLIGHT", 0),
                   host_interval=s.getfloat("HQ_HOST_INTERVAL", 0.0),
                   host_pacing=s.getdict("HQ_HOST_PACING", {}),
                   pacing_poll=s.getfloat("HQ_PACING_POLL", 0.1))

    # ---- BaseScheduler

    def open(self, spider):
        self.spider = spider
        path = self.db_dir
        if path is None:
            self._temp_dir = tempfile.mkdtemp(prefix="hq-scrapy-")
            path = self._temp_dir
            logger.warning("hq.scrapy: no JOBDIR or HQ_DIR: requests are "
                           "kept in %s for this run only", path)
        else:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.db = hq.Db.open(path, sync_writes=self.sync)
        try:
            self.queue = self.db.open_queue(QUEUE)
        except hq.NotFound:
            self.queue = self.db.create_queue(QUEUE, priorities=self.levels,
                                              layout="topic")
        self.levels = self.queue.options.priorities
        if self.max_attempts < 1:
            raise ValueError(f"HQ_MAX_ATTEMPTS is {self.max_attempts}; it "
                             "must be at least 1")
        if not self.pacing_poll > 0:
            raise ValueError(f"HQ_PACING_POLL is {self.pacing_poll}; it must "
                             "be above 0")
        if self.host_max_in_flight < 0:
            raise ValueError(f"HQ_HOST_MAX_IN_FLIGHT is "
                             f"{self.host_max_in_flight}; it must be 0 or "
                             "more")
        self.group = self.queue.group(
            GROUP, lease=self.lease, max_attempts=_GROUP_MAX_ATTEMPTS,
            topic_max_in_flight=self.host_max_in_flight,
            topic_interval=self.host_interval)
        try:
            self.sent = self.db.open_queue(SENT_QUEUE)
        except hq.NotFound:
            self.sent = self.db.create_queue(SENT_QUEUE, layout="topic")
        for host, pacing in self.host_pacing_settings.items():
            self.set_host_pacing(host, **pacing)
        self._hook_downloader()
        if self.start_once:
            self._mark_start_requests()
        st = self.group.stats()
        if st.backlog or st.redelivery:
            logger.info("hq.scrapy: resuming %s: %d requests waiting, %d to "
                        "deliver again", path, st.backlog, st.redelivery)

    def close(self, reason):
        if self.db is None:
            return
        try:
            if self._wake_call is not None and self._wake_call.active():
                self._wake_call.cancel()
            dead = self.group.stats().dead_letters
            self.stats.set_value("hq/dead_letters", dead, spider=self.spider)
            if dead:
                logger.error("hq.scrapy: %d requests are dead letters (in "
                             "queue %s), not crawled; hq.scrapy."
                             "dead_letters() lists them, `hq dead --requeue` "
                             "puts them back", dead,
                             self.group.dead_letter_queue)
        finally:
            self.db.close()
            self.db = None
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)

    def has_pending_requests(self) -> bool:
        if self._peeked is not None or self._memory:
            return True
        self._peeked = self._claim()
        if self._peeked is not None:
            return True
        # Requests waiting for a redelivery time are pending too.
        st = self.group.stats()
        return bool(st.redelivery or st.delayed or st.backlog)

    def __len__(self) -> int:
        st = self.group.stats()
        return (st.backlog + st.redelivery + len(self._memory) +
                (self._peeked is not None))

    def enqueue_request(self, request) -> bool:
        parent = self._parent_of(request)
        self._unwrap(request)
        dedup = None
        if not request.dont_filter or (self.start_once and
                                       request in self._starts):
            dedup = self.crawler.request_fingerprinter.fingerprint(
                request).hex()
        try:
            payload = pickle.dumps(request.to_dict(spider=self.spider),
                                   protocol=4)
        except Exception as e:
            # Filtered like the others, through a queue that only
            # remembers dedup keys.
            if dedup and self._seen_queue().put(
                    b"", dedup_key=dedup).duplicate:
                self._finish_parent(parent)
                return self._filtered(request)
            self._inc("scheduler/unserializable")
            logger.warning("hq.scrapy: cannot serialize %s (%s): kept in "
                           "memory, lost if the process dies", request, e)
            heapq.heappush(self._memory,
                           (-request.priority, next(self._counter), request))
            self._finish_parent(parent)
            return True
        r = self.queue.put(payload, topic=self._topic(request),
                           priority=self._level(request.priority),
                           dedup_key=dedup)
        self._finish_parent(parent)
        if r.duplicate:
            return self._filtered(request)
        self._inc("scheduler/enqueued/hq")
        self._inc("scheduler/enqueued")
        return True

    def _filtered(self, request) -> bool:
        self._inc("dupefilter/filtered")
        logger.debug("Filtered duplicate request: %(request)s",
                     {"request": request}, extra={"spider": self.spider})
        return False

    def next_request(self):
        if self._memory:
            self._inc("scheduler/dequeued/memory")
            self._inc("scheduler/dequeued")
            return heapq.heappop(self._memory)[2]
        request = self._peeked or self._claim()
        self._peeked = None
        if request is not None:
            self._inc("scheduler/dequeued/hq")
            self._inc("scheduler/dequeued")
        elif self._paced():
            self._wake_engine()
        return request

    # ---- Host pacing

    def set_host_pacing(self, host: str, max_in_flight: int = 0,
                        interval: float = 0.0) -> None:
        """Sets `host`'s own pacing, durably, in place of HQ_HOST_*: at most
        max_in_flight of its requests handed out and not done with, at
        least `interval` seconds between two hand-outs (0: no limit). Holds
        across restarts until clear_host_pacing. ValueError for a negative
        max_in_flight, hq.InvalidArgument for a pacing out of range
        (hq/group.h TopicPacing)."""
        if int(max_in_flight) < 0:
            raise ValueError(f"max_in_flight of host {host!r} is "
                             f"{max_in_flight}; it must be 0 or more")
        self.group.set_topic_pacing(host, max_in_flight=int(max_in_flight),
                                    interval=float(interval))

    def host_pacing(self, host: str):
        """`host`'s own pacing (hq.TopicPacing), or None if it follows
        HQ_HOST_*."""
        return self.group.get_topic_pacing(host)

    def clear_host_pacing(self, host: str) -> None:
        """Removes `host`'s own pacing (none: nothing happens)."""
        self.group.clear_topic_pacing(host)

    # ---- Internals

    def _claim(self):
        req_util, _, _ = _import_scrapy()
        while True:
            tasks = self.group.claim(1)
            if not tasks:
                return None
            task = tasks[0]
            # Handed out before: it counts the sendings it had.
            sent = self._sendings(task) if task.attempt > 1 else 0
            if sent >= self.max_attempts:
                self.group.reject(task)
                self._inc("hq/rejected")
                logger.error("hq.scrapy: a request was sent %d times without "
                             "being done with (HQ_MAX_ATTEMPTS): it is a dead "
                             "letter, in queue %s", sent,
                             self.group.dead_letter_queue)
                continue
            try:
                request = req_util.request_from_dict(
                    pickle.loads(task.payload), spider=self.spider)
            except Exception as e:
                # A request this spider can no longer load (its callback was
                # renamed): given back, an attempt used, until it is
                # dead-lettered.
                logger.error("hq.scrapy: cannot load a stored request (%s)", e)
                self._mark_sent(task)
                self.group.release(task, 60.0)
                continue
            if task.attempt > 1:
                self._inc("hq/redelivered")
            self._tasks[request] = task
            request.callback = _Done(self, request, request.callback, False)
            request.errback = _Done(self, request, request.errback, True)
            return request

    def _hook_downloader(self):
        """Has the downloader call _on_send for each request it sends: its
        download handlers' entry point (Downloader._download calls it as a
        request leaves its slot) is wrapped on this crawl's instance."""
        engine = getattr(self.crawler, "engine", None)
        handlers = getattr(getattr(engine, "downloader", None), "handlers",
                           None)
        if handlers is None:
            # No engine (a scheduler used alone), or a downloader without
            # handlers: nothing is sent through it.
            return
        download = handlers.download_request
        scheduler = weakref.ref(self)

        def download_request(request, spider):
            s = scheduler()
            if s is not None:
                s._on_send(request)
            return download(request, spider)

        handlers.download_request = download_request

    def _on_send(self, request):
        """`request` goes to the download handler: its attempt counts."""
        task = self._tasks.get(request)
        if task is None or request in self._sent_marked or self.db is None:
            return
        self._mark_sent(task)
        self._sent_marked.add(request)

    def _mark_sent(self, task):
        key = task_key(task)
        self.sent.put(b"", topic=key, dedup_key=f"{key}/{task.attempt}")

    def _sendings(self, task) -> int:
        """The times `task` was sent (or failed to load) so far."""
        with self.sent.scan(topics=[task_key(task)]) as scanner:
            return sum(1 for _ in scanner)

    def _mark_start_requests(self):
        """Has the engine's start requests (its slot's iterator, after the
        spider middlewares) pass through _starts as they are taken."""
        slot = getattr(getattr(self.crawler, "engine", None), "slot", None)
        if slot is None or slot.start_requests is None:
            return
        starts = self._starts

        def marked(requests):
            for request in requests:
                starts.add(request)
                yield request

        slot.start_requests = marked(slot.start_requests)

    def _paced(self) -> bool:
        return bool(self.host_max_in_flight or self.host_interval or
                    self.host_pacing_settings)

    def _wake_engine(self):
        """Pacing holds requests back: asks the engine for the next request
        again in HQ_PACING_POLL seconds, rather than at its next heartbeat
        (5 s)."""
        slot = getattr(getattr(self.crawler, "engine", None), "slot", None)
        if slot is None or (self._wake_call is not None and
                            self._wake_call.active()):
            return
        st = self.group.stats()
        if not (st.backlog or st.redelivery or st.delayed):
            return
        from twisted.internet import reactor
        self._wake_call = reactor.callLater(self.pacing_poll,
                                            slot.nextcall.schedule)

    def _seen_queue(self):
        try:
            return self.db.open_queue(SEEN_QUEUE)
        except hq.NotFound:
            return self.db.create_queue(SEEN_QUEUE)

    def _parent_of(self, request):
        """The claimed request this one was copied from by a downloader
        middleware (a retry or a redirect carries our wrappers), if that
        one is not inside its own callback (then it completes when the
        callback's output is exhausted)."""
        for fn in (request.callback, request.errback):
            if isinstance(fn, _Done):
                parent = fn.request()
                if (parent is not None and parent is not request and
                        id(parent) not in self._in_callback):
                    return parent
        return None

    def _finish_parent(self, parent):
        if parent is not None:
            self._finish(parent)

    @staticmethod
    def _unwrap(request):
        if isinstance(request.callback, _Done):
            request.callback = request.callback.original
        if isinstance(request.errback, _Done):
            request.errback = request.errback.original

    def _gave_up_on(self, request) -> bool:
        """Whether RetryMiddleware retried `request` as often as it may (so
        this failure is its last): Scrapy 2.8's rule, retry_times of the
        request's meta against max_retry_times or RETRY_TIMES."""
        settings = self.crawler.settings
        if not settings.getbool("RETRY_ENABLED", True):
            return False
        most = request.meta.get("max_retry_times",
                                settings.getint("RETRY_TIMES", 2))
        return most > 0 and request.meta.get("retry_times", 0) >= most

    def _finish(self, request):
        if request is None:
            return
        self._in_callback.discard(id(request))
        reject = id(request) in self._reject
        self._reject.discard(id(request))
        task = self._tasks.pop(request, None)
        consumer = self._consumer()
        if task is None or consumer is None:
            return
        try:
            if reject:
                consumer.reject(task)
                self._inc("hq/rejected")
            else:
                consumer.complete(task)
        except hq.FailedPrecondition as e:
            # Its lease expired and it was handed out again (in fleet mode,
            # or its partition moved): that delivery completes it.
            logger.debug("hq.scrapy: %s: %s", request, e)

    def _consumer(self):
        """What completes and rejects the tasks: the group, or None once
        closed."""
        return self.group if self.db is not None else None

    def _topic(self, request) -> str:
        _, httpobj, _ = _import_scrapy()
        return httpobj.urlparse_cached(request).hostname or ""

    def _level(self, priority: int) -> int:
        return min(max(priority + self.levels // 2, 0), self.levels - 1)

    def _inc(self, key):
        self.stats.inc_value(key, spider=self.spider)


def task_key(task) -> str:
    """The topic of a task's sending marks in SENT_QUEUE."""
    return f"{task.partition}/{task.id.ms}-{task.id.seq}"


def dead_letters(jobdir: str, max: int = 1000):
    """The dead-lettered requests of a (stopped) crawl's job directory, as
    (hq.DeadLetter, request dict) pairs."""
    with hq.Db.open(os.path.join(jobdir, "hq"), create_if_missing=False) as db:
        group = db.open_queue(QUEUE).group(GROUP)
        return [(d, pickle.loads(d.payload)) for d in group.dead_letters(max)]


# ---- Fleet mode: the settings that turn it on, read here by
# Scheduler.from_crawler; FleetScheduler itself is in hq._scrapy_fleet.

_FLEET_REQUIRED = ("HQ_FLEET_ZOOKEEPER", "HQ_FLEET_NATS", "HQ_FLEET_AGENT")


def _fleet_settings(settings) -> Optional[dict]:
    """The fleet settings, or None when none of HQ_FLEET_ZOOKEEPER,
    HQ_FLEET_NATS and HQ_FLEET_AGENT is set. ValueError when only some
    are."""
    given = [k for k in _FLEET_REQUIRED if settings.get(k)]
    if not given:
        return None
    if len(given) != len(_FLEET_REQUIRED):
        missing = [k for k in _FLEET_REQUIRED if k not in given]
        raise ValueError(f"hq.scrapy fleet mode needs {', '.join(missing)} "
                         f"too ({', '.join(given)} set)")
    return dict(
        zookeeper=settings.get("HQ_FLEET_ZOOKEEPER"),
        nats=settings.get("HQ_FLEET_NATS"),
        agent_id=settings.get("HQ_FLEET_AGENT"),
        fleet=settings.get("HQ_FLEET_NAME", "default"),
        partitions=settings.getint("HQ_FLEET_PARTITIONS", 1024),
        replicas=settings.getint("HQ_FLEET_REPLICAS", 3),
        session_timeout=settings.getfloat("HQ_FLEET_SESSION_TIMEOUT", 10.0),
        grace=settings.getfloat("HQ_FLEET_GRACE", 30.0),
        ownership_lease=settings.getfloat("HQ_FLEET_OWNERSHIP_LEASE", 5.0),
        task_lease=settings.getfloat("HQ_FLEET_TASK_LEASE", 60.0),
        idle_close=settings.getfloat("HQ_FLEET_IDLE_CLOSE", 0.0),
        poll=settings.getfloat("HQ_FLEET_POLL", 0.2),
        claim_batch=settings.getint("HQ_FLEET_CLAIM_BATCH", 8),
        site_of=settings.get("HQ_FLEET_SITE", "site"),
    )


def __getattr__(name: str):
    # FleetScheduler (fleet mode) is hq._scrapy_fleet's, loaded on first use.
    if name == "FleetScheduler":
        from hq._scrapy_fleet import FleetScheduler
        return FleetScheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "FleetScheduler"])
