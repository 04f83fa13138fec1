# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""What hq.scrapy's two schedulers share: SchedulerBase (the local
hq.scrapy.Scheduler and the fleet's hq._scrapy_fleet.FleetScheduler derive
from it), the completion of a claimed request once it is done with (_Done),
the stored form of a request (request_payload) and the reading of the
settings. hq.scrapy's docstring has the behaviour and the settings; this
module imports neither of the two schedulers.
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import logging
import os
import pickle
import shutil
import tempfile
import weakref
from typing import Optional

import hq

logger = logging.getLogger("hq.scrapy")

_scrapy_modules = None


def _import_scrapy():
    """(scrapy.utils.request, scrapy.utils.httpobj, scrapy.http), imported
    on first use so that `import hq.scrapy` names that module, not
    Scrapy."""
    global _scrapy_modules
    if _scrapy_modules is None:
        import importlib
        _scrapy_modules = (importlib.import_module("scrapy.utils.request"),
                           importlib.import_module("scrapy.utils.httpobj"),
                           importlib.import_module("scrapy.http"))
    return _scrapy_modules


def _method_name(spider, fn):
    """The name of `spider`'s method `fn`, as Request.to_dict(spider=)
    stores it; None if `fn` is not that spider's method of its own name
    (the caller then asks Request.to_dict, which searches every member, or
    raises)."""
    name = getattr(fn, "__name__", None)
    func = getattr(fn, "__func__", None)
    if name is None or func is None:
        return None
    found = getattr(spider, name, None)
    return name if getattr(found, "__func__", None) is func else None


def request_payload(request, spider) -> bytes:
    """`request` as stored: pickle (protocol 4) of the dict that
    request.to_dict(spider=spider) gives (scrapy.utils.request.
    request_from_dict loads it). Raises what to_dict or pickle raise for a
    request that cannot be stored (a callback that is not a method of
    `spider`, unpicklable meta)."""
    callback, errback = request.callback, request.errback
    cb = _method_name(spider, callback) if callback is not None else None
    eb = _method_name(spider, errback) if errback is not None else None
    if (callback is not None and cb is None) or (errback is not None and
                                                 eb is None):
        # Not found by its name: Scrapy's own search, and its error.
        d = request.to_dict(spider=spider)
    else:
        # Request.to_dict's dict, without its search of every member of
        # the spider for the callback's name.
        d = {"url": request.url, "callback": cb, "errback": eb,
             "headers": dict(request.headers)}
        for attr in request.attributes:
            d.setdefault(attr, getattr(request, attr))
        cls = type(request)
        if cls is not _import_scrapy()[2].Request:
            d["_class"] = cls.__module__ + "." + cls.__name__
    return pickle.dumps(d, protocol=4)


def _db_dir(settings) -> Optional[str]:
    if settings.get("HQ_DIR"):
        return settings.get("HQ_DIR")
    if settings.get("JOBDIR"):
        return os.path.join(settings.get("JOBDIR"), "hq")
    return None


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


class SchedulerBase:
    """The machinery both schedulers share: requests kept in memory (those
    that cannot be stored), the claimed request peeked at by
    has_pending_requests, the hand-out of a claimed task (its callbacks
    wrapped to complete it), its completion, and the engine's wake-up.

    A subclass gives _claim() (the next claimed request, or None),
    _consumer() (what completes and rejects tasks; None once closed),
    _more_pending() (whether requests may still come when none is
    claimable), _nothing_claimable() (next_request found none),
    _close(reason) and _shut() (the steps of close, the second also when
    the first raises), and SOURCE (the stats' name of its store)."""

    SOURCE = "hq"

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
        self._wake_call = None  # The pending engine wake-up.
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
                   s.getbool("HQ_SYNC", False), crawler.stats,
                   start_once=s.getbool("HQ_START_ONCE", True),
                   host_max_in_flight=s.getint("HQ_HOST_MAX_IN_FLIGHT", 0),
                   host_interval=s.getfloat("HQ_HOST_INTERVAL", 0.0),
                   host_pacing=s.getdict("HQ_HOST_PACING", {}),
                   pacing_poll=s.getfloat("HQ_PACING_POLL", 0.1))

    # ---- BaseScheduler

    def close(self, reason):
        if self._consumer() is None:
            return
        try:
            if self._wake_call is not None and self._wake_call.active():
                self._wake_call.cancel()
            self._close(reason)
        finally:
            self._shut()
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)

    def has_pending_requests(self) -> bool:
        if self._peeked is not None or self._memory:
            return True
        self._peeked = self._claim()
        if self._peeked is not None:
            return True
        return self._more_pending()

    def next_request(self):
        if self._memory:
            self._inc("scheduler/dequeued/memory")
            self._inc("scheduler/dequeued")
            return heapq.heappop(self._memory)[2]
        request = self._peeked or self._claim()
        self._peeked = None
        if request is not None:
            self._inc(f"scheduler/dequeued/{self.SOURCE}")
            self._inc("scheduler/dequeued")
        else:
            self._nothing_claimable()
        return request

    # ---- Internals

    def _store_path(self, what: str) -> str:
        """The Db's directory: HQ_DIR or JOBDIR/hq (its parent made), or a
        temporary one, deleted at close (logged: `what` is kept there for
        this run only)."""
        path = self.db_dir
        if path is None:
            self._temp_dir = tempfile.mkdtemp(prefix="hq-scrapy-")
            path = self._temp_dir
            logger.warning("hq.scrapy: no JOBDIR or HQ_DIR: %s %s for this "
                           "run only", what, path)
        else:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return path

    def _keep_in_memory(self, request, why, parent=None) -> bool:
        """Keeps `request` in memory (it cannot be stored: `why`); lost if
        the process dies."""
        logger.warning("hq.scrapy: %s %s: kept in memory, lost if the "
                       "process dies", why, request)
        heapq.heappush(self._memory,
                       (-request.priority, next(self._counter), request))
        self._finish_parent(parent)
        return True

    def _load(self, task):
        """The request of a claimed task's payload."""
        req_util, _, _ = _import_scrapy()
        return req_util.request_from_dict(pickle.loads(task.payload),
                                          spider=self.spider)

    def _hand_out(self, task, request):
        """`request`, claimed as `task`, with its callbacks wrapped to
        complete the task once it is done with."""
        if task.attempt > 1:
            self._inc("hq/redelivered")
        self._tasks[request] = task
        request.callback = _Done(self, request, request.callback, False)
        request.errback = _Done(self, request, request.errback, True)
        return request

    def _wake_in(self, delay: float):
        """Has the engine ask for the next request again in `delay`
        seconds, rather than at its next heartbeat (5 s)."""
        slot = getattr(getattr(self.crawler, "engine", None), "slot", None)
        if slot is None or (self._wake_call is not None and
                            self._wake_call.active()):
            return
        from twisted.internet import reactor
        self._wake_call = reactor.callLater(delay, slot.nextcall.schedule)

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

    def _inc(self, key):
        self.stats.inc_value(key, spider=self.spider)
