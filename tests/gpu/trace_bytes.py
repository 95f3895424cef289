#!/usr/bin/env python3
"""Bytes of records a cuprobe trace holds (the sum of its chunks' used bytes, whatever the trace
format version: the chunk layout is the same), and the file size. Files grow in segments, so the
file size moves in steps; the used bytes are what the records take.
Usage: trace_bytes.py TRACE_OR_RUN_DIR..."""
import os
import struct
import sys

HEADER, CHUNK, CHUNK_HEADER = 64 * 1024, 64 * 1024, 1408


def used(path):
    size = os.path.getsize(path)
    total, chunks = 0, 0
    with open(path, "rb") as f:
        data = f.read()
    off = HEADER
    while off + CHUNK <= size or off + 16 <= size:
        magic, _tid, u, _seq = struct.unpack_from("<IIII", data, off)
        if magic == 0x4B4E4843:
            total += CHUNK_HEADER + u
            chunks += 1
        off += CHUNK
        if off >= size:
            break
    return total, chunks, size


files = []
for p in sys.argv[1:]:
    if os.path.isdir(p):
        files += [os.path.join(p, n) for n in sorted(os.listdir(p)) if n.endswith(".cuprobe")]
    else:
        files.append(p)
grand = 0
for f in files:
    u, c, s = used(f)
    grand += u
    print(f"{os.path.basename(f)}: {u} bytes in {c} chunks (file {s} bytes)")
print(f"total: {grand} bytes used")
