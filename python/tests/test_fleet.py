# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq.fleet.Agent against a real ZooKeeper and nats-server on 127.0.0.1
(fleet_cluster.py). Each test runs its own fleet (a fresh name), with small
timings so that partitions are served within seconds; every wait has a
deadline of tens of seconds and nothing is asserted about time."""

import importlib
import sys
import threading
import time
import uuid

import pytest

import hq

fleet = pytest.importorskip(
    "hq.fleet", reason="hq was built without the fleet library")

from fleet_cluster import fleet_cluster  # noqa: E402,F401  (the fixture)

PARTITIONS = 16
DEADLINE = 90.0  # Seconds any one wait may take.


def fleet_name():
    return "t" + uuid.uuid4().hex[:16]


def open_agent(cluster, name, agent_id, tmp_path, **kw):
    # A partition is served ownership_lease + task_lease (5 s) after it is
    # first seen owned; task_lease leaves the tests' claims ample time on a
    # loaded machine before they would be handed out again.
    options = dict(fleet=name, partitions=PARTITIONS, session_timeout=4.0,
                   grace=1.0, ownership_lease=1.0, replicas=1,
                   task_lease=4.0)
    options.update(kw)
    return fleet.Agent.open(agent_id, tmp_path / agent_id,
                            cluster["zookeeper"], cluster["nats"], **options)


def serving(agent):
    return {p.partition for p in agent.stats().owned if p.serving}


def wait_serving(agents):
    """Waits until the agents serve every partition between them, each some
    and none twice (the assignment settled)."""
    end = time.monotonic() + DEADLINE
    while True:
        sets = [serving(a) for a in agents]
        union = set().union(*sets)
        if (len(union) == PARTITIONS and all(sets) and
                sum(map(len, sets)) == PARTITIONS):
            return sets
        assert time.monotonic() < end, f"partitions served: {sets}"
        time.sleep(0.1)


def claim_until(agent, want, deadline=DEADLINE):
    """Claims from `agent` until `want` tasks came or the deadline."""
    out = []
    end = time.monotonic() + deadline
    while len(out) < want and time.monotonic() < end:
        out += agent.claim(max=want - len(out), wait=0.5)
    return out


def test_open_with_bad_options_raises_invalid_argument(tmp_path):
    bad = [
        dict(agent_id="no spaces"),
        dict(fleet="no/slash"),
        dict(partitions=0),
        dict(replicas=0),
        dict(ownership_lease=5.0, session_timeout=5.0),
        dict(session_timeout=float("inf")),
        dict(task_lease=0.0),
        dict(zookeeper=""),
    ]
    for b in bad:
        args = dict(agent_id="a", zookeeper="127.0.0.1:1",
                    nats="nats://127.0.0.1:1")
        args.update(b)
        with pytest.raises(hq.InvalidArgument):
            fleet.Agent.open(args.pop("agent_id"), tmp_path / "db",
                             args.pop("zookeeper"), args.pop("nats"), **args)
    with pytest.raises(hq.InvalidArgument):
        fleet.site_of("no host")
    assert fleet.site_of("https://www.Example.org/a") == "example.org"
    assert fleet.site_of("http://127.0.0.1:8080/") == "127.0.0.1"


def test_put_claim_complete_round_trip(fleet_cluster, tmp_path):
    with open_agent(fleet_cluster, fleet_name(), "a0", tmp_path) as a:
        wait_serving([a])
        a.put("http://www.example.org/page", b"depth=1", priority=3)
        a.put("http://www.example.org/page", b"again")  # Stored once.
        [t] = claim_until(a, 1)
        assert t.url == "http://www.example.org/page"
        assert t.site == "example.org"
        assert t.payload == b"depth=1"
        assert t.priority == 3
        assert t.partition == fleet.partition_of("example.org", PARTITIONS)
        assert t.epoch >= 1
        assert t.attempt == 1
        assert isinstance(t.valid_until, float)
        assert isinstance(t.task, hq.Task)
        assert t.task.key == b"http://www.example.org/page"
        # Given back, it comes again, one attempt more.
        a.release(t)
        [t] = claim_until(a, 1)
        assert t.attempt == 2
        before = t.lease_deadline
        a.extend(t, 60.0)
        assert t.lease_deadline > before
        a.complete(t)
        assert a.claim(max=10, wait=0.5) == []
        # complete takes a list; reject dead-letters.
        a.put_batch(["http://a.test/1", ("http://a.test/2", b"p", 1)])
        tasks = claim_until(a, 2)
        assert sorted(x.url for x in tasks) == ["http://a.test/1",
                                                "http://a.test/2"]
        a.reject(tasks[0])
        a.complete(tasks[1:])
        assert a.claim(max=10, wait=0.5) == []
        with pytest.raises(hq.InvalidArgument):
            a.put("not a url")
        with pytest.raises(TypeError):
            a.put_batch([("http://a.test/3", b"p", 1, "extra")])


def test_two_agents_claim_every_url_once(fleet_cluster, tmp_path):
    name = fleet_name()
    with open_agent(fleet_cluster, name, "a0", tmp_path) as a0, \
            open_agent(fleet_cluster, name, "a1", tmp_path) as a1:
        wait_serving([a0, a1])
        urls = [f"http://www.site{s}.test/p{i}" for s in range(25)
                for i in range(20)]
        a0.put_batch(urls[:250])
        a1.put_batch([(u, u.encode(), 0) for u in urls[250:]])
        claims = {}  # URL -> claims
        parts = {id(a0): set(), id(a1): set()}
        end = time.monotonic() + DEADLINE
        while len(claims) < len(urls):
            assert time.monotonic() < end, (
                f"claimed {len(claims)} of {len(urls)}")
            for a in (a0, a1):
                tasks = a.claim(max=100, wait=0.1)
                for t in tasks:
                    claims[t.url] = claims.get(t.url, 0) + 1
                    assert t.partition == fleet.partition_of(t.site,
                                                             PARTITIONS)
                    parts[id(a)].add(t.partition)
                a.complete(tasks)
        assert set(claims) == set(urls)
        assert [u for u, n in claims.items() if n != 1] == []
        # Each agent claimed only its own partitions, and both claimed.
        assert parts[id(a0)] and parts[id(a1)]
        assert not parts[id(a0)] & parts[id(a1)]
        for a in (a0, a1):
            assert a.claim(max=10, wait=0.5) == []


def test_site_rule_host_port(fleet_cluster, tmp_path):
    # One address, two ports: two sites under "host:port", each its own
    # topic (and pacing), where the default rule makes them one.
    with open_agent(fleet_cluster, fleet_name(), "a0", tmp_path,
                    site_of="host:port") as a:
        wait_serving([a])
        a.put_batch(["http://127.0.0.1:8001/a", "http://127.0.0.1:8002/b"])
        tasks = claim_until(a, 2)
        assert sorted(t.site for t in tasks) == ["127.0.0.1:8001",
                                                 "127.0.0.1:8002"]
        for t in tasks:
            assert t.partition == fleet.partition_of(t.site, PARTITIONS)
        a.complete(tasks)
    with pytest.raises(hq.InvalidArgument):
        open_agent(fleet_cluster, fleet_name(), "a1", tmp_path,
                   site_of="port")


def test_import_without_the_fleet_library_says_what_to_install(monkeypatch):
    # As in a build without libhq_fleet: hq._hq_fleet cannot be imported.
    monkeypatch.delitem(sys.modules, "hq.fleet")
    monkeypatch.setitem(sys.modules, "hq._hq_fleet", None)
    with pytest.raises(ImportError) as e:
        importlib.import_module("hq.fleet")
    assert "libzookeeper-mt-dev libnats-dev" in str(e.value)
    assert "not built" in str(e.value)


def test_a_waiting_claim_releases_the_gil(fleet_cluster, tmp_path):
    # A claim waiting in one thread lets another put the URL it then gets
    # (with the GIL held, the put would wait for the claim's whole wait);
    # close() from another thread ends a waiting claim.
    a = open_agent(fleet_cluster, fleet_name(), "a0", tmp_path)
    try:
        wait_serving([a])
        got = []
        waiter = threading.Thread(
            target=lambda: got.extend(a.claim(max=1, wait=DEADLINE)))
        waiter.start()
        time.sleep(0.5)  # Most likely inside the claim by now.
        a.put("http://www.example.org/late")
        waiter.join(DEADLINE + 30)
        assert [t.url for t in got] == ["http://www.example.org/late"]
        a.complete(got)
        errors = []

        def wait_for_nothing():
            try:
                a.claim(max=1, wait=DEADLINE)
            except hq.FailedPrecondition as e:
                errors.append(e)

        waiter = threading.Thread(target=wait_for_nothing)
        waiter.start()
        time.sleep(0.5)  # As above; either way the claim raises
        a.close()        # FailedPrecondition.
        waiter.join(DEADLINE)
        assert not waiter.is_alive()
        assert len(errors) == 1
    finally:
        a.close()


def test_stats(fleet_cluster, tmp_path):
    with open_agent(fleet_cluster, fleet_name(), "a0", tmp_path) as a:
        wait_serving([a])
        a.put_batch([f"http://s{i}.test/" for i in range(10)])
        end = time.monotonic() + DEADLINE
        while a.stats().received < 10:
            assert time.monotonic() < end
            time.sleep(0.1)
        s = a.stats()
        assert isinstance(s, fleet.AgentStats)
        assert s.published == 10
        assert s.received == 10
        assert s.duplicates == 0
        assert s.coordinator is True
        assert [p.partition for p in s.owned] == list(range(PARTITIONS))
        p = s.owned[0]
        assert isinstance(p, fleet.FleetPartitionStats)
        assert p.serving and p.epoch >= 1
        assert sum(p.backlog for p in s.owned) == 10
        tasks = claim_until(a, 10)
        assert sum(p.in_flight for p in a.stats().owned) == 10
        a.complete(tasks)
        end = time.monotonic() + DEADLINE
        while a.stats().completions_published < 10:
            assert time.monotonic() < end
            time.sleep(0.1)


def test_leave_then_put_fails(fleet_cluster, tmp_path):
    a = open_agent(fleet_cluster, fleet_name(), "a0", tmp_path)
    a.leave()
    with pytest.raises(hq.FailedPrecondition):
        a.put("http://example.org/")
    with pytest.raises(hq.FailedPrecondition):
        a.claim()
    a.close()
    a.close()


def test_context_manager_closes(fleet_cluster, tmp_path):
    name = fleet_name()
    with open_agent(fleet_cluster, name, "a0", tmp_path) as a:
        assert not a.closed
    assert a.closed
    with pytest.raises(hq.FailedPrecondition):
        a.put("http://example.org/")
    with pytest.raises(hq.FailedPrecondition):
        a.stats()
    # Its Db and id are free again: the same agent opens anew.
    with open_agent(fleet_cluster, name, "a0", tmp_path) as b:
        assert not b.closed
