# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""Type stub and contract of hq._hq, the extension behind the package hq.

Conventions. Durations are float seconds, times float Unix seconds (None
for "none"). Names, topics, keys and dedup keys are str (UTF-8) or bytes;
payloads bytes (a str is encoded as UTF-8). Every failed call raises the
hq.Error subclass named after its absl::StatusCode (hq.NotFound,
hq.InvalidArgument, hq.FailedPrecondition, hq.DataLoss, ...); the C++
header named on each class lists which codes a call can return and why.
An error's ``detail`` names what it means beyond its class where hq knows
("DB_LOCKED", "DROP_DURABLE": hq/status.h), else None.

Threads and the GIL. Db, Queue and Group may be used from any threads. Every
call that may block (storage, a waiting claim, open, compaction, close)
releases the GIL. A Scanner is for one thread at a time. Subscription
listeners run on the Db's delivery threads, holding the GIL while they run.

Lifetimes. Queue, Group, Scanner and Subscription objects keep their Db's
handle alive, never the open Db: after Db.close() (or leaving its `with`
block) every call on any of them raises hq.FailedPrecondition. A Db that is
not closed is closed when the last object using it is collected, or at
interpreter exit.
"""

from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Union

from hq._types import (ConsumerInfo, GroupInfo, GroupStats, Message,
                       QueueOptions, QueueStats, RecoveryDrop,
                       SubscriptionStats, SweepStats, TopicPacing,
                       VerifyReport)

Text = Union[str, bytes]

class MessageId:
    """(ms, seq): unique and increasing within a partition (hq/message.h)."""
    ms: int
    seq: int
    def __init__(self, ms: int, seq: int = 0) -> None: ...
    @staticmethod
    def min() -> MessageId: ...
    @staticmethod
    def max() -> MessageId:
        """Never assigned: the exclusive end of every range."""
    @staticmethod
    def at_time(unix_seconds: float) -> MessageId:
        """The first id at or after a time (for time ranges)."""
    @staticmethod
    def parse(text: str) -> MessageId:
        """Parses "ms-seq"; InvalidArgument otherwise."""
    def next(self) -> MessageId: ...
    @property
    def time(self) -> float: ...
    def __lt__(self, other: MessageId) -> bool: ...
    def __le__(self, other: MessageId) -> bool: ...
    def __gt__(self, other: MessageId) -> bool: ...
    def __ge__(self, other: MessageId) -> bool: ...
    def __hash__(self) -> int: ...

class PutResult:
    """Where a written message went. Made only by hq (not instantiable,
    not subclassable); read-only."""
    partition: int
    id: MessageId
    duplicate: bool
    """True: nothing written; a live message with the dedup key exists and
    partition and id name it."""

class PutResults:
    """What Queue.put_many returns: the PutResults of its items, in their
    order. A read-only sequence that makes each PutResult when it is read
    (a batch whose results are not looked at costs no object per
    message)."""
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> PutResult:
        """Negative indexes count from the end; IndexError past it."""
    def __iter__(self) -> Iterator[PutResult]: ...
    @property
    def duplicates(self) -> List[bool]:
        """PutResult.duplicate of every item, without making the
        PutResults (a crawler's "was this URL new?")."""

class ReceivedMessage:
    """A message read by a scanner or delivered to a listener (a copy)."""
    id: MessageId
    partition: int
    priority: int
    topic: str
    key: bytes
    payload: bytes
    not_before: Optional[float]
    dedup_key: Optional[bytes]
    """The dedup key it was put with; None if none."""

class Task:
    """A claimed message. Pass it back to complete, release or extend of the
    group that handed it out. Made only by claim (not instantiable, not
    subclassable); read-only but for extend, which moves its
    lease_deadline."""
    partition: int
    priority: int
    id: MessageId
    topic: str
    key: bytes
    payload: bytes
    attempt: int
    """1 at the first delivery, +1 each time after, also across restarts."""
    lease_deadline: Optional[float]
    not_before: Optional[float]
    consumer: str

class PendingTask:
    """A task of a group that is not done (hq/group.h PendingTask)."""
    partition: int
    priority: int
    topic: str
    id: MessageId
    attempt: int
    """Times handed out (0: delayed, never yet)."""
    state: str
    """"in_flight", "redelivery" or "delayed"."""
    since: Optional[float]
    """In flight: when it was claimed; otherwise when it is due."""
    lease_deadline: Optional[float]
    """In flight: its lease deadline; None otherwise."""
    consumer: str
    """Ordered groups, in flight: the consumer it was handed to."""

class DeadLetter:
    partition: int
    id: MessageId
    original_partition: int
    original_id: MessageId
    priority: int
    topic: str
    key: bytes
    payload: bytes
    attempts: int
    reason: str
    """"lease_expired", "released", "interrupted" or "rejected"."""
    dead_at: Optional[float]

class Scanner(Iterator[ReceivedMessage]):
    """Iterates a snapshot of a queue taken by Queue.scan (hq/scanner.h).
    A scanner not advanced for the Db's scanner_lease expires: its next
    step raises FailedPrecondition. close() (or `with`) frees it early."""
    def __iter__(self) -> Scanner: ...
    def __next__(self) -> ReceivedMessage:
        """Raises DataLoss on a damaged record, never ends short silently."""
    def close(self) -> None: ...
    def __enter__(self) -> Scanner: ...
    def __exit__(self, *exc: Any) -> bool: ...

class Subscription:
    """A live subscription (hq/subscription.h)."""
    @property
    def name(self) -> str: ...
    def stats(self) -> SubscriptionStats:
        """Delivered, lag and the lanes: a topic layout queue's lanes in
        memory only (resident_lanes, active_lanes), not every topic's.
        FailedPrecondition once unsubscribed or the Db closed."""
    def checkpoint(self) -> None:
        """Writes the checkpoints now."""
    @property
    def listener_errors(self) -> int:
        """Exceptions the listener raised (each also went to
        sys.unraisablehook, and the message came again after a backoff)."""
    @property
    def last_error(self) -> Optional[str]: ...

class Group:
    """A durable consumer group (hq/group.h): at-least-once tasks under a
    lease, completed once or dead-lettered."""
    @property
    def name(self) -> str: ...
    @property
    def dead_letter_queue(self) -> str:
        """ "<queue>.dead.<group>": an ordinary queue, readable by scan."""
    def claim(self, max: int = 1, *, lease: Optional[float] = None,
              wait: float = 0.0, topics: Iterable[Text] = (),
              partitions: Sequence[int] = (),
              consumer: str = "") -> List[Task]:
        """Hands out up to `max` (1..10000) tasks under a lease (None: the
        group's). With `wait`, blocks (GIL released) until something is
        claimable or the wait ends; returns [] if nothing is. Close of the
        Db makes a waiting claim raise FailedPrecondition; a signal
        (Ctrl-C) interrupts it within 0.2 s. Ordered groups need
        `consumer`."""
    def complete(self, tasks: Union[Task, Iterable[Task]]) -> None:
        """All or nothing, one write. FailedPrecondition if any task is no
        longer held (it was handed out again, completed or released).
        Completing a list (a claim's) is the batch form: one call and one
        write for all. TypeError, completing nothing, if an item is not a
        Task."""
    def release(self, task: Task, retry_after: float = 0.0) -> None:
        """Gives a held task back, to come again after retry_after, or be
        dead-lettered if it used max_attempts."""
    def set_topic_pacing(self, topic: Text, *, max_in_flight: int = 0,
                         interval: float = 0.0) -> None:
        """Sets `topic`'s own pacing, durably, in place of the group's."""
    def get_topic_pacing(self, topic: Text) -> Optional[TopicPacing]:
        """`topic`'s own pacing, or None if it follows the group's."""
    def clear_topic_pacing(self, topic: Text) -> None:
        """Removes `topic`'s own pacing (none: OK)."""
    def reject(self, task: Task) -> None:
        """Dead-letters a held task at once (reason 'rejected'), whatever
        its attempts. FailedPrecondition if it is not held."""
    def extend(self, task: Task, lease: float) -> None:
        """Moves the lease deadline to `lease` from now; updates
        task.lease_deadline. Writes nothing."""
    def stats(self) -> GroupStats: ...
    def consumers(self) -> List[ConsumerInfo]:
        """Ordered groups: live consumers and their partitions."""
    def leave(self, consumer: str) -> None: ...
    def delete(self, force: bool = False,
               keep_dead_letters: bool = False) -> None:
        """Deletes the group and all its state (Queue.delete_group): every
        later call of this Group raises NotFoundError."""
    def dead_letters(self, max: int = 1000, *,
                     after: Optional[DeadLetter] = None) -> List[DeadLetter]: ...
    def pending(self, max: int = 1000, *,
                after: Optional[PendingTask] = None) -> List[PendingTask]:
        """The group's pending tasks one by one (ConsumerGroup::ListPending):
        at most `max` (1..10000), in key order, after `after`."""
    def requeue(self, letters: Sequence[DeadLetter]) -> List[PutResult]:
        """Puts dead letters back as new messages, atomically."""

class Queue:
    """A queue of a Db (hq/queue.h). Valid while its Db is open; after
    drop_queue every call raises NotFound."""
    @property
    def name(self) -> str: ...
    @property
    def options(self) -> QueueOptions: ...
    def put(self, payload: Text, *, topic: Optional[Text] = None,
            key: Optional[Text] = None, partition: Optional[int] = None,
            priority: Optional[int] = 0, delay: Optional[float] = 0.0,
            not_before: Optional[float] = None,
            dedup_key: Optional[Text] = None,
            sync: Optional[bool] = None) -> PutResult:
        """Writes one message. sync=None: the Db's sync_writes. False: an
        acknowledged put survives a process crash; True: a power cut too.
        dedup_key: if a live message has it, nothing is written and the
        result has duplicate=True. None for any argument but payload is
        its default. TypeError for a value of the wrong type (partition
        and priority are ints, delay and not_before numbers, sync None or
        a bool), InvalidArgument for one out of range."""
    def put_batch(self, messages: Iterable[Union[Text, Message, dict]], *,
                  sync: Optional[bool] = None) -> List[PutResult]:
        """Writes all messages or none, in one write. An item is a payload,
        an hq.Message, or a dict with Message's fields. TypeError (naming
        the item's index) or InvalidArgument, writing nothing, for a bad
        item."""
    def put_many(self, items: Iterable[Union[Text, tuple]], *,
                 fields: Sequence[str] = ("payload", "topic", "priority",
                                          "dedup_key"),
                 sync: Optional[bool] = None) -> PutResults:
        """put_batch of tuples, the fast batch form (a crawler's links):
        each item is a tuple of the values of put's arguments that
        `fields` names, in that order, or a bare payload. A tuple shorter
        than `fields` leaves the rest at put's defaults, and None is the
        default too. `fields` is any order of payload (required), topic,
        key, partition, priority, delay, not_before and dedup_key, each at
        most once (InvalidArgument otherwise). All or none, one write.
        Errors, writing nothing: TypeError naming the item's index (not a
        tuple or payload, a value of the wrong type, no payload),
        InvalidArgument (a tuple longer than `fields`, a value out of
        range, as put). Returns the PutResults lazily (PutResults)."""
    def scan(self, *, partitions: Sequence[int] = (),
             topics: Iterable[Text] = (), start: Optional[MessageId] = None,
             end: Optional[MessageId] = None,
             order: str = "merged") -> Scanner:
        """A snapshot iterator over ids [start, end). order "merged": one
        stream in (id, partition) order; "lane": lane by lane, constant
        memory."""
    def group(self, name: str, *, topics: Iterable[Text] = (),
              ordered: bool = False, lease: float = 30.0,
              max_attempts: int = 10, backoff_base: float = 1.0,
              backoff_cap: float = 300.0, backoff_jitter: float = 0.2,
              ownership_lease: float = 10.0,
              max_active_lanes: int = 131072,
              start: Union[str, MessageId, float] = "earliest",
              topic_max_in_flight: int = 0,
              topic_interval: float = 0.0) -> Group:
        """The consumer group `name`, created on first use (topics and
        ordered are fixed then; the rest come from each call). `start`,
        where a new group starts ("earliest", "latest": only messages
        written after its creation, a MessageId, or a Unix time), is taken
        only at creation. topic_max_in_flight and topic_interval
        (seconds) pace every topic: at most that many tasks of a topic in
        flight, at least that long between two hand-outs (0: none)."""
    def list_groups(self) -> List[str]: ...
    def delete_group(self, name: str, force: bool = False,
                     keep_dead_letters: bool = False) -> None:
        """Deletes the consumer group `name`: its cursors, tasks, pacing
        and dead letters, and its dead-letter queue unless
        keep_dead_letters (kept as an ordinary queue; a group of the name
        cannot be created again while it exists). A group created later
        under the name starts afresh. FailedPreconditionError while tasks
        it handed out are in flight, unless force (their holders then get
        NotFoundError); NotFoundError if there is no such group."""
    def inspect_group(self, name: str) -> GroupInfo: ...
    def subscribe(self, name: str,
                  listener: Callable[[ReceivedMessage], Any], *,
                  partitions: Sequence[int] = (),
                  topics: Iterable[Text] = (),
                  start: Union[str, MessageId, float] = "earliest",
                  checkpoint_messages: int = 1000,
                  checkpoint_interval: float = 1.0,
                  buffer_messages: int = 1024,
                  buffer_bytes: int = 4 << 20, retry_base: float = 0.1,
                  retry_cap: float = 30.0,
                  max_active_lanes: int = 131072) -> Subscription:
        """Delivers the queue's messages to `listener`, in order per lane,
        at least once, on a delivery thread. If the listener raises, the
        exception goes to sys.unraisablehook and the same message comes
        again after a backoff (the lane waits). start: "earliest",
        "latest", a MessageId or a Unix time; a durable subscription
        resumes from its checkpoints instead. max_active_lanes: with the
        topic layout, at most that many lanes to read are kept in memory
        (the others wait in the queue's lane index, on disk)."""
    def unsubscribe(self, name: str) -> None: ...
    def delete_subscription(self, name: str) -> None:
        """Deletes the subscription `name` and all its state
        (Queue::DeleteSubscription; the same as unsubscribe, named as
        delete_group is): stops it if it is live, deletes its checkpoints
        and lane index position. A later subscribe of the name starts
        afresh. NotFoundError if there is no such subscription,
        InvalidArgumentError for a bad name."""
    def list_subscriptions(self) -> List[str]: ...
    def inspect_subscription(self, name: str) -> SubscriptionStats: ...
    def stats(self) -> QueueStats: ...
    def approximate_bytes(self) -> int: ...

class Db:
    """One LevelDB directory holding any number of queues (hq/db.h)."""
    @staticmethod
    def open(path: str, *, create_if_missing: bool = True,
             error_if_exists: bool = False, sync_writes: bool = False,
             recovery: str = "point_in_time", scanner_lease: float = 60.0,
             max_open_scanners: int = 10000,
             ttl_sweep_interval: float = 60.0, ttl_sweep_batch: int = 1000,
             cache_bytes: int = 64 << 20, bloom_bits_per_key: int = 10,
             write_buffer_bytes: int = 64 << 20, max_open_files: int = 1000,
             delivery_threads: int = 2, status_interval: float = 5.0) -> Db:
        """Opens or creates the Db (hq/options.h has every option's limits).
        FailedPrecondition if another process (detail "DB_LOCKED") or Db
        object holds it.
        recovery: "point_in_time" (a damaged log is cut at its last intact
        record, the rest kept under dropped/) or "absolute_consistency"
        (DataLoss instead); ValueError for any other value.
        status_interval: seconds between publications of the live status
        that the hq tool shows while this process holds the Db (0: none)."""
    def close(self) -> None:
        """Waits for calls in progress, stops subscriptions, frees scanners
        and closes. Idempotent."""
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    def __enter__(self) -> Db: ...
    def __exit__(self, *exc: Any) -> bool: ...
    def create_queue(self, name: str, *, partitions: int = 1,
                     priorities: int = 1, ttl: Optional[float] = None,
                     layout: str = "time",
                     max_payload_bytes: int = 1 << 20) -> Queue: ...
    def open_queue(self, name: str) -> Queue:
        """NotFound if there is no such queue."""
    def drop_queue(self, name: str) -> None: ...
    def list_queues(self) -> List[str]: ...
    def compact_expired(self) -> SweepStats: ...
    def compact_all(self) -> SweepStats: ...
    def verify(self) -> VerifyReport:
        """Reads every table block (checksums) and checks every record;
        problems list damaged blocks and holes recovery dropped, each with
        its file. hq.DataLoss if the walk itself cannot go on."""
    def recovery(self) -> List[RecoveryDrop]:
        """What this open's recovery cut from damaged write-ahead logs
        (empty if they were intact); the bytes are kept under the Db's
        dropped/ folder."""

def set_mutex_deadlock_detection(on: bool) -> None:
    """Process-wide: Abseil's Mutex deadlock detection, which Debian's
    libabsl leaves on (every lock hq takes then also updates one graph
    for the whole process). False gives Abseil's release behaviour, as
    hq_bench runs; call it at start-up, before opening a Db. hq never
    changes it by itself."""
