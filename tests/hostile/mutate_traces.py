#!/usr/bin/env python3
"""Damaged copies of a real cuprobe trace, for testing that readers survive hostile input.

    mutate_traces.py TRACE OUT_DIR [-n COUNT] [--first I] [--seed S] [--manifest FILE]

Writes OUT_DIR/mutant-IIIII.cuprobe for I in [first, first + COUNT), each a copy of TRACE (cut
after its last claimed chunk) with one to three mutations aimed at what a reader trusts: the
file header (chunk size, chunks claimed, state, clock, anchors), chunk headers (magic, thread,
used bytes, sequence number, counters), record headers (type, size, API id) and the length and
count fields inside records (ApiInfo name_len/fields_len/count_slot, ProcessInfo text lengths,
string lengths, stack frame counts, module and fault-rule text lengths), plus bit flips anywhere,
random bytes, zeroed ranges, truncation at any length, and duplicated, swapped or appended chunks.

With --structural, each mutant has exactly one change, to what locates records (a chunk header's
magic, thread, used size or sequence number; a record's type or size; the claimed chunk count; a
chunk copied over another; the file cut at a chunk boundary): the mutation test of
tests/shim/hostile_traces_test.cpp asserts that every such change that alters the analysis is
reported.

Mutant I depends only on TRACE, the seed and I (not on COUNT or --first), so any mutant can be
made again alone. One line per mutant, "NAME<TAB>what was done", goes to the manifest (default
OUT_DIR/manifest.tsv). The layout comes from schema/cuprobe/trace_format.h; python3 stdlib only.
"""

import argparse
import os
import random
import struct
import sys

HEADER_SIZE = 64 * 1024  # kFileHeaderSize
CHUNK_SIZE = 64 * 1024  # kChunkSize
CHUNK_HEADER_SIZE = 1408  # kChunkHeaderSize
CHUNK_MAGIC = 0x4B4E4843

# FileHeader fields: name -> (offset, width)
FILE_HEADER = {
    "magic": (0, 8), "version": (8, 4), "header_size": (12, 4), "features": (16, 8),
    "chunk_size": (24, 4), "pid": (28, 4), "chunks_claimed": (32, 4), "state": (36, 4),
    "end_signal": (40, 4), "clock_kind": (44, 4), "ticks_per_ns": (48, 8),
    "start.ticks": (56, 8), "start.mono_ns": (64, 8), "start.real_ns": (72, 8),
    "end.ticks": (80, 8), "end.mono_ns": (88, 8), "end.real_ns": (96, 8),
    "proc_start_time": (104, 8), "stats[0]": (112, 8), "stats[3]": (136, 8),
    "fault_matched[0]": (240, 8), "fault_injected[0]": (504, 8), "fault_matched[32]": (496, 8),
}
FILE_HEADER_END = 768

# ChunkHeader fields, relative to the chunk.
CHUNK_HEADER = {
    "magic": (0, 4), "tid": (4, 4), "used": (8, 4), "seq": (12, 4),
    "anchor_ticks": (16, 8), "anchor_mono_ns": (24, 8),
    "counts[0][0]": (32, 8), "counts[11][8]": (32 + (11 * 9 + 8) * 8, 8),
    "quiet_counts[0]": (896, 8), "quiet_counts[63]": (896 + 63 * 8, 8),
}

# Every record: RecordHeader.
RECORD_HEADER = {"type": (0, 1), "flags": (1, 1), "size": (2, 2), "aux": (4, 2), "aux2": (6, 2)}
# Fields of each record type (RecordType), relative to the record.
RECORD_FIELDS = {
    1: {"ret": (8, 4), "dur_ticks": (12, 4), "start_ticks": (16, 8), "tail[0]": (24, 8), "tail[1]": (32, 8)},  # kCall
    2: {"library": (8, 2), "name_len": (10, 2), "fields_len": (12, 4), "flags": (16, 8), "count_slot": (24, 4),
        "text": (32, 1)},  # kApiInfo
    3: {"pid": (8, 4), "rank": (16, 4), "hostname_len": (32, 4), "cmdline_len": (36, 4), "exe_len": (40, 4),
        "cwd_len": (44, 4), "text": (48, 1)},  # kProcessInfo
    4: {"id": (8, 4), "len": (12, 4), "text": (16, 1)},  # kString
    5: {"index": (8, 4), "cc_major": (12, 4), "total_mem": (24, 8), "pci_domain": (48, 4), "name[0]": (64, 1),
        "name[255]": (319, 1)},  # kDeviceInfo
    6: {"ticks": (8, 8)},  # kThreadEnd
    7: {"ticks": (8, 8), "mono_ns": (16, 8)},  # kAnchor
    8: {"signal": (8, 4), "api_in_flight": (12, 2), "ticks": (16, 8), "in_flight_start_ticks": (24, 8)},  # kCrash
    9: {"key": (8, 4), "value": (16, 8)},  # kProperty
    10: {"index": (8, 4), "scope": (12, 4), "name_len": (16, 4), "text_len": (20, 4)},  # kFaultRule
    11: {"id": (8, 4), "n_native": (12, 2), "n_python": (14, 2), "pcs[0]": (16, 8)},  # kStack
    12: {"bias": (8, 8), "start": (16, 8), "end": (24, 8), "path_len": (32, 4), "build_id_len": (36, 4)},  # kModule
}
RECORD_NAMES = {1: "call", 2: "api", 3: "process", 4: "string", 5: "device", 6: "thread_end", 7: "anchor",
                8: "crash", 9: "property", 10: "fault_rule", 11: "stack", 12: "module"}


def u32(data, off):
    return struct.unpack_from("<I", data, off)[0] if off + 4 <= len(data) else 0


def u16(data, off):
    return struct.unpack_from("<H", data, off)[0] if off + 2 <= len(data) else 0


class Layout:
    """Where the chunks and records of a (well-formed) trace are."""

    def __init__(self, data):
        claimed = u32(data, 32)
        in_file = max(0, (len(data) - HEADER_SIZE) // CHUNK_SIZE)
        self.chunks = []  # chunk offsets
        self.records = []  # (offset, type, size)
        for i in range(min(claimed, in_file)):
            base = HEADER_SIZE + i * CHUNK_SIZE
            if u32(data, base) != CHUNK_MAGIC:
                continue
            self.chunks.append(base)
            used = min(u32(data, base + 8), CHUNK_SIZE - CHUNK_HEADER_SIZE)
            pos = base + CHUNK_HEADER_SIZE
            end = pos + used
            while pos + 8 <= end:
                rtype = data[pos]
                size = u16(data, pos + 2)
                if size < 8 or size % 8 or pos + size > end:
                    break
                self.records.append((pos, rtype, size))
                pos += size


def interesting(rng, width, file_size):
    bits = width * 8
    top = (1 << bits) - 1
    choices = [0, 1, 2, 7, 8, 255, top, top - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1,
               rng.randrange(0, top + 1), rng.randrange(0, 64)]
    if width >= 2:
        choices += [0x8000 & top, 0xFFF8 & top, CHUNK_HEADER_SIZE & top, 4096 & top]
    if width >= 4:
        choices += [CHUNK_SIZE, CHUNK_SIZE - CHUNK_HEADER_SIZE, CHUNK_SIZE - CHUNK_HEADER_SIZE + 8, file_size,
                    file_size // CHUNK_SIZE + 1, 0x10000000, 0x7FFFFFFF]
    return rng.choice(choices) & top


def put(data, off, width, value):
    if off < 0 or off + width > len(data):
        return False
    data[off:off + width] = value.to_bytes(width, "little")
    return True


def set_field(rng, data, off, width, label):
    if rng.random() < 0.25 and width <= 8:
        # Nudge the value the field has: off by one either way, doubled, negated.
        old = int.from_bytes(data[off:off + width], "little") if off + width <= len(data) else 0
        top = (1 << (width * 8)) - 1
        value = rng.choice([old + 1, old - 1, old * 2, old + 8, -old]) & top
    else:
        value = interesting(rng, width, len(data))
    if put(data, off, width, value):
        return f"{label}={value:#x}"
    return None


def mutate_once(rng, data, layout):
    kind = rng.choices(
        ["file_header", "chunk_header", "record_header", "record_field", "bitflip", "random_bytes", "zero_range",
         "truncate", "duplicate_chunk", "swap_chunks", "append_chunk"],
        weights=[10, 12, 12, 22, 10, 6, 6, 8, 6, 3, 5])[0]
    if kind == "file_header":
        name = rng.choice(list(FILE_HEADER))
        off, width = FILE_HEADER[name]
        return set_field(rng, data, off, width, f"header.{name}")
    if kind == "chunk_header" and layout.chunks:
        i = rng.randrange(len(layout.chunks))
        name = rng.choice(list(CHUNK_HEADER))
        off, width = CHUNK_HEADER[name]
        return set_field(rng, data, layout.chunks[i] + off, width, f"chunk{i}.{name}")
    if kind == "record_header" and layout.records:
        off, rtype, _ = rng.choice(layout.records)
        name = rng.choice(list(RECORD_HEADER))
        foff, width = RECORD_HEADER[name]
        return set_field(rng, data, off + foff, width, f"{RECORD_NAMES.get(rtype, rtype)}@{off}.{name}")
    if kind == "record_field" and layout.records:
        # Records of the rarer types are the interesting ones: pick a type first, then a record.
        types = sorted({r[1] for r in layout.records if r[1] in RECORD_FIELDS})
        if not types:
            return None
        rtype = rng.choice(types)
        off, _, size = rng.choice([r for r in layout.records if r[1] == rtype])
        name = rng.choice(list(RECORD_FIELDS[rtype]))
        foff, width = RECORD_FIELDS[rtype][name]
        if foff + width > size:
            return None
        return set_field(rng, data, off + foff, width, f"{RECORD_NAMES[rtype]}@{off}.{name}")
    if kind == "bitflip":
        # Mostly where the data is: the header's fields and the records.
        if layout.records and rng.random() < 0.7:
            off, _, size = rng.choice(layout.records)
            pos = off + rng.randrange(size)
        elif rng.random() < 0.5:
            pos = rng.randrange(FILE_HEADER_END)
        else:
            pos = rng.randrange(len(data))
        if pos >= len(data):
            return None
        bit = rng.randrange(8)
        data[pos] ^= 1 << bit
        return f"bitflip@{pos}.{bit}"
    if kind == "random_bytes":
        pos = rng.randrange(len(data))
        n = min(rng.choice([1, 2, 4, 8, 16, 64, 512]), len(data) - pos)
        data[pos:pos + n] = bytes(rng.randrange(256) for _ in range(n))
        return f"random@{pos}+{n}"
    if kind == "zero_range":
        if layout.chunks and rng.random() < 0.3:
            pos = rng.choice(layout.chunks) + rng.choice([0, CHUNK_HEADER_SIZE])
            n = rng.choice([8, CHUNK_HEADER_SIZE, CHUNK_SIZE - CHUNK_HEADER_SIZE])
        else:
            pos = rng.randrange(len(data))
            n = rng.choice([8, 24, 256, 4096, 65536])
        n = min(n, len(data) - pos)
        data[pos:pos + n] = bytes(n)
        return f"zero@{pos}+{n}"
    if kind == "truncate":
        r = rng.random()
        if r < 0.2:
            size = rng.randrange(0, FILE_HEADER_END + 64)  # inside the header's fields
        elif r < 0.3 and layout.chunks:
            size = rng.choice(layout.chunks) + rng.randrange(CHUNK_HEADER_SIZE + 1)  # inside a chunk header
        elif r < 0.6 and layout.records:
            off, _, size_ = rng.choice(layout.records)
            size = off + rng.randrange(size_ + 1)  # inside a record
        else:
            size = rng.randrange(len(data) + 1)
        del data[size:]
        return f"truncate@{size}"
    if kind == "duplicate_chunk" and len(layout.chunks) >= 2:
        a, b = rng.sample(layout.chunks, 2)
        data[b:b + CHUNK_SIZE] = data[a:a + CHUNK_SIZE]
        return f"duplicate_chunk@{a}->{b}"
    if kind == "swap_chunks" and len(layout.chunks) >= 2:
        a, b = rng.sample(layout.chunks, 2)
        ca, cb = bytes(data[a:a + CHUNK_SIZE]), bytes(data[b:b + CHUNK_SIZE])
        data[a:a + CHUNK_SIZE], data[b:b + CHUNK_SIZE] = cb, ca
        return f"swap_chunks@{a}<->{b}"
    if kind == "append_chunk" and layout.chunks:
        # A copy of a chunk (same thread, same sequence number) after the last, counted as claimed.
        a = rng.choice(layout.chunks)
        end = HEADER_SIZE + ((len(data) - HEADER_SIZE + CHUNK_SIZE - 1) // CHUNK_SIZE) * CHUNK_SIZE
        data.extend(bytes(end - len(data)))
        data.extend(data[a:a + CHUNK_SIZE])
        put(data, 32, 4, (len(data) - HEADER_SIZE) // CHUNK_SIZE)
        return f"append_chunk@{a}"
    return None


def mutate_structure(rng, data, layout):
    """One change to what the reader relies on to find records: a byte of a chunk header's magic,
    thread, used size or sequence number, of a record's type or size, of the claimed chunk count;
    a chunk copied over another; the file cut at a chunk boundary."""
    kind = rng.choices(["chunk_header", "record_type", "record_size", "claimed", "duplicate_chunk", "cut"],
                       weights=[30, 15, 35, 8, 6, 6])[0]
    if kind == "chunk_header" and layout.chunks:
        i = rng.randrange(len(layout.chunks))
        field = rng.choice(["magic", "tid", "used", "seq"])
        pos = layout.chunks[i] + CHUNK_HEADER[field][0] + rng.randrange(4)
        label = f"chunk{i}.{field}"
    elif kind in ("record_type", "record_size") and layout.records:
        off, rtype, _ = rng.choice(layout.records)
        pos = off + (0 if kind == "record_type" else 2 + rng.randrange(2))
        label = f"{RECORD_NAMES.get(rtype, rtype)}@{off}.{kind[7:]}"
    elif kind == "claimed":
        pos = 32 + rng.randrange(4)
        label = "header.chunks_claimed"
    elif kind == "duplicate_chunk" and len(layout.chunks) >= 2:
        a, b = rng.sample(layout.chunks, 2)
        data[b:b + CHUNK_SIZE] = data[a:a + CHUNK_SIZE]
        return f"duplicate_chunk@{a}->{b}"
    elif kind == "cut" and len(layout.chunks) >= 2:
        size = rng.choice(layout.chunks[1:])
        del data[size:]
        return f"truncate@{size}"
    else:
        return None
    if rng.random() < 0.7:
        bit = rng.randrange(8)
        data[pos] ^= 1 << bit
        return f"{label}: bitflip@{pos}.{bit}"
    value = rng.randrange(256)
    if value == data[pos]:
        value ^= 0x80
    data[pos] = value
    return f"{label}: byte@{pos}={value:#x}"


def make_mutant(original, seed, index, structural=False):
    rng = random.Random(f"{seed}:{index}")
    if structural:
        data = bytearray(original)
        for _ in range(20):
            what = mutate_structure(rng, data, Layout(data))
            if what:
                return bytes(data), [what]
        return bytes(data), []
    data = bytearray(original)
    done = []
    want = rng.choice([1, 1, 1, 2, 2, 3])
    tries = 0
    while len(done) < want and tries < 20:
        tries += 1
        layout = Layout(data)
        what = mutate_once(rng, data, layout)
        if what:
            done.append(what)
        if not data:
            break
    return bytes(data), done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("out_dir")
    ap.add_argument("-n", "--count", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--seed", default="cuprobe")
    ap.add_argument("--manifest")
    ap.add_argument("--structural", action="store_true",
                    help="one change each, only to what locates records (chunk and record headers, the claimed "
                         "count, whole chunks): a reader must notice every one that changes what it reads")
    args = ap.parse_args()

    with open(args.trace, "rb") as f:
        original = f.read()
    if len(original) < HEADER_SIZE or original[:8] != b"CUPROBE1":
        sys.exit(f"mutate_traces: {args.trace} is not a cuprobe trace")
    claimed = u32(original, 32)
    original = original[:HEADER_SIZE + claimed * CHUNK_SIZE]
    os.makedirs(args.out_dir, exist_ok=True)
    manifest = args.manifest or os.path.join(args.out_dir, "manifest.tsv")
    with open(manifest, "a") as m:
        for i in range(args.first, args.first + args.count):
            data, done = make_mutant(original, args.seed, i, args.structural)
            name = f"mutant-{i:05d}.cuprobe"
            with open(os.path.join(args.out_dir, name), "wb") as f:
                f.write(data)
            m.write(f"{name}\t{'; '.join(done) or 'unchanged'}\n")


if __name__ == "__main__":
    main()
