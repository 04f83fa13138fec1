# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""The Python side of hq's binding: exceptions and returned records.

Every error of the C++ API (an absl::Status) is raised as the subclass of
hq.Error named after its code; ``error.code`` is the code's name
("NOT_FOUND", ...). Callers act on the class, never on the message text.
Stats and descriptions come back as frozen dataclasses. Durations are float
seconds; times are float Unix seconds (None where C++ has an infinite time).
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional


class Error(Exception):
    """Base class of every error hq raises for a failed call.

    ``detail`` says what the error means beyond its class, where hq knows
    (hq/status.h): "DB_LOCKED" (FailedPrecondition: another process has the
    Db open), "DROP_DURABLE" (drop_queue failed after the drop itself was
    done and durable; the next open finishes it); None otherwise.
    """

    code = "UNKNOWN"
    detail: Optional[str] = None


class Cancelled(Error):
    code = "CANCELLED"


class Unknown(Error):
    code = "UNKNOWN"


class InvalidArgument(Error, ValueError):
    """Bad input: a name, an option out of its limits, an oversized value."""

    code = "INVALID_ARGUMENT"


class DeadlineExceeded(Error, TimeoutError):
    code = "DEADLINE_EXCEEDED"


class NotFound(Error, LookupError):
    """No such Db, queue, group, subscription or dead letter."""

    code = "NOT_FOUND"


class AlreadyExists(Error):
    code = "ALREADY_EXISTS"


class PermissionDenied(Error):
    code = "PERMISSION_DENIED"


class ResourceExhausted(Error):
    code = "RESOURCE_EXHAUSTED"


class FailedPrecondition(Error):
    """The state forbids the call: the Db is closed or held by another
    opener, a task is no longer held, writes are refused after a failed
    one."""

    code = "FAILED_PRECONDITION"


class Aborted(Error):
    code = "ABORTED"


class OutOfRange(Error):
    code = "OUT_OF_RANGE"


class Unimplemented(Error, NotImplementedError):
    code = "UNIMPLEMENTED"


class Internal(Error):
    """The storage failed (an I/O error, a full disk)."""

    code = "INTERNAL"


class Unavailable(Error):
    code = "UNAVAILABLE"


class DataLoss(Error):
    """Stored data is damaged; the message names the file."""

    code = "DATA_LOSS"


class Unauthenticated(Error):
    code = "UNAUTHENTICATED"


# absl::StatusCode values; DO NOT CHANGE (they are absl's).
_ERRORS_BY_CODE = {
    1: Cancelled,
    2: Unknown,
    3: InvalidArgument,
    4: DeadlineExceeded,
    5: NotFound,
    6: AlreadyExists,
    7: PermissionDenied,
    8: ResourceExhausted,
    9: FailedPrecondition,
    10: Aborted,
    11: OutOfRange,
    12: Unimplemented,
    13: Internal,
    14: Unavailable,
    15: DataLoss,
    16: Unauthenticated,
}


@dataclasses.dataclass
class Message:
    """A message for Queue.put_batch (put takes the same as keywords).

    topic, key and dedup_key are bytes or str (UTF-8). partition None: from
    key, or the layout's choice. delay: seconds. not_before: Unix seconds.
    """

    payload: bytes
    topic: Any = None
    key: Any = None
    partition: Optional[int] = None
    priority: int = 0
    delay: float = 0.0
    not_before: Optional[float] = None
    dedup_key: Any = None


_record = dataclasses.dataclass(frozen=True)


@_record
class QueueOptions:
    partitions: int
    priorities: int
    ttl: Optional[float]  # Seconds; None: messages never expire.
    layout: str  # "time" or "topic".
    max_payload_bytes: int


@_record
class PartitionStats:
    partition: int
    lanes: int
    first: Any  # MessageId; meaningful only if messages > 0.
    last: Any
    messages: int  # Counted up to 100000; then messages_exact is False.
    messages_exact: bool
    approximate_bytes: int


@_record
class QueueStats:
    partitions: List[PartitionStats]
    approximate_bytes: int


@_record
class GroupStats:
    backlog: int  # Not yet handed out; counted up to 100000.
    backlog_exact: bool
    in_flight: int  # Under a lease.
    redelivery: int  # Waiting to be delivered again, due or not.
    delayed: int  # Read past, their not-before time still to come.
    dead_letters: int
    oldest_in_flight: float  # Seconds.
    max_cursor_lag: float  # Seconds.
    window_records: int
    lanes: int
    consumers: int  # Ordered groups: live consumers.
    paced_topics: int  # With pacing state: in flight or within interval.


@_record
class TopicPacing:
    """A topic's pacing: at most max_in_flight tasks in flight (0: no
    limit), at least `interval` seconds between two hand-outs."""
    max_in_flight: int
    interval: float


@_record
class ConsumerInfo:
    name: str
    partitions: List[int]
    lease_deadline: Optional[float]


@_record
class LaneCursor:
    partition: int
    priority: int
    topic: str
    scan: Any  # MessageId
    completion: Any  # MessageId


@_record
class GroupInfo:
    name: str
    topics: List[str]
    ordered: bool
    dead_letter_queue: str
    cursors: List[LaneCursor]
    start: str = "earliest"
    """Where the group started: "earliest", "latest", "id" or "time"."""
    start_ids: List[Any] = dataclasses.field(default_factory=list)
    """The first id handed out: one for every partition, or one per
    partition ("latest"); empty for "earliest"."""


@_record
class LaneCheckpoint:
    partition: int
    priority: int
    topic: str
    next: Any  # MessageId
    written: Any  # MessageId


@_record
class SubscriptionStats:
    # Time layout: every lane with a checkpoint. Topic layout: the lanes in
    # memory only (at most max_active_lanes plus those with buffered
    # messages), never every topic's.
    lanes: List[LaneCheckpoint]
    resident_lanes: int  # Lanes in memory...
    active_lanes: int  # ...and of them those in the working set.
    lag: int
    lag_exact: bool
    delivered: int
    failed_attempts: int
    buffered: int
    buffered_bytes: int
    listeners: int


@_record
class SweepStats:
    queues: int
    lanes: int
    deleted: int
    examined: int
    hints_trimmed: int


@_record
class VerifyProblem:
    key_hex: str
    description: str
    file: str  # A damaged table or a file under dropped/; "" for a record.


@_record
class VerifyReport:
    keys: int
    queues: int
    messages: int
    problems: List[VerifyProblem]
    problem_count: int
    tables: int  # Table files whose every block was read.
    blocks: int
    dropped: List[str]  # Files under the Db's dropped/ folder.

    @property
    def ok(self) -> bool:
        return self.problem_count == 0


@_record
class RecoveryDrop:
    """What Db.open's recovery dropped from one damaged log (hq/db.h,
    RecoveryReport::Dropped)."""
    file: str
    offset: int
    bytes: int
    damage: str
    records: int  # Intact records among the dropped bytes.
    torn_tail: bool
    saved_as: str  # Relative to the Db's directory.


@_record
class FleetPartitionStats:
    """One partition an hq.fleet.Agent owns (hq/fleet.h
    AgentStats::Partition)."""
    partition: int
    epoch: int
    serving: bool  # Lease valid and takeover wait over.
    backlog: int  # As GroupStats.backlog.
    in_flight: int
    handoff_lag: int  # Messages in its stream not yet stored.


@_record
class AgentStats:
    """hq.fleet.Agent.stats() (hq/fleet.h AgentStats)."""
    owned: List[FleetPartitionStats]  # By partition.
    published: int  # URLs published by this agent.
    received: int  # URLs stored from the streams.
    duplicates: int  # Of those, dropped as already stored.
    completions_published: int
    coordinator: bool
