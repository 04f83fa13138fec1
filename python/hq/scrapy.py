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
  is lost, each is fetched at least once.
- Fetched again after a kill: only requests in flight at the kill, those
  that had reached Scrapy's downloader and were not yet done with (as
  above): downloading, waiting for their callback (Scrapy's scraper calls
  it 0.1 s after the download at the earliest, and keeps up to
  SCRAPER_SLOT_MAX_ACTIVE_SIZE of responses waiting), or inside it. A
  request done with is never handed out again, so a kill costs at most
  CONCURRENT_REQUESTS plus the responses waiting in the scraper
  (python/tests/test_scrapy_crash.py checks it, kill by kill). Requests
  handed out but still waiting in a download slot come back too, unsent.
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

Memory: the scheduler remembers the fingerprints it stored (up to 2^20;
then it starts over), so that a duplicate is filtered without a Db read,
as Scrapy's RFPDupeFilter keeps every fingerprint; and keeps the requests
it stored (up to 10,000) until they are claimed, so that a claim in the
same run hands out the request enqueued instead of loading a copy. Neither
changes what is stored, when, or what a crash keeps.

Not kept from Scrapy's scheduler: DUPEFILTER_CLASS is not used (hq's dedup
is the filter; duplicates are logged as its RFPDupeFilter logs them: the
first at DEBUG, every one with DUPEFILTER_DEBUG), and a request that cannot
be serialized (a lambda callback, unpicklable meta) is kept in memory, as
Scrapy's disk queues do, and is lost on a crash (stat
scheduler/unserializable).
"""

from __future__ import annotations

import logging
import os
import pickle
import weakref

import hq
from hq._scrapy_common import (SchedulerBase, _fleet_settings,
                               _import_scrapy, request_payload)
from hq._scrapy_fleet import FleetScheduler

logger = logging.getLogger(__name__)

__all__ = ["Scheduler", "FleetScheduler", "dead_letters", "task_key",
           "request_payload", "QUEUE", "GROUP", "SEEN_QUEUE", "SENT_QUEUE"]

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
# Fingerprints of stored requests remembered in memory, to filter a
# duplicate without a Db read (forgotten all at once when full: the Db's
# dedup still filters them).
SEEN_FINGERPRINTS = 1 << 20
# Requests stored by this process and kept in memory until claimed, so that
# a claim need not load them (beyond it they are loaded from the Db).
KEEP_REQUESTS = 10000


class Scheduler(SchedulerBase):
    """SCHEDULER = "hq.scrapy.Scheduler": see this module's docstring.
    from_crawler makes a FleetScheduler instead when the HQ_FLEET_*
    settings are set."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.db = None
        self.queue = None
        self.group = None
        self.sent = None  # The queue SENT_QUEUE.
        self._sent_marked = weakref.WeakSet()  # Requests with a mark written.
        self._starts = weakref.WeakSet()  # The spider's start requests.
        # Fingerprints known to be stored (see _remember).
        self._seen = set()
        # Requests this process stored, by (partition, id.ms, id.seq) of
        # their message: the first claim of one hands out this object
        # rather than loading its payload (KEEP_REQUESTS at most).
        self._kept = {}
        self._dupes_debug = False  # DUPEFILTER_DEBUG: log every duplicate.
        self._dupes_logged = False  # The first duplicate was logged.

    @classmethod
    def from_crawler(cls, crawler):
        if cls is Scheduler and _fleet_settings(crawler.settings) is not None:
            return FleetScheduler.from_crawler(crawler)
        return super().from_crawler(crawler)

    # ---- BaseScheduler

    def open(self, spider):
        self.spider = spider
        self._dupes_debug = self.crawler.settings.getbool("DUPEFILTER_DEBUG")
        path = self._store_path("requests are kept in")
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

    def _close(self, reason):
        dead = self.group.stats().dead_letters
        self.stats.set_value("hq/dead_letters", dead, spider=self.spider)
        if dead:
            logger.error("hq.scrapy: %d requests are dead letters (in "
                         "queue %s), not crawled; hq.scrapy."
                         "dead_letters() lists them, `hq dead --requeue` "
                         "puts them back", dead,
                         self.group.dead_letter_queue)

    def _shut(self):
        self.db.close()
        self.db = None

    def _more_pending(self) -> bool:
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
            if dedup in self._seen:
                self._finish_parent(parent)
                return self._filtered(request)
        try:
            payload = request_payload(request, self.spider)
        except Exception as e:
            # Filtered like the others, through a queue that only
            # remembers dedup keys.
            if dedup and self._seen_queue().put(
                    b"", dedup_key=dedup).duplicate:
                self._remember(dedup)
                self._finish_parent(parent)
                return self._filtered(request)
            self._remember(dedup)
            self._inc("scheduler/unserializable")
            return self._keep_in_memory(request, f"cannot serialize ({e})",
                                        parent)
        r = self.queue.put(payload, topic=self._topic(request),
                           priority=self._level(request.priority),
                           dedup_key=dedup)
        self._remember(dedup)
        self._finish_parent(parent)
        if r.duplicate:
            return self._filtered(request)
        if len(self._kept) < KEEP_REQUESTS:
            self._kept[(r.partition, r.id.ms, r.id.seq)] = request
        self._inc("scheduler/enqueued/hq")
        self._inc("scheduler/enqueued")
        return True

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

    def _remember(self, dedup):
        """`dedup` is a stored request's fingerprint (in the queue, or in
        SEEN_QUEUE): later requests with it are filtered without asking
        the Db. At most SEEN_FINGERPRINTS are remembered."""
        if dedup is None:
            return
        if len(self._seen) >= SEEN_FINGERPRINTS:
            self._seen.clear()
        self._seen.add(dedup)

    def _filtered(self, request) -> bool:
        """Counts a duplicate; logs it as Scrapy's RFPDupeFilter does: the
        first only, or every one with DUPEFILTER_DEBUG."""
        self._inc("dupefilter/filtered")
        if self._dupes_debug:
            logger.debug("Filtered duplicate request: %(request)s",
                         {"request": request}, extra={"spider": self.spider})
        elif not self._dupes_logged:
            self._dupes_logged = True
            logger.debug("Filtered duplicate request: %(request)s - no more "
                         "duplicates will be shown (see DUPEFILTER_DEBUG to "
                         "show all duplicates)", {"request": request},
                         extra={"spider": self.spider})
        return False

    def _nothing_claimable(self):
        if self._paced():
            self._wake_engine()

    def _claim(self):
        while True:
            tasks = self.group.claim(1)
            if not tasks:
                return None
            task = tasks[0]
            kept = self._kept.pop((task.partition, task.id.ms, task.id.seq),
                                  None)
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
            if kept is not None and kept in self._tasks:
                # Enqueued twice (dont_filter), the other still out: a
                # copy, so that each task completes on its own.
                kept = None
            elif kept is not None:
                self._unwrap(kept)  # Handed out before, by another task.
            try:
                request = kept if kept is not None else self._load(task)
            except Exception as e:
                # A request this spider can no longer load (its callback was
                # renamed): given back, an attempt used, until it is
                # dead-lettered.
                logger.error("hq.scrapy: cannot load a stored request (%s)", e)
                self._mark_sent(task)
                self.group.release(task, 60.0)
                continue
            return self._hand_out(task, request)

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
        again in HQ_PACING_POLL seconds, if any is waiting."""
        st = self.group.stats()
        if st.backlog or st.redelivery or st.delayed:
            self._wake_in(self.pacing_poll)

    def _seen_queue(self):
        try:
            return self.db.open_queue(SEEN_QUEUE)
        except hq.NotFound:
            return self.db.create_queue(SEEN_QUEUE)

    def _consumer(self):
        """What completes and rejects the tasks: the group, or None once
        closed."""
        return self.group if self.db is not None else None

    def _topic(self, request) -> str:
        _, httpobj, _ = _import_scrapy()
        return httpobj.urlparse_cached(request).hostname or ""

    def _level(self, priority: int) -> int:
        return min(max(priority + self.levels // 2, 0), self.levels - 1)


def task_key(task) -> str:
    """The topic of a task's sending marks in SENT_QUEUE."""
    return f"{task.partition}/{task.id.ms}-{task.id.seq}"


def dead_letters(jobdir: str, max: int = 1000):
    """The dead-lettered requests of a (stopped) crawl's job directory, as
    (hq.DeadLetter, request dict) pairs."""
    with hq.Db.open(os.path.join(jobdir, "hq"), create_if_missing=False) as db:
        group = db.open_queue(QUEUE).group(GROUP)
        return [(d, pickle.loads(d.payload)) for d in group.dead_letters(max)]
