# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""A crash-tolerant Scrapy scheduler on hq (Scrapy 2.8).

    # settings.py
    SCHEDULER = "hq.scrapy.Scheduler"
    JOBDIR = "crawls/somespider-1"     # the hq Db is JOBDIR/hq

What it keeps, whatever moment the process dies at (SIGKILL, power loss
with HQ_SYNC = True):

- Every request enqueued is stored in an hq queue (topic layout, topic = the
  request's host, so per-host pacing can apply), serialized with Scrapy's
  own request_to_dict. Scrapy priorities map onto hq priority levels.
- The request fingerprint is the hq dedup key: the duplicate filter is the
  queue itself, written in the same batch as the request. Requests with
  dont_filter skip it, as in Scrapy.
- next_request claims a request under a lease (HQ_LEASE). The claim is
  completed only once the request is done with: its callback's output was
  taken in (every request it yielded was enqueued), or its errback ran, or
  it failed with no errback, or a downloader middleware replaced it (a retry
  or a redirect: the new request is enqueued first). So every request not
  completed when the process dies is delivered again on the next run: none
  is lost, each is fetched at least once (some twice: those in flight at
  the kill).
- A request that fails over and over ends in hq's dead-letter queue: one
  that RetryMiddleware gave up on (its errback ran, or it failed without
  one, after its last retry) is dead-lettered (reason "rejected") once its
  errback's output was taken in, and one handed out HQ_MAX_ATTEMPTS times
  without completing (it kills or hangs the crawl every time) is
  dead-lettered by a later claim. The count is logged at close and in the
  stats (hq/dead_letters; hq/rejected for this run's rejections), and
  dead_letters(jobdir) lists them; `hq --db=JOBDIR/hq dead requests crawl
  --requeue` puts them back.

Settings: HQ_DIR (default JOBDIR/hq; without either the crawl uses a
temporary Db, deleted at close, and is not resumable), HQ_LEASE (seconds,
default 3600), HQ_MAX_ATTEMPTS (default 5), HQ_PRIORITIES (levels, default
32: Scrapy priorities -16..15, others saturate), HQ_SYNC (default False).

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
                 sync, stats):
        self.crawler = crawler
        self.db_dir = db_dir
        self.lease = lease
        self.max_attempts = max_attempts
        self.levels = priorities
        self.sync = sync
        self.stats = stats
        self.spider = None
        self.db = None
        self.queue = None
        self.group = None
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
        return cls(crawler, _db_dir(s), s.getfloat("HQ_LEASE", 3600.0),
                   s.getint("HQ_MAX_ATTEMPTS", 5), s.getint("HQ_PRIORITIES", 32),
                   s.getbool("HQ_SYNC", False), crawler.stats)

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
        self.group = self.queue.group(GROUP, lease=self.lease,
                                      max_attempts=self.max_attempts)
        st = self.group.stats()
        if st.backlog or st.redelivery:
            logger.info("hq.scrapy: resuming %s: %d requests waiting, %d to "
                        "deliver again", path, st.backlog, st.redelivery)

    def close(self, reason):
        if self.db is None:
            return
        try:
            dead = self.group.stats().dead_letters
            self.stats.set_value("hq/dead_letters", dead, spider=self.spider)
            if dead:
                logger.warning("hq.scrapy: %d requests are dead letters (in "
                               "queue %s); hq.scrapy.dead_letters() lists "
                               "them", dead, self.group.dead_letter_queue)
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
        if not request.dont_filter:
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
        return request

    # ---- Internals

    def _claim(self):
        req_util, _, _ = _import_scrapy()
        while True:
            tasks = self.group.claim(1)
            if not tasks:
                return None
            task = tasks[0]
            try:
                request = req_util.request_from_dict(
                    pickle.loads(task.payload), spider=self.spider)
            except Exception as e:
                # A request this spider can no longer load (its callback was
                # renamed): given back until it is dead-lettered.
                logger.error("hq.scrapy: cannot load a stored request (%s)", e)
                self.group.release(task, 60.0)
                continue
            if task.attempt > 1:
                self._inc("hq/redelivered")
            self._tasks[request] = task
            request.callback = _Done(self, request, request.callback, False)
            request.errback = _Done(self, request, request.errback, True)
            return request

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
        if task is None or self.db is None:
            return
        try:
            if reject:
                self.group.reject(task)
                self._inc("hq/rejected")
            else:
                self.group.complete(task)
        except hq.FailedPrecondition as e:
            # Its lease expired and it was handed out again: that delivery
            # completes it.
            logger.debug("hq.scrapy: %s: %s", request, e)

    def _topic(self, request) -> str:
        _, httpobj, _ = _import_scrapy()
        return httpobj.urlparse_cached(request).hostname or ""

    def _level(self, priority: int) -> int:
        return min(max(priority + self.levels // 2, 0), self.levels - 1)

    def _inc(self, key):
        self.stats.inc_value(key, spider=self.spider)


def dead_letters(jobdir: str, max: int = 1000):
    """The dead-lettered requests of a (stopped) crawl's job directory, as
    (hq.DeadLetter, request dict) pairs."""
    with hq.Db.open(os.path.join(jobdir, "hq"), create_if_missing=False) as db:
        group = db.open_queue(QUEUE).group(GROUP)
        return [(d, pickle.loads(d.payload)) for d in group.dead_letters(max)]
