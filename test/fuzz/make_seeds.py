#!/usr/bin/env python3
"""Writes seed inputs for the fuzz targets of test/fuzz into DIR/<target>/.

  make_seeds.py DIR

Seeds are valid encodings of each format (built here from the grammar in
doc/format.md, byte for byte) behind the selector byte each target reads
first, and, for the API target, deterministic random op streams (any bytes
are a valid program). The committed corpus started from these, then grew by
fuzzing and was minimized with libFuzzer's -merge=1.
"""
import os
import random
import struct
import sys


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def lp(b):
    return varint(len(b)) + b


def mid(ms, seq):
    return struct.pack(">Q", (ms << 16) | seq)


def write(dirname, name, data):
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, name), "wb") as f:
        f.write(data)


def records(d):
    ms = 1767225600000
    seeds = {
        "queue": bytes([0]) + b"\x01" + struct.pack(">IHHB", 7, 4, 3, 2)
        + varint(60000) + varint(1 << 20) + varint(ms),
        "queue_infinite": bytes([0]) + b"\x01" + struct.pack(">IHHB", 1, 1, 1, 1)
        + varint(0) + varint(1) + varint(0),
        "group": bytes([1]) + b"\x01" + struct.pack(">I", 3) + varint(2)
        + lp(b"a") + lp(b"bb"),
        "group_ordered": bytes([1]) + b"\x01" + struct.pack(">I", 3)
        + varint(0) + b"\x01",
        "group_start_latest": bytes([1]) + b"\x01" + struct.pack(">I", 3)
        + varint(0) + b"\x02" + b"\x01" + varint(2) + mid(ms, 0) + mid(ms, 7),
        "group_ordered_start_time": bytes([1]) + b"\x01"
        + struct.pack(">I", 3) + varint(1) + lp(b"t") + b"\x03" + b"\x03"
        + varint(1) + mid(ms, 0),
        "sub": bytes([2]) + b"\x01" + struct.pack(">I", 4) + varint(2)
        + struct.pack(">HH", 0, 5) + varint(1) + lp(b"t") + mid(ms, 2),
        "cursor": bytes([3]) + b"\x01" + mid(ms, 9) + mid(ms, 1),
        "checkpoint": bytes([4]) + b"\x01" + mid(ms, 3),
        "task_waiting": bytes([5]) + b"\x01\x02" + varint(2) + varint(ms),
        "task_done": bytes([5]) + b"\x01\x03" + varint(1) + varint(0),
        "dead": bytes([6]) + b"\x01" + struct.pack(">H", 1) + mid(ms, 0)
        + b"\x02\x01" + varint(3) + varint(ms) + lp(b"topic"),
        "dedup": bytes([7]) + struct.pack(">H", 2) + mid(ms, 7),
        "message_all": bytes([8]) + b"\x01\x07" + lp(b"key") + lp(b"dd")
        + varint(ms + 500) + b"payload",
        "message_plain": bytes([8]) + b"\x01\x00" + b"payload",
    }
    for name, data in seeds.items():
        write(d, name, data)
    rng = random.Random(9)
    for i in range(6):  # Round-trip mode: 0x80 | kind, then values.
        write(d, "build_%d" % i, bytes([0x80, i]) + rng.randbytes(60))


def keys(d):
    ms = 1767225600000
    head = b"\x10" + struct.pack(">IHB", 7, 1, 255 - 2)
    write(d, "time_key", b"\x00\x01" + head + mid(ms, 4) + b"topic")
    write(d, "time_fence", b"\x00\x01" + head + mid((1 << 48) - 1, 0xFFFF))
    write(d, "topic_key", b"\x01\x01" + head + struct.pack(">H", 3) + b"abc"
          + mid(ms, 4))
    write(d, "lane_time", b"\x02\x00" + b"\x04" + struct.pack(">IHB", 7, 0, 255))
    write(d, "lane_topic", b"\x02\x01" + b"\x07" + struct.pack(">IHB", 7, 3, 254)
          + struct.pack(">H", 2) + b"xy")
    write(d, "id_text", b"\x03" + b"1767225600000-3")
    rng = random.Random(7)
    for i in range(4):
        write(d, "build_%d" % i, bytes([0x80 | i]) + rng.randbytes(80))


def coding(d):
    rng = random.Random(5)
    write(d, "stream", b"\x00" + bytes([16]) + bytes(range(16))
          + varint(300) + struct.pack(">HIQ", 1, 2, 3) + varint(1 << 40)
          + lp(b"abc") + b"\x80\x00")
    for i in range(3):
        write(d, "roundtrip_%d" % i, b"\x01" + rng.randbytes(40))
    write(d, "successor", b"\x02\x03ab\xff" + b"tail")
    write(d, "successor_ff", b"\x02\x02\xff\xff")


def api(d):
    rng = random.Random(3)
    for i in range(40):
        write(d, "random_%02d" % i, rng.randbytes(rng.choice([64, 256, 1024])))


def main():
    out = sys.argv[1]
    records(os.path.join(out, "records"))
    keys(os.path.join(out, "keys"))
    coding(os.path.join(out, "coding"))
    api(os.path.join(out, "api"))


if __name__ == "__main__":
    main()
