# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq: persistent, partitioned message queues in one LevelDB directory.

    import hq
    with hq.Db.open("/tmp/frontier") as db:
        q = db.create_queue("pages", partitions=4, priorities=2)
        q.put(b"https://example.com/", topic="example.com", priority=1)
        g = q.group("fetchers", lease=120)
        for task in g.claim(max=100, wait=1.0):
            ...
            g.complete(task)

The binding maps the C++ API (include/hq/*.h) one to one; the contracts are
in hq/_hq.pyi and doc/guide.md ("Python"). hq.scrapy is a Scrapy scheduler
built on it.
"""

from hq._version import __version__  # noqa: F401  (meson's project version)
from hq._types import (  # noqa: F401
    Aborted, AlreadyExists, Cancelled, ConsumerInfo, DataLoss,
    DeadlineExceeded, Error, FailedPrecondition, GroupInfo, GroupStats,
    Internal, InvalidArgument, LaneCheckpoint, LaneCursor, Message, NotFound,
    OutOfRange, PartitionStats, PermissionDenied, QueueOptions, QueueStats,
    RecoveryDrop, ResourceExhausted, SubscriptionStats, SweepStats,
    TopicPacing, Unauthenticated,
    Unavailable, Unimplemented, Unknown, VerifyProblem, VerifyReport)
from hq._hq import (  # noqa: F401
    Db, DeadLetter, Group, MessageId, PendingTask, PutResult, PutResults,
    Queue,
    ReceivedMessage, Scanner, Subscription, Task,
    set_mutex_deadlock_detection)

__all__ = [
    # Handles and values.
    "Db", "Queue", "Group", "Scanner", "Subscription", "Task", "DeadLetter",
    "PendingTask", "MessageId", "PutResult", "PutResults", "ReceivedMessage",
    "Message",
    # Stats and reports.
    "QueueOptions", "QueueStats", "PartitionStats", "GroupStats", "GroupInfo",
    "ConsumerInfo", "LaneCursor", "LaneCheckpoint", "SubscriptionStats",
    "SweepStats", "VerifyReport", "VerifyProblem", "RecoveryDrop",
    "TopicPacing",
    # Errors, one per status code.
    "Error", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded",
    "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
    "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
    "Internal", "Unavailable", "DataLoss", "Unauthenticated",
    # Process-wide settings.
    "set_mutex_deadlock_detection",
]
