# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""The fleet suites' cluster: a pytest fixture `fleet_cluster` (session
scope) that runs test/fleet/cluster_server (its path in HQ_FLEET_CLUSTER,
set by test/fleet/meson.build) and yields its addresses as a dict
{"zookeeper": ..., "nats": ..., "dir": ...}: one ZooKeeper node (tick 200
ms) and one nats-server on 127.0.0.1, so agents use replicas=1.

The tests using it are skipped, with the reason, when HQ_FLEET_CLUSTER is
not set (a build without the fleet library, or pytest run by hand) or the
program exits 77 (java, ZooKeeper or nats-server missing: ./hq.sh installs
them). The server is stopped at the end of the session by closing its stdin
(it also stops if this process dies: its stdin reaches EOF, and its nodes
die with it), then killed if it has not exited within a deadline.
"""

import json
import os
import selectors
import subprocess
import time

import pytest

START_DEADLINE = 180.0  # Seconds: JVMs start slowly on a loaded machine.
STOP_DEADLINE = 60.0


def _read_line(proc, deadline):
    """The first line of proc's stdout, or None if it exits or the deadline
    passes first."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not sel.select(timeout=min(left, 1.0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return buf.decode(errors="replace") or None
            buf += chunk
    finally:
        sel.close()
    return buf.split(b"\n", 1)[0].decode(errors="replace")


@pytest.fixture(scope="session")
def fleet_cluster(tmp_path_factory):
    program = os.environ.get("HQ_FLEET_CLUSTER")
    if not program:
        pytest.skip("HQ_FLEET_CLUSTER is not set: hq was built without the "
                    "fleet library, or pytest was not run by meson test")
    stderr_path = tmp_path_factory.mktemp("cluster") / "stderr.log"
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen([program, "--zookeeper_nodes=1",
                                 "--nats_nodes=1"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err)
    try:
        line = _read_line(proc, time.monotonic() + START_DEADLINE)
        if line is not None and line.startswith("SKIP: "):
            proc.wait(timeout=STOP_DEADLINE)
            pytest.skip(f"cluster_server: {line[6:]}")
        if proc.poll() == 77:
            pytest.skip(f"cluster_server exited 77: {line}")
        if line is None or not line.startswith("{"):
            with open(stderr_path, "rb") as f:
                tail = f.read()[-4000:].decode(errors="replace")
            pytest.fail(f"cluster_server did not start (exit "
                        f"{proc.poll()}, output {line!r}): {tail}")
        yield json.loads(line)
    finally:
        try:
            proc.stdin.close()
            proc.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
