# Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
"""hq.fleet: one crawl frontier run by N agents (include/hq/fleet.h).

    import hq, hq.fleet
    with hq.fleet.Agent.open("crawler-3", "/var/lib/crawl/frontier",
                             zookeeper="zk1:2181,zk2:2181,zk3:2181",
                             nats="nats://n1:4222,nats://n2:4222") as agent:
        agent.put("https://example.org/")
        for task in agent.claim(max=16, wait=1.0):
            discovered = fetch(task.url)
            agent.put_batch(discovered)    # before completing the task
            agent.complete(task)

Each agent is a process with its own hq Db. A URL's site (site_of: its
host's registered domain) maps to one of a fixed number of virtual
partitions (partition_of); each partition has one owner at a time, recorded
in ZooKeeper with an epoch, and only the owner hands out its URLs, so
per-site pacing holds across the fleet. put publishes a URL to its
partition's NATS JetStream subject and returns once JetStream acknowledged
it; the owner stores it in its Db. So a URL discovered while fetching a task
must be put before that task is completed. The dedup key of a URL is its
text: a URL put twice is stored once.

An agent hands out a partition's tasks only while it holds a lease on its
ownership; FleetTask.valid_until says until when the fetch may start. An
agent restarted within `grace` with the same id and Db resumes its
partitions; one gone longer loses them to the others, which rebuild them
from the streams less the URLs published as completed. doc/fleet.md has
the design and the table of failures.

Errors are the hq.Error classes of the rest of the package
(hq.InvalidArgument for bad options, hq.AlreadyExists for an agent id
another live agent holds, hq.FailedPrecondition after leave() or close() or
for a partition count other than the fleet's, hq.Unavailable when ZooKeeper
or NATS does not answer). Every call releases the GIL; an Agent may be used
from several threads. The fleet library is built only where the ZooKeeper
and NATS C clients are installed; without it importing this module raises
ImportError.
"""

from __future__ import annotations

import hq  # noqa: F401  (hq._hq first: FleetTask.task is an hq.Task)
from hq._types import AgentStats, FleetPartitionStats

try:
    from hq._hq_fleet import Agent, FleetTask, partition_of, site_of
except ImportError as e:  # pragma: no cover - depends on the build
    if getattr(e, "name", None) not in ("hq._hq_fleet", None):
        raise
    raise ImportError(
        "hq.fleet: the fleet library (libhq_fleet) was not built with this "
        "hq, so hq.fleet is not available. It is built where the ZooKeeper "
        "and NATS C clients are installed: on Debian `apt-get install "
        "libzookeeper-mt-dev libnats-dev`, then build hq again "
        "(meson -Dfleet=enabled).", name="hq.fleet") from e

__all__ = ["Agent", "FleetTask", "AgentStats", "FleetPartitionStats",
           "site_of", "partition_of"]
