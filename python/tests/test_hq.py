# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""Unit tests of the Python binding (python/hq): every method of Db, Queue,
Group, Scanner and Subscription, the mapping of status codes to exceptions,
the GIL released in blocking calls, and listener errors reported.

Every wait has a deadline; nothing asserts on elapsed time."""

import dataclasses
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import hq

DEADLINE = 30.0  # Seconds any wait below may take before the test fails.


@pytest.fixture
def db(tmp_path):
    with hq.Db.open(tmp_path / "db") as d:
        yield d


def wait_for(predicate, what):
    deadline = time.monotonic() + DEADLINE
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.01)


# ---- Db


def test_open_is_a_context_manager_that_closes(tmp_path):
    with hq.Db.open(tmp_path / "db") as db:
        assert db.path == str(tmp_path / "db")
        assert not db.closed
        q = db.create_queue("q")
    assert db.closed
    with pytest.raises(hq.FailedPrecondition):
        db.list_queues()
    with pytest.raises(hq.FailedPrecondition):
        q.put(b"x")
    db.close()  # A second close is a no-op.


def test_open_errors(tmp_path):
    with pytest.raises(hq.NotFound):
        hq.Db.open(tmp_path / "absent", create_if_missing=False)
    with pytest.raises(hq.InvalidArgument):
        hq.Db.open(tmp_path / "db", delivery_threads=0)
    with hq.Db.open(tmp_path / "db"):
        # One opener at a time, also within a process.
        with pytest.raises(hq.FailedPrecondition):
            hq.Db.open(tmp_path / "db")
    with pytest.raises(hq.AlreadyExists):
        hq.Db.open(tmp_path / "db", error_if_exists=True)


def test_second_process_gets_failed_precondition(tmp_path):
    with hq.Db.open(tmp_path / "db"):
        code = ("import hq, sys\n"
                "try:\n"
                "    hq.Db.open(sys.argv[1])\n"
                "except hq.FailedPrecondition as e:\n"
                "    sys.exit(7 if e.detail == 'DB_LOCKED' else 8)\n")
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db")],
                           timeout=DEADLINE)
        assert r.returncode == 7


def test_exception_hierarchy():
    for cls in (hq.NotFound, hq.InvalidArgument, hq.FailedPrecondition,
                hq.DataLoss, hq.AlreadyExists, hq.ResourceExhausted,
                hq.Internal):
        assert issubclass(cls, hq.Error)
    assert issubclass(hq.InvalidArgument, ValueError)
    assert issubclass(hq.NotFound, LookupError)
    assert hq.NotFound.code == "NOT_FOUND"


def test_every_status_code_raises_its_exception():
    # Through the binding's own mapping (Raise in bind.cc): each of absl's
    # codes, by absl's name for it, raises the class whose `code` is that
    # name, with the message.
    errors = [getattr(hq, n) for n in hq.__all__
              if isinstance(getattr(hq, n), type) and
              issubclass(getattr(hq, n), hq.Error) and n != "Error"]
    assert len({cls.code for cls in errors}) == 16
    for cls in errors:
        with pytest.raises(hq.Error) as e:
            hq._hq._raise_status(cls.code, "what went wrong")
        assert type(e.value) is cls
        assert str(e.value) == "what went wrong"
        assert e.value.detail is None
    with pytest.raises(ValueError):
        hq._hq._raise_status("NOT_A_CODE", "")


def test_real_failures_raise_internal_and_resource_exhausted(tmp_path):
    # A storage failure: the Db's directory is a regular file.
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(hq.Internal):
        hq.Db.open(str(tmp_path / "file"))
    # Past max_open_scanners.
    with hq.Db.open(str(tmp_path / "db"), max_open_scanners=1) as db:
        q = db.create_queue("q")
        q.put(b"x")
        held = q.scan()
        with pytest.raises(hq.ResourceExhausted):
            q.scan()
        assert [m.payload for m in held] == [b"x"]


def test_queues_create_open_list_drop(db):
    q = db.create_queue("pages", partitions=4, priorities=3, ttl=3600,
                        layout="topic", max_payload_bytes=1000)
    assert q.name == "pages"
    assert q.options == hq.QueueOptions(partitions=4, priorities=3, ttl=3600.0,
                                        layout="topic", max_payload_bytes=1000)
    assert db.create_queue("b").options.ttl is None
    assert db.open_queue("pages").options.partitions == 4
    assert db.list_queues() == ["b", "pages"]
    with pytest.raises(hq.AlreadyExists):
        db.create_queue("pages")
    with pytest.raises(hq.InvalidArgument):
        db.create_queue("bad name")
    with pytest.raises(hq.InvalidArgument):
        db.create_queue("x", layout="sideways")
    with pytest.raises(hq.InvalidArgument):
        db.create_queue("x", partitions=0)
    db.drop_queue("pages")
    with pytest.raises(hq.NotFound):
        db.open_queue("pages")
    with pytest.raises(hq.NotFound):
        q.put(b"x")  # The handle stays valid and says so.
    with pytest.raises(hq.NotFound):
        db.drop_queue("pages")


def test_compaction_and_verify(db):
    q = db.create_queue("q", ttl=1)
    q.put(b"x")
    s = db.compact_expired()
    assert isinstance(s, hq.SweepStats) and s.queues == 1
    assert isinstance(db.compact_all(), hq.SweepStats)
    report = db.verify()
    assert report.ok and report.problems == [] and report.queues == 1


def test_damaged_log_recovers_a_prefix_and_says_so(tmp_path):
    path = tmp_path / "db"
    with hq.Db.open(path) as db:
        q = db.create_queue("q")
        for i in range(600):
            q.put(b"%d" % i + b"x" * 100)
    log = max(path.glob("*.log"), key=lambda p: p.stat().st_size)
    data = bytearray(log.read_bytes())
    page = len(data) // 2 // 4096 * 4096
    data[page:page + 4096] = bytes(4096)
    log.write_bytes(bytes(data))
    with hq.Db.open(path) as db:
        [drop] = db.recovery()
        assert isinstance(drop, hq.RecoveryDrop)
        assert drop.file == log.name and drop.records > 0
        assert not drop.torn_tail
        assert (path / drop.saved_as).stat().st_size == drop.bytes
        kept = [int(m.payload.rstrip(b"x")) for m in db.open_queue("q").scan()]
        assert kept == list(range(len(kept))) and 0 < len(kept) < 600
        report = db.verify()
        assert not report.ok
        assert report.problems[0].file == drop.saved_as
        assert report.dropped == [drop.saved_as]
    with pytest.raises(hq.DataLoss):
        (path / "CURRENT").unlink()
        hq.Db.open(path)


def test_reopen_keeps_messages(tmp_path):
    with hq.Db.open(tmp_path / "db") as db:
        db.create_queue("q").put(b"kept", sync=True)
    with hq.Db.open(tmp_path / "db") as db:
        assert [m.payload for m in db.open_queue("q").scan()] == [b"kept"]


# ---- Writing and scanning


def test_put_returns_where_the_message_went(db):
    q = db.create_queue("q", partitions=4, priorities=2)
    r = q.put(b"hello", topic="t", key=b"k", priority=1)
    assert isinstance(r, hq.PutResult) and not r.duplicate
    assert 0 <= r.partition < 4
    assert r.id > hq.MessageId.min()
    r2 = q.put("text", partition=2)
    assert r2.partition == 2
    [m1, m2] = sorted(q.scan(), key=lambda m: m.payload)
    assert (m1.payload, m1.topic, m1.key, m1.priority) == (b"hello", "t", b"k", 1)
    assert (m1.partition, m1.id) == (r.partition, r.id)
    assert m2.payload == b"text" and m2.not_before is None
    assert m1.dedup_key is None


def test_received_message_carries_its_dedup_key(db):
    q = db.create_queue("q")
    q.put(b"a", dedup_key="url-1")
    q.put(b"b", dedup_key=b"\xffraw")
    q.put(b"c")
    got = {m.payload: m.dedup_key for m in q.scan()}
    assert got == {b"a": b"url-1", b"b": b"\xffraw", b"c": None}


def test_put_errors(db):
    q = db.create_queue("q", partitions=2, priorities=2, max_payload_bytes=10)
    with pytest.raises(hq.InvalidArgument):
        q.put(b"x", partition=2)
    with pytest.raises(hq.InvalidArgument):
        q.put(b"x", priority=2)
    with pytest.raises(hq.InvalidArgument):
        q.put(b"x" * 11)
    with pytest.raises(hq.InvalidArgument):
        q.put(b"x", topic="t" * 1025)
    with pytest.raises(hq.InvalidArgument):
        q.put(b"x", delay=float("inf"))
    for t in (1e10, -1e10, float("nan")):  # Past int64 nanoseconds.
        with pytest.raises(hq.InvalidArgument):
            q.put(b"x", not_before=t)
    with pytest.raises(TypeError):
        q.put(42)
    assert list(q.scan()) == []  # Nothing was written.


def test_dedup_key(db):
    q = db.create_queue("q")
    a = q.put(b"1", dedup_key="https://a/")
    b = q.put(b"2", dedup_key=b"https://a/")
    assert b.duplicate and (b.partition, b.id) == (a.partition, a.id)
    assert [m.payload for m in q.scan()] == [b"1"]


def test_put_batch(db):
    q = db.create_queue("q", partitions=2, priorities=2)
    rs = q.put_batch([
        b"a", "b",
        hq.Message(b"c", topic="t", partition=1, priority=1, dedup_key="d"),
        {"payload": b"d", "partition": 0, "key": "k"},
        hq.Message(b"dup", dedup_key="d"),
    ])
    assert len(rs) == 5 and rs[4].duplicate and not rs[2].duplicate
    assert (rs[2].partition, rs[3].partition) == (1, 0)
    assert sorted(m.payload for m in q.scan()) == [b"a", b"b", b"c", b"d"]
    assert q.put_batch([]) == []
    with pytest.raises(hq.InvalidArgument):  # All or nothing.
        q.put_batch([b"e", hq.Message(b"f", partition=9)])
    assert len(list(q.scan())) == 4
    with pytest.raises(TypeError):
        q.put_batch([{"topic": "no payload"}])


def test_put_many_writes_tuples_in_put_order(db):
    q = db.create_queue("q", partitions=2, priorities=2)
    rs = q.put_many([
        (b"a", "t1", 1, "https://a/"),
        (b"b", b"t2"),                      # The rest at put's defaults.
        (b"c", None, None, None),           # None is the default too.
        b"d",                               # A bare payload.
        (bytearray(b"e"), "t1", 0, "https://a/"),  # A duplicate.
    ])
    assert len(rs) == 5
    assert [r.duplicate for r in rs] == [False, False, False, False, True]
    assert rs.duplicates == [False, False, False, False, True]
    assert (rs[4].partition, rs[4].id) == (rs[0].partition, rs[0].id)
    assert rs[-1].id == rs[4].id and isinstance(rs[0], hq.PutResult)
    with pytest.raises(IndexError):
        rs[5]
    assert [r.id for r in list(rs)][:3] == [rs[0].id, rs[1].id, rs[2].id]
    got = {m.payload: (m.topic, m.priority, m.dedup_key) for m in q.scan()}
    assert got == {b"a": ("t1", 1, b"https://a/"), b"b": ("t2", 0, None),
                   b"c": ("", 0, None), b"d": ("", 0, None)}
    # Any order of put's arguments, named once per call.
    rs = q.put_many([(1, "k", b"f", 0.0, None)],
                    fields=("partition", "key", "payload", "delay",
                            "not_before"))
    assert rs[0].partition == 1
    assert [m.key for m in q.scan() if m.payload == b"f"] == [b"k"]
    assert len(q.put_many([])) == 0
    # A generator works as well as a list.
    assert len(q.put_many((b"g%d" % i, "t") for i in range(3))) == 3


def test_put_many_bad_input_writes_nothing(db):
    q = db.create_queue("q", partitions=2, priorities=2)
    q.put(b"before")

    def payloads():
        return sorted(m.payload for m in q.scan())

    with pytest.raises(TypeError, match="item 1: payload must be bytes"):
        q.put_many([(b"ok",), (42,)])
    with pytest.raises(TypeError, match="item 1: a message needs a payload"):
        q.put_many([(b"ok",), (None, "t")])
    with pytest.raises(TypeError, match="item 0: an item must be a tuple"):
        q.put_many([[b"x", "t"]])
    with pytest.raises(TypeError, match="item 0: priority must be an int"):
        q.put_many([(b"x", "t", "high")])
    with pytest.raises(hq.InvalidArgument, match="a tuple of 5 values"):
        q.put_many([(b"x", "t", 0, None, "extra")])
    with pytest.raises(hq.InvalidArgument):  # Partition out of range.
        q.put_many([(b"x", 5)], fields=("payload", "partition"))
    with pytest.raises(hq.InvalidArgument):  # Negative partition.
        q.put_many([(b"x", -1)], fields=("payload", "partition"))
    with pytest.raises(hq.InvalidArgument):  # Priority out of range.
        q.put_many([(b"ok", "t", 0), (b"x", "t", 2)])
    with pytest.raises(hq.InvalidArgument, match="not one of"):
        q.put_many([(b"x",)], fields=("payload", "colour"))
    with pytest.raises(hq.InvalidArgument, match="twice"):
        q.put_many([(b"x",)], fields=("payload", "payload"))
    with pytest.raises(hq.InvalidArgument, match="must name 'payload'"):
        q.put_many([("t",)], fields=("topic",))
    with pytest.raises(TypeError):
        q.put_many(42)
    with pytest.raises(TypeError):
        q.put_many([b"x"], sync="yes")
    assert payloads() == [b"before"]  # All or nothing: nothing was written.


def test_put_batch_items_whose_reading_empties_the_list(db):
    # Reading an item's attributes can run Python code that changes the
    # caller's list: every item is still read, none after it is freed.
    q = db.create_queue("q")
    items = []

    class Item:
        def __init__(self, i):
            self.i = i

        @property
        def payload(self):
            items.clear()
            return b"p%d" % self.i

    items.extend(Item(i) for i in range(50))
    rs = q.put_batch(items)
    assert len(rs) == 50 and items == []
    assert sorted(m.payload for m in q.scan()) == sorted(
        b"p%d" % i for i in range(50))


def test_put_batch_keeps_its_items_while_writing(db):
    # The items' bytes are read in place, not copied: they must stay valid
    # while the write runs without the GIL, whatever another thread does to
    # the caller's list (here: replaces every item, freeing the old ones).
    q = db.create_queue("q")

    def item(i):
        return bytes([65 + i % 26]) * 1000

    items = [item(i) for i in range(200)]
    rows = [(item(i), "t") for i in range(200)]
    stop = threading.Event()

    def churn():
        k = 0
        while not stop.is_set():
            k += 1
            for i in range(200):
                items[i] = item(i + k)
                rows[i] = (item(i + k), "t")

    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(20):
            q.put_batch(items)
            q.put_many(rows)
    finally:
        stop.set()
        t.join()
    got = [m.payload for m in q.scan()]
    assert len(got) == 200 * 40
    assert all(len(p) == 1000 and p == p[:1] * 1000 for p in got)



def test_put_batch_and_put_many_argument_errors(db):
    # Vectorcall methods, as put: Python's own argument errors.
    q = db.create_queue("q")
    with pytest.raises(TypeError, match="missing its argument 'messages'"):
        q.put_batch()
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        q.put_batch([b"x"], True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'snyc'"):
        q.put_batch([b"x"], snyc=True)
    with pytest.raises(TypeError, match="missing its argument 'items'"):
        q.put_many(fields=("payload",))
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        q.put_many([b"x"], ("payload",))
    with pytest.raises(TypeError, match="multiple values for argument"):
        q.put_many([b"x"], items=[b"y"])
    assert list(q.scan()) == []
    assert len(q.put_batch(messages=[b"a"], sync=False)) == 1
    assert len(q.put_many(items=[(b"b",)], fields=["payload"])) == 1
    assert sorted(m.payload for m in q.scan()) == [b"a", b"b"]


class Index:
    """An integer of another library (numpy.int64 and its kind): not an int,
    but it converts itself to one through __index__."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


def test_put_takes_integers_that_convert_themselves(db):
    q = db.create_queue("q", partitions=4, priorities=4)
    r = q.put(b"a", partition=Index(3), priority=Index(2), delay=Index(0))
    assert r.partition == 3
    rs = q.put_many([(b"b", Index(1), Index(3))],
                    fields=("payload", "partition", "priority"))
    assert rs[0].partition == 1
    got = {m.payload: (m.partition, m.priority) for m in q.scan()}
    assert got == {b"a": (3, 2), b"b": (1, 3)}
    with pytest.raises(hq.InvalidArgument, match="partition out of range"):
        q.put(b"x", partition=Index(-1))
    with pytest.raises(ZeroDivisionError):  # __index__'s own error.
        q.put(b"x", priority=BadIndex(0))
    assert len(list(q.scan())) == 2  # Nothing else written.


class BadIndex(Index):
    def __index__(self):
        return 1 // 0


def test_put_argument_errors(db):
    q = db.create_queue("q", partitions=2)
    with pytest.raises(TypeError, match="partition must be an int"):
        q.put(b"x", partition="1")
    with pytest.raises(hq.InvalidArgument, match="partition out of range"):
        q.put(b"x", partition=-1)
    with pytest.raises(TypeError, match="delay must be a number"):
        q.put(b"x", delay="soon")
    with pytest.raises(TypeError, match="topic must be bytes or str"):
        q.put(b"x", topic=1)
    with pytest.raises(TypeError, match="sync must be None, True or False"):
        q.put(b"x", sync=1)
    with pytest.raises(TypeError, match="missing its argument 'payload'"):
        q.put(topic="t")
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        q.put(b"x", "t")
    with pytest.raises(TypeError, match="unexpected keyword argument 'tpic'"):
        q.put(b"x", tpic="t")
    with pytest.raises(TypeError, match="multiple values for argument"):
        q.put(b"x", payload=b"y")
    q.put(bytearray(b"ba"), topic=bytearray(b"t"), delay=1, not_before=0)
    # Keywords built at run time (not interned) and payload by keyword.
    q.put(**{"pay" + "load": b"kw", "top" + "ic": "u", "priority": None})
    assert sorted((m.payload, m.topic) for m in q.scan()) == \
        [(b"ba", "t"), (b"kw", "u")]


def test_complete_takes_a_task_or_tasks_and_refuses_the_rest(db):
    q = db.create_queue("q")
    q.put_batch([b"a", b"b", b"c"])
    g = q.group("g")
    tasks = g.claim(3)
    with pytest.raises(TypeError, match=r"tasks\[1\] must be a Task"):
        g.complete([tasks[0], "not a task"])
    with pytest.raises(TypeError, match="must be a Task or an iterable"):
        g.complete(42)
    assert g.stats().in_flight == 3  # Nothing was completed.
    for call in (g.release, g.reject, lambda t: g.extend(t, 60)):
        with pytest.raises(TypeError, match="task must be a Task"):
            call("not a task")
    with pytest.raises(TypeError):
        hq.Task()
    t = tasks[0]
    assert (t.partition, t.priority, t.attempt, t.key, t.consumer) == \
        (0, 0, 1, b"", "")
    assert t.payload == b"a" and t.topic == "" and t.not_before is None
    before = t.lease_deadline
    g.extend(t, 3600)  # Updates the task object's lease in place...
    assert t.lease_deadline > before + 1000
    assert t.payload == b"a" and t.attempt == 1  # ...and nothing else.
    assert repr(t).startswith("Task(partition=0, id=")
    g.complete(tasks[0])
    g.complete(t for t in tasks[1:])  # Any iterable.
    assert g.stats().in_flight == 0 and g.claim() == []


def test_scan_filters_and_ranges(db):
    q = db.create_queue("q", partitions=3, layout="topic")
    ids = {}
    for i in range(30):
        r = q.put(str(i).encode(), topic="even" if i % 2 == 0 else "odd",
                  partition=i % 3)
        ids[i] = r.id
    assert len(list(q.scan())) == 30
    assert {m.topic for m in q.scan(topics=["odd"])} == {"odd"}
    assert {m.partition for m in q.scan(partitions=[1])} == {1}
    merged = [m.id for m in q.scan()]
    assert merged == sorted(merged)
    lane = list(q.scan(order="lane"))
    assert [m.partition for m in lane] == sorted(m.partition for m in lane)
    some = list(q.scan(start=ids[10], end=ids[20]))
    assert all(ids[10] <= m.id < ids[20] for m in some)
    with pytest.raises(hq.InvalidArgument):
        q.scan(partitions=[3])
    with pytest.raises(hq.InvalidArgument):
        q.scan(order="random")


def test_scanner_is_a_snapshot_and_closes(db):
    q = db.create_queue("q")
    q.put(b"1")
    with q.scan() as s:
        q.put(b"2")
        assert [m.payload for m in s] == [b"1"]
    s = q.scan()
    s.close()
    assert list(s) == []


def test_open_scanner_does_not_outlive_the_db(tmp_path):
    db = hq.Db.open(tmp_path / "db")
    q = db.create_queue("q")
    q.put(b"1")
    s = q.scan()
    db.close()  # Destroys the scanner before the Db.
    with pytest.raises(hq.FailedPrecondition):
        next(s)


def test_message_id():
    a = hq.MessageId(1767225600000, 3)
    assert str(a) == "1767225600000-3"
    assert hq.MessageId.parse("1767225600000-3") == a
    assert a.next() == hq.MessageId(1767225600000, 4)
    assert a < a.next() and hash(a) == hash(hq.MessageId(1767225600000, 3))
    assert a.time == 1767225600.0
    assert hq.MessageId.at_time(1767225600.0001) == hq.MessageId(1767225600001)
    with pytest.raises(hq.InvalidArgument):
        hq.MessageId.parse("nope")
    with pytest.raises(ValueError):
        hq.MessageId(2 ** 48)


def test_queue_stats(db):
    q = db.create_queue("q", partitions=2)
    q.put_batch([hq.Message(b"x", partition=1)] * 3)
    s = q.stats()
    assert isinstance(s, hq.QueueStats) and dataclasses.is_dataclass(s)
    assert [p.messages for p in s.partitions] == [0, 3]
    assert s.partitions[1].messages_exact
    assert s.partitions[1].first <= s.partitions[1].last
    assert q.approximate_bytes() >= 0


# ---- Consumer groups


def test_claim_complete(db):
    q = db.create_queue("q", priorities=2)
    q.put(b"low")
    q.put(b"high", priority=1)
    g = q.group("workers", lease=60)
    assert g.name == "workers" and q.list_groups() == ["workers"]
    tasks = g.claim(max=10)
    assert [t.payload for t in tasks] == [b"high", b"low"]
    assert all(t.attempt == 1 and t.lease_deadline > time.time() for t in tasks)
    st = g.stats()
    assert isinstance(st, hq.GroupStats)
    assert (st.in_flight, st.backlog) == (2, 0)
    g.complete(tasks)
    assert g.stats().in_flight == 0
    assert g.claim() == []
    with pytest.raises(hq.FailedPrecondition):
        g.complete(tasks[0])  # Already completed.
    info = q.inspect_group("workers")
    assert info.name == "workers" and info.dead_letter_queue == g.dead_letter_queue
    assert info.cursors and all(c.completion <= c.scan for c in info.cursors)


def test_release_extend_and_redelivery(db):
    q = db.create_queue("q")
    q.put(b"x")
    g = q.group("g", max_attempts=5)
    [t] = g.claim(lease=60)
    before = t.lease_deadline
    g.extend(t, 600)
    assert t.lease_deadline > before
    g.release(t)
    [again] = g.claim()
    assert again.attempt == 2 and again.id == t.id
    with pytest.raises(hq.FailedPrecondition):
        g.extend(t, 10)  # The old delivery is no longer held.
    with pytest.raises(hq.InvalidArgument):
        g.extend(again, 0)
    with pytest.raises(hq.InvalidArgument):
        g.release(again, -1)
    g.complete([again])


def test_tasks_in_flight_come_back_after_a_restart(tmp_path):
    with hq.Db.open(tmp_path / "db") as db:
        q = db.create_queue("q")
        q.put(b"x")
        [t] = q.group("g").claim()
        assert t.attempt == 1
    with hq.Db.open(tmp_path / "db") as db:
        [t] = db.open_queue("q").group("g").claim()
        assert t.attempt == 2 and t.payload == b"x"


def test_dead_letters_and_requeue(db):
    q = db.create_queue("q")
    q.put(b"poison", topic="t")
    g = q.group("g", max_attempts=2, backoff_base=0, backoff_cap=0)
    for _ in range(2):
        [t] = g.claim()
        g.release(t)
    assert g.claim() == []
    wait_for(lambda: g.stats().dead_letters == 1, "the dead letter")
    [d] = g.dead_letters()
    assert (d.payload, d.topic, d.attempts, d.reason) == (b"poison", "t", 2,
                                                          "released")
    assert g.dead_letters(after=d) == []
    assert g.dead_letter_queue in db.list_queues()
    [r] = g.requeue([d])
    assert not r.duplicate
    [t] = g.claim()
    assert t.payload == b"poison" and t.attempt == 1
    with pytest.raises(hq.NotFound):
        g.requeue([d])


def test_reject_dead_letters_at_once(db):
    q = db.create_queue("q")
    q.put(b"bad", topic="t")
    q.put(b"good", topic="t")
    g = q.group("g", max_attempts=10)
    [t] = g.claim()
    g.reject(t)
    [d] = g.dead_letters()
    assert (d.payload, d.attempts, d.reason) == (b"bad", 1, "rejected")
    with pytest.raises(hq.FailedPrecondition):
        g.reject(t)
    [t] = g.claim()
    assert t.payload == b"good"


def test_delete_group(db):
    q = db.create_queue("q")
    for i in range(3):
        q.put(b"m%d" % i, topic="t")
    g = q.group("g")
    [t] = g.claim()
    g.reject(t)
    [t] = g.claim()
    g.set_topic_pacing("t", max_in_flight=1)
    # A task in flight: refused unless forced.
    with pytest.raises(hq.FailedPrecondition):
        g.delete()
    assert q.list_groups() == ["g"]
    g.delete(force=True)
    assert q.list_groups() == []
    assert "q.dead.g" not in db.list_queues()
    with pytest.raises(hq.NotFound):
        g.claim()
    with pytest.raises(hq.NotFound):
        g.complete(t)
    with pytest.raises(hq.NotFound):
        q.delete_group("g")
    # The name starts afresh: every message, no pacing, no dead letter.
    g = q.group("g")
    assert g.get_topic_pacing("t") is None
    tasks = g.claim(10)
    assert sorted(x.payload for x in tasks) == [b"m0", b"m1", b"m2"]
    g.complete(tasks)
    # Dead letters kept by option, as an ordinary queue.
    q.put(b"bad", topic="t")
    [t] = g.claim()
    g.reject(t)
    q.delete_group("g", keep_dead_letters=True)
    assert q.list_groups() == []
    dead = db.open_queue("q.dead.g")
    assert [m.payload for m in dead.scan()] == [b"bad"]
    with pytest.raises(hq.AlreadyExists):
        q.group("g")
    with pytest.raises(hq.InvalidArgument):
        q.delete_group("bad name")


def test_live_status_is_published_for_the_hq_tool(tmp_path):
    path = tmp_path / "db"
    with hq.Db.open(str(path), status_interval=0.1) as db:
        q = db.create_queue("q")
        q.put(b"x")
        g = q.group("g")
        [t] = g.claim()
        status = path / "hq-status"
        wait_for(status.exists, "the status file")
        views = []

        def claim_published():
            # The hq tool reads it while this process holds the Db; a
            # publication from before the claim shows none in flight.
            out = subprocess.run(
                [os.environ["HQ_CLI"], "--db=" + str(path), "groups",
                 "--json"],
                capture_output=True, text=True, timeout=DEADLINE)
            assert out.returncode == 0, out.stderr
            views.append(json.loads(out.stdout))
            return [x["in_flight"] for x in views[-1]["groups"]] == [1]

        wait_for(claim_published, "the claim in the published status")
        assert views[-1]["view"]["in_flight_visible"] is True
        g.complete(t)
    assert not status.exists()  # Removed at close.
    with pytest.raises(hq.InvalidArgument):
        hq.Db.open(str(tmp_path / "other"), status_interval=0.01)


def test_topic_pacing(tmp_path):
    # Time does not move in this test: a topic's interval never ends.
    with hq.Db.open(str(tmp_path / "db")) as db:
        q = db.create_queue("q", layout="topic")
        for topic in ("a", "b", "slow"):
            for i in range(3):
                q.put(b"%s%d" % (topic.encode(), i), topic=topic)
        g = q.group("g", topic_max_in_flight=2)
        assert g.get_topic_pacing("slow") is None
        g.set_topic_pacing("slow", max_in_flight=1, interval=3600)
        assert g.get_topic_pacing("slow") == hq.TopicPacing(
            max_in_flight=1, interval=3600.0)
        held = g.claim(max=100)
        assert sorted(t.topic for t in held) == ["a", "a", "b", "b", "slow"]
        assert g.claim(max=100) == []
        assert g.stats().paced_topics == 3
        g.complete(held)
        # a and b have room again; slow waits out its hour.
        assert sorted(t.topic for t in g.claim(max=100)) == ["a", "b"]
        with pytest.raises(hq.InvalidArgument):
            g.set_topic_pacing("x", interval=-1)
        with pytest.raises(hq.InvalidArgument):
            q.group("bad", topic_max_in_flight=2_000_000)
    with hq.Db.open(str(tmp_path / "db")) as db:
        g = db.open_queue("q").group("g")
        assert g.get_topic_pacing("slow").interval == 3600.0
        g.clear_topic_pacing("slow")
        assert g.get_topic_pacing("slow") is None


def test_pending_lists_tasks_one_by_one(db):
    q = db.create_queue("q", partitions=2, layout="topic")
    for i in range(6):
        q.put(b"m%d" % i, topic="site%d" % i)
    g = q.group("g")
    held = g.claim(max=4)
    g.release(held[0], retry_after=3600)
    pending = g.pending()
    assert [p.state for p in pending].count("in_flight") == 3
    assert [p.state for p in pending].count("redelivery") == 1
    st = g.stats()
    assert (st.in_flight, st.redelivery) == (3, 1)
    by_id = {(p.partition, p.id.ms, p.id.seq): p for p in pending}
    for t in held[1:]:
        p = by_id[(t.partition, t.id.ms, t.id.seq)]
        assert (p.state, p.topic, p.attempt) == ("in_flight", t.topic, 1)
        assert p.lease_deadline == t.lease_deadline
        assert p.consumer == ""
    back = by_id[(held[0].partition, held[0].id.ms, held[0].id.seq)]
    assert back.lease_deadline is None and back.since > time.time() + 3000
    # Paging with `after` gives the same tasks in the same order.
    paged, after = [], None
    while True:
        page = g.pending(max=1, after=after)
        if not page:
            break
        paged += page
        after = page[-1]
    assert [(p.partition, p.id.ms, p.id.seq) for p in paged] == \
        [(p.partition, p.id.ms, p.id.seq) for p in pending]
    with pytest.raises(hq.InvalidArgument):
        g.pending(max=0)


def test_every_public_name_is_exported():
    # Each name in __all__ exists, and each status code has its exception.
    for name in hq.__all__:
        assert hasattr(hq, name), name
    errors = [n for n in hq.__all__
              if isinstance(getattr(hq, n), type) and
              issubclass(getattr(hq, n), hq.Error) and n != "Error"]
    assert len(errors) == 16  # absl's codes other than OK.


def test_group_start_positions(db):
    q = db.create_queue("q", partitions=2)
    q.put(b"old", partition=0)
    latest = q.group("latest", start="latest")
    earliest = q.group("earliest")
    q.put(b"new", partition=1)
    assert [t.payload for t in latest.claim(max=10)] == [b"new"]
    assert sorted(t.payload for t in earliest.claim(max=10)) == [b"new", b"old"]
    info = q.inspect_group("latest")
    assert info.start == "latest" and len(info.start_ids) == 2
    assert q.inspect_group("earliest").start == "earliest"
    far = q.group("future", start=time.time() + 3600)
    assert far.claim(max=10) == []
    assert q.inspect_group("future").start == "time"
    with pytest.raises(hq.InvalidArgument):
        q.group("bad", start="middle")


def test_every_method_has_a_docstring():
    # help() on a handle's method shows its contract, not only a signature.
    for cls in (hq.Db, hq.Queue, hq.Group, hq.Subscription, hq.Scanner):
        assert (cls.__doc__ or "").strip(), cls.__name__
        for name in dir(cls):
            attr = getattr(cls, name)
            if name.startswith("_") or not callable(attr):
                continue
            doc = attr.__doc__ or ""
            # pybind11 puts the signature first, then the docstring.
            assert doc.split("\n", 1)[-1].strip(), cls.__name__ + "." + name


def test_claim_options_and_errors(db):
    q = db.create_queue("q", partitions=2, layout="topic")
    q.put(b"a", topic="a", partition=0)
    q.put(b"b", topic="b", partition=1)
    g = q.group("g")
    assert [t.payload for t in g.claim(max=5, topics=["b"])] == [b"b"]
    assert [t.payload for t in g.claim(max=5, partitions=[0])] == [b"a"]
    with pytest.raises(hq.InvalidArgument):
        g.claim(max=0)
    with pytest.raises(hq.InvalidArgument):
        q.group("bad name")
    with pytest.raises(hq.InvalidArgument):
        q.group("g", topics=["other"])  # The filter is fixed at creation.


def test_claim_and_complete_argument_errors(db):
    # claim and complete parse their own arguments (vectorcall methods):
    # every bad one is a clear exception that claims or completes nothing.
    q = db.create_queue("q", partitions=2)
    q.put_batch([b"a", b"b"])
    g = q.group("g")
    for kwargs, error, match in [
            (dict(max="1"), TypeError, "max must be an int"),
            (dict(max=1.5), TypeError, "max must be an int"),
            (dict(max=-1), hq.InvalidArgument, "max out of range"),
            (dict(max=2**32), hq.InvalidArgument, "max out of range"),
            (dict(lease="soon"), TypeError, "lease must be a number"),
            (dict(lease=float("nan")), hq.InvalidArgument, "lease must be"),
            (dict(wait=None), TypeError, "wait must be a number"),
            (dict(topics=1), TypeError, "not iterable"),
            (dict(partitions="01"), TypeError, "partitions must be a seq"),
            (dict(partitions=[0.0]), TypeError, "partition must be an int"),
            (dict(partitions=[-1]), hq.InvalidArgument, "partition out of"),
            (dict(consumer=1), TypeError, "consumer must be bytes or str"),
            (dict(lase=1), TypeError, "unexpected keyword argument 'lase'")]:
        with pytest.raises(error, match=match):
            g.claim(**kwargs)
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        g.claim(1, 2)
    with pytest.raises(TypeError, match="multiple values for argument"):
        g.claim(1, max=1)
    assert g.stats().in_flight == 0
    # Numbers of other kinds, and keywords built at run time.
    tasks = g.claim(Index(2), lease=Index(60), wait=0,
                    **{"part" + "itions": (Index(0), 1)})
    assert sorted(t.payload for t in tasks) == [b"a", b"b"]
    with pytest.raises(TypeError, match="missing its argument 'tasks'"):
        g.complete()
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        g.complete(tasks, sync=True)
    assert g.stats().in_flight == 2
    g.complete(tasks=tasks)
    assert g.stats().in_flight == 0


def test_group_max_active_lanes_pages_topics(db):
    q = db.create_queue("q", layout="topic")
    for i in range(50):
        q.put(b"m%d" % i, topic="site%d" % i)
    g = q.group("g", max_active_lanes=3)
    got = []
    for _ in range(50):
        [t] = g.claim()
        got.append(t.payload)
        assert g.stats().lanes <= 3 + 1  # The cap, and the lane in flight.
        g.complete([t])
    assert sorted(got) == sorted(b"m%d" % i for i in range(50))
    assert g.claim() == []
    with pytest.raises(hq.InvalidArgument):
        q.group("h", max_active_lanes=0)


def test_ordered_group_consumers(db):
    q = db.create_queue("q", partitions=2)
    q.put(b"x", partition=0)
    g = q.group("o", ordered=True)
    with pytest.raises(hq.InvalidArgument):
        g.claim()  # An ordered group's claim names its consumer.
    [t] = g.claim(consumer="c1")
    assert t.consumer == "c1"
    [c] = g.consumers()
    assert c.name == "c1" and c.partitions == [0, 1]
    g.leave("c1")
    with pytest.raises(hq.NotFound):
        g.leave("c1")
    with pytest.raises(hq.FailedPrecondition):
        q.group("plain").leave("c1")


def test_waiting_claim_releases_the_gil(db):
    q = db.create_queue("q")
    g = q.group("g")
    got = []
    errors = []
    started = threading.Event()

    def consume():
        started.set()
        try:
            got.extend(g.claim(wait=DEADLINE))
        except Exception as e:  # Reported below.
            errors.append(e)

    t = threading.Thread(target=consume)
    t.start()
    # While the claim blocks, this thread must still run Python and put
    # (were the GIL held, it would get here only after the claim's whole
    # wait, and the claim would return empty): the claim wakes on the write.
    assert started.wait(DEADLINE)
    q.put(b"wake up")
    t.join(DEADLINE)
    assert not t.is_alive() and not errors
    assert [x.payload for x in got] == [b"wake up"]


def test_close_wakes_a_waiting_claim(tmp_path):
    db = hq.Db.open(tmp_path / "db")
    g = db.create_queue("q").group("g")
    errors = []
    started = threading.Event()

    def consume():
        started.set()
        try:
            g.claim(wait=DEADLINE * 10)
        except hq.Error as e:
            errors.append(e)

    t = threading.Thread(target=consume)
    t.start()
    started.wait(DEADLINE)
    db.close()
    t.join(DEADLINE)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], hq.FailedPrecondition)


# ---- Subscriptions


def test_subscribe_delivers_in_order_and_checkpoints(db):
    q = db.create_queue("q")
    got = []
    done = threading.Event()

    def listener(m):
        got.append(m.payload)
        if len(got) == 5:
            done.set()

    q.put_batch([str(i).encode() for i in range(5)])
    sub = q.subscribe("printer", listener, checkpoint_messages=1)
    assert sub.name == "printer"
    assert done.wait(DEADLINE)
    assert got == [b"0", b"1", b"2", b"3", b"4"]
    # A message counts as delivered once its listener has returned, after
    # the listener set `done`.
    wait_for(lambda: sub.stats().delivered == 5, "5 messages delivered")
    sub.checkpoint()
    st = sub.stats()
    assert isinstance(st, hq.SubscriptionStats)
    assert st.delivered == 5 and st.listeners == 1
    assert q.list_subscriptions() == ["printer"]
    assert q.inspect_subscription("printer").lag == 0
    q.unsubscribe("printer")
    assert q.list_subscriptions() == []
    with pytest.raises(hq.FailedPrecondition):
        sub.stats()
    with pytest.raises(hq.NotFound):
        q.unsubscribe("printer")


def test_delete_subscription(db):
    q = db.create_queue("q")
    q.put_batch([b"a", b"b"])
    got = []
    q.subscribe("s", got.append, checkpoint_messages=1)
    wait_for(lambda: len(got) == 2, "two deliveries")
    assert q.list_subscriptions() == ["s"]
    q.delete_subscription("s")
    assert q.list_subscriptions() == []
    with pytest.raises(hq.NotFound):
        q.inspect_subscription("s")
    with pytest.raises(hq.NotFound):
        q.delete_subscription("s")
    with pytest.raises(hq.InvalidArgument):
        q.delete_subscription("bad name")
    # The name starts afresh: every message again, from the earliest.
    again = []
    q.subscribe("s", again.append)
    wait_for(lambda: len(again) == 2, "two deliveries after the delete")
    assert sorted(m.payload for m in again) == [b"a", b"b"]


def test_subscription_resumes_after_reopen(tmp_path):
    got = []
    with hq.Db.open(tmp_path / "db") as db:
        q = db.create_queue("q")
        q.put(b"1")
        done = threading.Event()
        q.subscribe("s", lambda m: (got.append(m.payload), done.set()))
        assert done.wait(DEADLINE)
    with hq.Db.open(tmp_path / "db") as db:
        q = db.open_queue("q")
        q.put(b"2")
        done = threading.Event()
        q.subscribe("s", lambda m: (got.append(m.payload), done.set()))
        assert done.wait(DEADLINE)
    assert got == [b"1", b"2"]


def test_subscription_max_active_lanes_pages_topics(db):
    q = db.create_queue("q", layout="topic")
    for i in range(50):
        q.put(b"m%d" % i, topic="site%d" % i)
    got = []
    sub = q.subscribe("s", lambda m: got.append(m.payload),
                      max_active_lanes=2)
    wait_for(lambda: sub.stats().delivered == 50, "50 messages delivered")
    assert sorted(got) == sorted(b"m%d" % i for i in range(50))
    assert sub.stats().lag == 0
    with pytest.raises(hq.InvalidArgument):
        q.subscribe("t", print, max_active_lanes=0)


def test_subscription_stats_list_lanes_in_memory_not_every_topic(db):
    # 50 topics with a checkpoint, a working set of 2: stats list the lanes
    # in memory; inspect_subscription reads every checkpoint stored.
    q = db.create_queue("q", layout="topic")
    for i in range(50):
        q.put(b"m%d" % i, topic="site%d" % i)
    got = []
    sub = q.subscribe("s", lambda m: got.append(m.payload),
                      max_active_lanes=2)
    wait_for(lambda: sub.stats().delivered == 50, "50 messages delivered")
    sub.checkpoint()
    st = sub.stats()
    assert len(st.lanes) == st.resident_lanes <= 2
    assert st.active_lanes <= 2
    assert st.lag == 0
    assert len(q.inspect_subscription("s").lanes) == 50


def test_listener_exception_is_reported_and_retried(db, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    q = db.create_queue("q")
    q.put(b"x")
    calls = []
    ok = threading.Event()

    def flaky(m):
        calls.append(m.payload)
        if len(calls) == 1:
            raise RuntimeError("listener failed")
        ok.set()

    sub = q.subscribe("s", flaky, retry_base=0.001, retry_cap=0.001)
    assert ok.wait(DEADLINE)
    assert calls == [b"x", b"x"]  # The same message came again.
    assert len(reported) == 1
    assert isinstance(reported[0].exc_value, RuntimeError)
    assert "listener" in str(reported[0].object)
    assert sub.listener_errors == 1 and "listener failed" in sub.last_error
    assert sub.stats().failed_attempts == 1


def test_subscribe_errors(db):
    q = db.create_queue("q", partitions=2)
    with pytest.raises(hq.InvalidArgument):
        q.subscribe("bad name", print)
    with pytest.raises(hq.InvalidArgument):
        q.subscribe("s", print, partitions=[5])
    with pytest.raises(hq.InvalidArgument):
        q.subscribe("s", print, start="middle")
    with pytest.raises(TypeError):
        q.subscribe("s", "not callable")


def test_close_with_a_live_subscription(tmp_path):
    db = hq.Db.open(tmp_path / "db")
    q = db.create_queue("q")
    seen = threading.Event()
    sub = q.subscribe("s", lambda m: seen.set())
    for i in range(100):
        q.put(b"x")
    assert seen.wait(DEADLINE)
    db.close()  # Waits for the listener, which needs the GIL.
    with pytest.raises(hq.FailedPrecondition):
        sub.stats()
