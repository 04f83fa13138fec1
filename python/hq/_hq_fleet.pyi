# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""Type stub and contract of hq._hq_fleet, the extension behind hq.fleet.

Conventions as hq._hq's: durations are float seconds, times float Unix
seconds; URLs are str (bytes are taken as UTF-8), payloads bytes (a str is
encoded as UTF-8). Every failed call raises the hq.Error subclass named
after its absl::StatusCode; include/hq/fleet.h lists which codes each call
returns and why. Every call releases the GIL; an Agent may be used from
several threads.

Lifetime. close() (or leaving the `with` block, or the Agent being
collected, or interpreter exit) waits for the calls in progress and closes
the C++ Agent: its partitions stay its own for `grace`. Every later call
raises hq.FailedPrecondition. leave() hands the partitions over at once;
calls after it (but close) raise hq.FailedPrecondition.
"""

from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

from hq._hq import MessageId, Task
from hq._types import AgentStats, TopicPacing

Text = Union[str, bytes]
UrlItem = Union[Text, Tuple[Text], Tuple[Text, Text], Tuple[Text, Text, int]]

def site_of(url: Text, rule: str = "site") -> str:
    """The URL's site under `rule` (Agent.open's site_of):
    "site": the registered domain of its host, lower-cased (the last two
    labels, three under a common two-level suffix such as co.uk); an IP
    address or one-label host is its own site (so every port of 127.0.0.1
    is one site). "host": the host, lower-cased. "host:port": the host and
    the port as the URL writes it (none: the host alone).
    InvalidArgument for a URL without a host, or another rule."""

def partition_of(site: Text, partitions: int) -> int:
    """XXH3_64bits(site) % partitions; InvalidArgument for 0 partitions."""

class FleetTask:
    """A claimed URL. Pass it back to complete, release, reject or extend of
    the agent that handed it out."""
    url: str
    site: str
    payload: bytes
    priority: int
    """0..7, higher first."""
    partition: int
    """The virtual partition (partition_of(site, partitions))."""
    epoch: int
    """The ownership epoch it was claimed under."""
    valid_until: Optional[float]
    """Start the fetch before this time or not at all (release the task):
    after it the partition may have moved."""
    attempt: int
    """1 at the first delivery, +1 each time after."""
    lease_deadline: Optional[float]
    id: MessageId
    task: Task
    """The underlying hq.Task (task.key is the URL, task.topic the site)."""

class Agent:
    @staticmethod
    def open(agent_id: str, db_path: Any, zookeeper: str, nats: str, *,
             fleet: str = "default", partitions: int = 1024,
             session_timeout: float = 10.0, grace: float = 30.0,
             ownership_lease: float = 5.0, replicas: int = 3,
             duplicate_window: float = 120.0,
             pacing: Optional[TopicPacing] = None, task_lease: float = 30.0,
             max_attempts: int = 10, site_of: str = "site") -> Agent:
        """Joins the fleet `fleet` (hq/fleet.h AgentOptions): opens the Db
        at db_path (created if missing; one agent per Db), ZooKeeper's
        session (connect string "host:port,host:port") and NATS (URLs
        "nats://host:port,..."). agent_id is 1..64 of [A-Za-z0-9_.-] and
        unique in the fleet; fleet 1..64 of [A-Za-z0-9_-]; partitions
        1..65536, the same in every agent; 0 < ownership_lease <
        session_timeout; replicas 1..5 (1 for a single nats-server). pacing
        (max_in_flight, interval) holds per site; a partition is served
        only ownership_lease + max(pacing.interval, task_lease) after this
        agent first sees it as its own. site_of names the rule that gives
        a URL's site (site_of() above; C++'s AgentOptions::site_of): it
        must be the same in every agent of the fleet.
        Raises InvalidArgument (options), AlreadyExists (a live agent holds
        this id), FailedPrecondition (another partition count than the
        fleet's; the Db is locked), Unavailable (ZooKeeper or NATS
        unreachable)."""
    def close(self) -> None:
        """Publishes completions not yet published, ends the session; the
        partitions stay this agent's for `grace`. Idempotent."""
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Agent: ...
    def __exit__(self, *args: Any) -> bool:
        """close(); never swallows an exception."""
    def put(self, url: Text, payload: Text = b"", priority: int = 0) -> None:
        """Publishes the URL to its partition's stream; returns once
        JetStream acknowledged it. A URL put twice is stored once (its text
        is the dedup key). InvalidArgument for a URL without a site,
        Unavailable when NATS does not acknowledge (put again)."""
    def put_batch(self, urls: Iterable[UrlItem]) -> None:
        """put for each item: a URL, or (url[, payload[, priority]])."""
    def claim(self, max: int = 1, *, lease: Optional[float] = None,
              wait: float = 0.0) -> List[FleetTask]:
        """Up to `max` tasks of the partitions this agent serves, under a
        lease (None: task_lease). With `wait`, blocks until something is
        claimable or the wait ends; [] if nothing is."""
    def complete(self, tasks: Union[FleetTask, Sequence[FleetTask]]) -> None:
        """Completes the tasks and publishes them as completed (so a
        rebuild elsewhere does not hand them out again). A task of a
        partition that moved is only published as completed."""
    def release(self, task: FleetTask, retry_after: float = 0.0) -> None:
        """Gives the task back, to come again after `retry_after` seconds
        (dead-lettered once it used max_attempts)."""
    def reject(self, task: FleetTask) -> None:
        """Dead-letters the task at once. FailedPrecondition if its
        partition moved."""
    def extend(self, task: FleetTask, lease: float) -> None:
        """Moves the task's lease deadline to `lease` seconds from now and
        updates task.lease_deadline and task.valid_until.
        FailedPrecondition if this agent no longer serves its partition."""
    def stats(self) -> AgentStats: ...
    def leave(self) -> None:
        """Leaves the fleet at once (its partitions move without the grace
        period); the Db stays open until close()."""
