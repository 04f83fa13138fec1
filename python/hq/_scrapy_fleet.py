# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq.scrapy's fleet mode: FleetScheduler, which
hq.scrapy.Scheduler.from_crawler makes when the HQ_FLEET_* settings are
set (hq.scrapy.FleetScheduler names it). hq.scrapy's docstring ("Fleet
mode") has its settings and behaviour. It shares hq._scrapy_common's
machinery with the local Scheduler, and imports hq.fleet only when it
opens, so that hq.scrapy works where hq was built without the fleet.
"""

from __future__ import annotations

import time

import hq
from hq._scrapy_common import (SchedulerBase, _fleet_settings, logger,
                               request_payload)

# hq.fleet's priorities: 0..7, higher first.
_FLEET_LEVELS = 8


class FleetScheduler(SchedulerBase):
    """The Scheduler's fleet mode (HQ_FLEET_*, see hq.scrapy's docstring):
    requests go through an hq.fleet.Agent instead of a local queue.
    hq.scrapy.Scheduler.from_crawler makes one when the fleet settings are
    set."""

    SOURCE = "fleet"

    def __init__(self, crawler, *args, **kwargs):
        super().__init__(crawler, *args, **kwargs)
        self.fleet = _fleet_settings(crawler.settings)
        self.agent = None
        self._claimed = []  # Claimed tasks not yet handed out, in order.
        self._idle_since = None  # time.monotonic() the agent went idle.
        self._pending_at = 0.0  # When _fleet_pending last asked the agent.
        self._opened_at = 0.0  # When open joined the fleet.

    # ---- BaseScheduler

    def open(self, spider):
        import hq.fleet
        self.spider = spider
        f = self.fleet
        if self.host_pacing_settings:
            raise ValueError("HQ_HOST_PACING is not supported in fleet mode: "
                             "pacing is per site, HQ_HOST_MAX_IN_FLIGHT "
                             "and HQ_HOST_INTERVAL for every site")
        if self.max_attempts < 1:
            raise ValueError(f"HQ_MAX_ATTEMPTS is {self.max_attempts}; it "
                             "must be at least 1")
        if not f["poll"] > 0:
            raise ValueError(f"HQ_FLEET_POLL is {f['poll']}; it must be "
                             "above 0")
        if f["claim_batch"] < 1:
            raise ValueError(f"HQ_FLEET_CLAIM_BATCH is {f['claim_batch']}; "
                             "it must be at least 1")
        path = self._store_path("the fleet agent's Db is")
        pacing = None
        if self.host_max_in_flight or self.host_interval:
            pacing = hq.TopicPacing(max_in_flight=self.host_max_in_flight,
                                    interval=self.host_interval)
        self.agent = hq.fleet.Agent.open(
            f["agent_id"], path, f["zookeeper"], f["nats"], fleet=f["fleet"],
            partitions=f["partitions"], replicas=f["replicas"],
            session_timeout=f["session_timeout"], grace=f["grace"],
            ownership_lease=f["ownership_lease"], task_lease=f["task_lease"],
            max_attempts=self.max_attempts, pacing=pacing,
            site_of=f["site_of"])
        self._idle_since = None
        self._opened_at = time.monotonic()
        self._pending_at = self._opened_at - f["poll"]
        logger.info("hq.scrapy: fleet %s: agent %s joined (Db %s)",
                    f["fleet"], f["agent_id"], path)

    def _close(self, reason):
        # Claimed but never handed to the engine: given back now rather
        # than when their leases run out.
        if self._peeked is not None:
            task = self._tasks.pop(self._peeked, None)
            if task is not None:
                self._claimed.insert(0, task)
            self._peeked = None
        for task in self._claimed:
            self.agent.release(task)
        self._claimed = []
        if reason == "finished":
            # Idle (HQ_FLEET_IDLE_CLOSE): the partitions go to the agents
            # still crawling at once.
            self.agent.leave()

    def _shut(self):
        self.agent.close()
        self.agent = None

    def _more_pending(self) -> bool:
        return self._fleet_pending()

    def __len__(self) -> int:
        return (len(self._memory) + len(self._claimed) +
                (self._peeked is not None))

    def enqueue_request(self, request) -> bool:
        parent = self._parent_of(request)
        self._unwrap(request)
        if parent is not None and parent.url == request.url:
            # A retry (RetryMiddleware's copy of a claimed request): the
            # URL is stored already, so the claimed task is given back, to
            # come again as its next attempt (dead-lettered after
            # HQ_MAX_ATTEMPTS).
            task = self._tasks.pop(parent, None)
            if task is not None:
                self.agent.release(task)
            self._inc("hq/fleet/retried")
            return True
        try:
            payload = request_payload(request, self.spider)
        except Exception as e:
            self._inc("scheduler/unserializable")
            return self._keep_in_memory(request, f"cannot serialize ({e})",
                                        parent)
        try:
            self.agent.put(request.url, payload,
                           priority=self._level(request.priority))
        except hq.InvalidArgument as e:
            # A URL the fleet cannot take (no host, over 1024 bytes).
            self._inc("hq/fleet/invalid_url")
            logger.warning("hq.scrapy: dropped %s: %s", request, e)
            self._finish_parent(parent)
            return False
        except (hq.Unavailable, hq.DeadlineExceeded) as e:
            # NATS did not acknowledge it: crawled here from memory, so
            # that the request that found it can complete.
            self._inc("hq/fleet/unpublished")
            return self._keep_in_memory(request, f"could not put ({e})",
                                        parent)
        self._finish_parent(parent)
        self._idle_since = None
        self._inc("scheduler/enqueued/fleet")
        self._inc("scheduler/enqueued")
        return True

    # ---- Host pacing: per site, from the settings only.

    def set_host_pacing(self, host, max_in_flight=0, interval=0.0):
        raise NotImplementedError(
            "hq.scrapy fleet mode paces every site alike "
            "(HQ_HOST_MAX_IN_FLIGHT, HQ_HOST_INTERVAL)")

    def host_pacing(self, host):
        return None

    def clear_host_pacing(self, host):
        raise NotImplementedError(
            "hq.scrapy fleet mode has no per-host pacing")

    # ---- Internals

    def _claim(self):
        while True:
            if not self._claimed:
                self._claimed = self.agent.claim(self.fleet["claim_batch"])
                if not self._claimed:
                    return None
            task = self._claimed.pop(0)
            if task.valid_until is not None and time.time() >= task.valid_until:
                # Its fetch may no longer start: the partition may have
                # moved.
                self.agent.release(task)
                continue
            try:
                request = self._load(task)
            except Exception as e:
                logger.error("hq.scrapy: cannot load a stored request (%s)", e)
                self.agent.release(task, 60.0)
                continue
            self._idle_since = None
            return self._hand_out(task, request)

    def _nothing_claimable(self):
        # Work comes from other processes too: the engine asks again in
        # HQ_FLEET_POLL seconds.
        self._wake_in(self.fleet["poll"])

    def _fleet_pending(self) -> bool:
        """Whether the crawl may still get work here: a request of this
        process in flight, or an owned partition not yet served or with
        URLs stored, in flight or not yet stored; else, with
        HQ_FLEET_IDLE_CLOSE, whether this process has been idle for less
        than that (without it, always: a fleet process runs until
        stopped). An agent that owns no partition (more processes than
        partitions) counts as busy for its first session timeout only."""
        now = time.monotonic()
        if now - self._pending_at >= self.fleet["poll"]:
            self._pending_at = now
            busy = bool(self._tasks)
            if not busy:
                st = self.agent.stats()
                joining = (now - self._opened_at <
                           self.fleet["session_timeout"])
                busy = (not st.owned and joining) or any(
                    not p.serving or p.backlog or p.in_flight or
                    p.handoff_lag for p in st.owned)
            if busy:
                self._idle_since = None
            elif self._idle_since is None:
                self._idle_since = now
        idle_close = self.fleet["idle_close"]
        if idle_close <= 0 or self._idle_since is None:
            return True
        return now - self._idle_since < idle_close

    def _consumer(self):
        return self.agent

    def _level(self, priority: int) -> int:
        return min(max(priority + _FLEET_LEVELS // 2, 0), _FLEET_LEVELS - 1)
