#!/usr/bin/env python3
"""Writes hostile JSON Lines inputs for the trace reader (analyzer/trace/jsonl_trace.cpp), made
from a real `cuprobe dump` output: mutated numbers (huge, negative, float, 2^64, NaN as a
string), duplicated and unknown keys, arrays and objects nested 100k deep, truncated lines,
invalid UTF-8, huge strings, a line of a million keys, a line far over the reader's line limit,
empty lines and byte order marks, the wrong type for every field, references to ids nothing
defines, many processes, APIs, fields and fault rules, random bytes. The reader must read each
without crashing, hanging or taking memory out of proportion, and report what it skipped
(tests/unit/jsonl_hostile_test.cpp).

Deterministic: the same seed file and --seed give the same files. Standard library only.

Usage: gen_jsonl.py SEED.jsonl OUT_DIR [--count 200] [--seed 1] [--small]
  --small  leave out the inputs of many megabytes (for slow sanitized builds)"""
import argparse
import json
import os
import random

# Lines of every type, so that each can be mutated even when the seed has none of a type.
TEMPLATES = [
    {"type": "process", "file": "t.cuprobe", "pid": 4242, "ppid": 1, "host": "node0", "rank": 0, "local_rank": 0,
     "world_size": 2, "cmdline": ["python3", "train.py"], "exe": "/usr/bin/python3", "cwd": "/work",
     "start_ns": 1000000000, "start_wall_ns": 1796000000000000000, "end_ns": 2000000000, "last_event_ns": 1900000000,
     "state": "signaled", "signal": 9, "events": 3, "threads": 2, "cuda_runtime_version": 12040,
     "cudnn_version": 90100,
     "devices": [{"index": 0, "name": "NVIDIA H100", "total_mem": 85899345920, "uuid": "GPU-x",
                  "pci_bus_id": "0000:18:00.0", "cc": "9.0", "multiprocessors": 132}],
     "cudnn_handles": [{"handle": "0x5555", "device": 0, "tid": 4242}],
     "stats": {"chunks_dropped": 0}},
    {"type": "api", "pid": 4242, "name": "cudaMalloc", "library": "cudart", "flags": 1, "fields": "ptr:p,size:u"},
    {"type": "api", "pid": 4242, "name": "cudnnFind", "library": "cudnn", "flags": 0, "fields": "problem:s,algo:i,t:f"},
    {"type": "fault_rule", "pid": 4242, "index": 0, "name": "oom", "rule": "cudaMalloc:after=2:ret=2",
     "scope": "process", "matched": 3, "injected": 1},
    {"type": "stack", "pid": 4242, "id": 7, "python": [{"file": "train.py", "function": "step", "line": 12}],
     "native": [{"pc": "0x7f0000001000", "module": "libx.so", "offset": "0x1000", "text": "f() x.cpp:3"}]},
    {"type": "call", "api": "cudaMalloc", "ret": 0, "ts_ns": 1000001000, "dur_ns": 2000, "pid": 4242, "tid": 4242,
     "device": 0, "stream": "0x0", "ptr": "0x7f0000000000", "size": 1048576, "stack": 7},
    {"type": "call", "api": "cudaMalloc", "ret": 2, "ts_ns": 1000005000, "dur_ns": 2000, "pid": 4242, "tid": 4243,
     "device": 0, "ptr": "0x0", "size": 1 << 40, "injected": "oom", "fault_k": 3},
    {"type": "call", "api": "cudnnFind", "ret": 0, "ts_ns": 1000009000, "dur_ns": 2000, "pid": 4242, "tid": 4242,
     "device": 0, "problem": "conv x[1,2,3,4]", "algo": -1, "t": 0.25, "sample": True},
    {"type": "count", "api": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "device": 0, "calls": 100},
    {"type": "crash", "pid": 4242, "tid": 4243, "signal": 11, "ts_ns": 1900000000, "api_in_flight": "cudaMalloc",
     "in_flight_since_ns": 1899999000},
    {"type": "search", "pid": 4242, "tid": 4242, "device": 0, "api": "backend", "mode": "benchmark",
     "candidates": [], "winner": -1},
]

HUGE_INTS = [2 ** 64, 2 ** 64 - 1, 2 ** 63, 2 ** 63 - 1, 2 ** 32, 2 ** 32 - 1, 2 ** 31, 10 ** 30, 10 ** 400]
NEGATIVE = [-1, -5, -(2 ** 31) - 1, -(2 ** 63), -(2 ** 64), -(10 ** 30)]
FLOATS = ["1e300", "1.5", "-0.0", "1e-300", "0.0", "2.0", "1E400", "-1e308", "4294967295.0", "1e19"]
NAN_STRINGS = ["NaN", "nan", "inf", "-Infinity", "", "0x", "0xZZ", "0x" + "f" * 17, "12", " 0x10", "-0x1"]
BAD_LITERALS = ["NaN", "Infinity", "-Infinity", "0x10", "01", "+1", ".5", "1.", "1e", "--1", "tru", "nul"]
WRONG = ['"text"', "-1", "1.5", "[]", "{}", "null", "true", "[1,[2,{}]]", '{"a":{"b":[]}}', '"0xffffffffffffffffff"']


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class Gen:
    def __init__(self, seed_lines, rng, small):
        self.rng = rng
        self.small = small
        self.objs = []
        for text in seed_lines:
            try:
                obj = json.loads(text)
            except ValueError:
                continue
            if isinstance(obj, dict):
                self.objs.append(obj)
        self.objs += [dict(t) for t in TEMPLATES]

    # Helpers --------------------------------------------------------------------------------
    def sample_objs(self, n):
        n = min(n, len(self.objs))
        start = self.rng.randrange(0, len(self.objs) - n + 1)
        return [json.loads(json.dumps(o)) for o in self.objs[start:start + n]] + \
            [json.loads(json.dumps(t)) for t in TEMPLATES]

    def base(self, n=60):
        return [dumps(o).encode() for o in self.sample_objs(n)]

    def replace_value(self, obj, raw):
        """The text of obj with one random key's value replaced by the raw JSON text `raw`."""
        keys = list(obj.keys())
        key = self.rng.choice(keys)
        parts = []
        for k in keys:
            v = raw if k == key else dumps(obj[k])
            parts.append(dumps(k) + ":" + v)
        return ("{" + ",".join(parts) + "}").encode("utf-8", "surrogatepass")

    def numeric_keys(self, obj):
        return [k for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]

    def replace_number(self, obj, raw):
        keys = self.numeric_keys(obj) or list(obj.keys())
        key = self.rng.choice(keys)
        parts = [dumps(k) + ":" + (raw if k == key else dumps(v)) for k, v in obj.items()]
        return ("{" + ",".join(parts) + "}").encode()

    # Strategies: each returns the bytes of one file -------------------------------------------
    def huge_numbers(self):
        out = []
        for o in self.sample_objs(40):
            out.append(self.replace_number(o, str(self.rng.choice(HUGE_INTS))) if self.rng.random() < 0.5 else dumps(o).encode())
        return b"\n".join(out) + b"\n"

    def negative_numbers(self):
        out = []
        for o in self.sample_objs(40):
            out.append(self.replace_number(o, str(self.rng.choice(NEGATIVE))) if self.rng.random() < 0.5 else dumps(o).encode())
        return b"\n".join(out) + b"\n"

    def float_numbers(self):
        out = []
        for o in self.sample_objs(40):
            out.append(self.replace_number(o, self.rng.choice(FLOATS)) if self.rng.random() < 0.5 else dumps(o).encode())
        return b"\n".join(out) + b"\n"

    def pid_values(self):
        # The values the issue found accepted: pid 1e300, 2^64, -5; and their neighbours.
        out = []
        for raw in ["1e300", str(2 ** 64), "-5", "4294967296", "4294967295", "1.0", "-0", '"1"', "null", "[]"]:
            out.append(('{"type":"call","api":"cudaMalloc","pid":' + raw + ',"tid":1,"ts_ns":1}').encode())
            out.append(('{"type":"process","pid":' + raw + '}').encode())
            out.append(('{"type":"call","api":"cudaMalloc","pid":1,"tid":' + raw + ',"ts_ns":' + raw + '}').encode())
        return b"\n".join(out) + b"\n"

    def nan_strings(self):
        out = []
        for o in self.sample_objs(40):
            if self.rng.random() < 0.6:
                out.append(self.replace_value(o, dumps(self.rng.choice(NAN_STRINGS))))
            else:
                out.append(self.replace_value(o, self.rng.choice(BAD_LITERALS)))
        return b"\n".join(out) + b"\n"

    def huge_number_text(self):
        digits = 10 ** 6 if self.small else 10 * 10 ** 6
        body = "9" * digits if self.rng.random() < 0.5 else "1" + "0" * digits + ".5e3"
        return (b'{"type":"process","pid":1}\n{"type":"call","api":"cudaMalloc","pid":' + body.encode() +
                b',"tid":1}\n{"type":"call","api":"cudaFree","pid":1,"size":' + body.encode() + b'}\n')

    def duplicate_keys(self):
        out = []
        for o in self.sample_objs(40):
            keys = list(o.keys())
            k = self.rng.choice(keys)
            dup = dumps(k) + ":" + self.rng.choice(WRONG + ['"call"', '"process"', "7"])
            text = dumps(o)[:-1] + "," + dup + "}"
            if self.rng.random() < 0.3:
                text = "{" + dup + "," + dumps(o)[1:]
            out.append(text.encode())
        return b"\n".join(out) + b"\n"

    def unknown_keys(self):
        out = []
        for i, o in enumerate(self.sample_objs(40)):
            for j in range(self.rng.randrange(1, 20)):
                o["unknown_%d_%d" % (i, j)] = json.loads(self.rng.choice(WRONG))
            out.append(dumps(o).encode())
        return b"\n".join(out) + b"\n"

    def new_key_per_line(self):
        # The quadratic case of the issue: every call line adds a key its API has not had.
        n = 2000 if self.small else 20000
        out = [b'{"type":"process","pid":1}']
        for i in range(n):
            out.append(('{"type":"call","api":"cudaMalloc","ret":0,"ts_ns":%d,"dur_ns":10,"pid":1,"tid":1,'
                        '"device":0,"k%d":%d}' % (1000 + i, i, i)).encode())
        return b"\n".join(out) + b"\n"

    def deep_nesting(self):
        depth = self.rng.choice([100, 1000, 100000])
        kind = self.rng.choice(["array", "object", "mixed"])
        if kind == "array":
            nested = "[" * depth + "]" * depth
        elif kind == "object":
            nested = '{"a":' * depth + "1" + "}" * depth
        else:
            nested = '[{"a":' * (depth // 2) + "1" + "}]" * (depth // 2)
        lines = [b'{"type":"process","pid":3}',
                 ('{"type":"call","api":"cudaMalloc","pid":3,"ptr":' + nested + "}").encode(),
                 ('{"type":"stack","pid":3,"id":1,"python":' + nested + "}").encode(),
                 nested.encode()]
        if self.rng.random() < 0.5:
            lines.append(("[" * depth).encode())  # never closed
        return b"\n".join(lines) + b"\n"

    def truncated(self):
        out = []
        for line in self.base(40):
            if self.rng.random() < 0.4 and len(line) > 2:
                line = line[:self.rng.randrange(1, len(line))]
            out.append(line)
        data = b"\n".join(out)
        return data[:self.rng.randrange(len(data) // 2, len(data))]  # ends mid-line

    def invalid_utf8(self):
        bad = [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80",
               b"\xf4\x90\x80\x80", b"\xfe\xfe"]
        out = []
        for line in self.base(40):
            if self.rng.random() < 0.5:
                quote = [i for i in range(len(line)) if line[i:i + 1] == b'"']
                pos = self.rng.choice(quote) + 1 if quote else 0
                line = line[:pos] + self.rng.choice(bad) + line[pos:]
            elif self.rng.random() < 0.3:
                line = line.replace(b'"ok"', b'"\\ud800"').replace(b'"0x0"', b'"\\udc00\\ud800"')
            out.append(line)
        out.append(b'{"type":"process","pid":77,"host":"\\ud800"}')
        out.append(b'{"type":"process","pid":78,"host":"\xed\xa0\x80"}')
        return b"\n".join(out) + b"\n"

    def huge_strings(self):
        size = self.rng.choice([1 << 16, 1 << 20, (1 << 20) * (1 if self.small else 5)])
        s = "x" * size
        out = [dumps({"type": "process", "pid": 5, "host": s, "cmdline": [s, s[:100]]}).encode(),
               dumps({"type": "call", "api": s[:size // 2], "pid": 5, "problem": s}).encode(),
               dumps({"type": "api", "pid": 5, "name": "cudnnX", "fields": ",".join(["f%d:s" % i for i in range(5000)])}).encode(),
               dumps({"type": "call", "api": "cudnnX", "pid": 5, "f1": s, "f2": "\\" * 1000}).encode(),
               dumps({"type": "stack", "pid": 5, "id": 1, "native": [{"pc": "0x1", "text": s}]}).encode()]
        return b"\n".join(out) + b"\n"

    def million_keys(self):
        n = 100000 if self.small else 1000000
        keys = ",".join('"%x":%d' % (i, i & 7) for i in range(n))  # about 10 MB: under the line limit
        kind = self.rng.choice(["call", "process", "api"])
        return ('{"type":"process","pid":9}\n{"type":"%s","api":"cudaMalloc","name":"x","pid":9,%s}\n'
                '{"type":"call","api":"cudaMalloc","pid":9}\n' % (kind, keys)).encode()

    def many_values(self):
        n = 200000 if self.small else 2000000
        arr = "[" + ",".join(["0"] * n) + "]"
        return ('{"type":"process","pid":9,"cmdline":%s}\n{"type":"stack","pid":9,"native":%s}\n' % (arr, arr)).encode()

    def long_line(self):
        size = (2 if self.small else 20) * (1 << 20)
        head = b'{"type":"call","api":"cudaMalloc","pid":1,"x":"'
        body = head + b"y" * size
        if self.rng.random() < 0.5:
            return b'{"type":"process","pid":1}\n' + body + b'"}\n{"type":"call","api":"cudaFree","pid":1}\n'
        return b'{"type":"process","pid":1}\n' + body  # and no newline at all

    def empty_lines(self):
        out = []
        for line in self.base(30):
            out.append(line)
            out.extend([b"", b"   ", b"\t", b"\r", b" \r "][:self.rng.randrange(0, 5)])
        sep = self.rng.choice([b"\n", b"\r\n", b"\n\n\n"])
        return sep.join(out) + b"\n" * self.rng.randrange(0, 1000) + b" " * self.rng.randrange(0, 100000)

    def byte_order_marks(self):
        lines = self.base(20)
        data = b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n"
        if self.rng.random() < 0.5:
            data += b"\xef\xbb\xbf" + lines[0] + b"\n"  # a second one, mid-file
        if self.rng.random() < 0.3:
            data = b"\xff\xfe" + data  # UTF-16's
        return data

    def wrong_types(self):
        out = []
        for o in self.sample_objs(30):
            for k in list(o.keys()):
                out.append(self.replace_key(o, k, self.rng.choice(WRONG)))
        return b"\n".join(out) + b"\n"

    def replace_key(self, obj, key, raw):
        parts = [dumps(k) + ":" + (raw if k == key else dumps(v)) for k, v in obj.items()]
        return ("{" + ",".join(parts) + "}").encode()

    def nested_wrong_types(self):
        out = []
        for raw in WRONG:
            out.append(('{"type":"process","pid":6,"devices":[{"index":%s,"cc":%s,"total_mem":%s}]}' % (raw, raw, raw)).encode())
            out.append(('{"type":"process","pid":6,"devices":%s,"stats":%s,"cudnn_handles":%s}' % (raw, raw, raw)).encode())
            out.append(('{"type":"process","pid":6,"cudnn_handles":[{"handle":%s,"device":%s}],"cmdline":[%s]}' % (raw, raw, raw)).encode())
            out.append(('{"type":"stack","pid":6,"id":2,"python":[{"file":%s,"line":%s}],"native":[{"pc":%s}]}' % (raw, raw, raw)).encode())
            out.append(('{"type":"stack","pid":6,"id":2,"python":[%s],"native":[%s]}' % (raw, raw)).encode())
            out.append(('{"type":"api","pid":6,"name":"a","fields":%s,"flags":%s,"library":%s}' % (raw, raw, raw)).encode())
        for spec in ["a:z", ":", ",,,", "x:", "x:pp", ":p", "a,a,a,a", "a:" + "s" * 100, ",".join("f%d" % i for i in range(300))]:
            out.append(dumps({"type": "api", "pid": 6, "name": "cudaMalloc", "fields": spec}).encode())
        for cc in ["9", "9.", ".0", "x.y", "99999999999999999999.0", "-1.0", "9.0.0", "9.0x"]:
            out.append(dumps({"type": "process", "pid": 6, "devices": [{"index": 0, "cc": cc}]}).encode())
        return b"\n".join(out) + b"\n"

    def unknown_ids(self):
        out = [b'{"type":"process","pid":11}']
        for i in range(200):
            r = self.rng.random()
            if r < 0.3:
                out.append(dumps({"type": "call", "api": "cudaMalloc", "pid": 11, "stack": self.rng.randrange(1, 2 ** 32),
                                  "ts_ns": i, "ptr": "0x%x" % i, "size": 8}).encode())
            elif r < 0.5:
                out.append(dumps({"type": "call", "api": "nope%d" % i, "pid": self.rng.randrange(0, 2 ** 32), "ts_ns": i}).encode())
            elif r < 0.7:
                out.append(dumps({"type": "count", "api": "ghost%d" % i, "pid": 11, "tid": 3, "calls": 2 ** 64 - 1}).encode())
            elif r < 0.85:
                out.append(dumps({"type": "call", "api": "cudaMalloc", "pid": 11, "injected": "rule%d" % i, "fault_k": i,
                                  "ts_ns": i}).encode())
            else:
                out.append(dumps({"type": "fault_rule", "pid": 11, "index": self.rng.choice([-1, 0, 32, 33, 2 ** 31 - 1]),
                                  "name": "r%d" % i}).encode())
        out.append(dumps({"type": "call", "api": "cudaFree", "pid": 11, "ptr": "0xdead", "device": 32767}).encode())
        out.append(dumps({"type": "call", "api": "cudaFree", "pid": 11, "ptr": "0xdead", "device": 32768}).encode())
        out.append(dumps({"type": "call", "api": "cudaFree", "pid": 11, "ptr": "0xdead", "device": -2}).encode())
        return b"\n".join(out) + b"\n"

    def many_processes(self):
        n = self.rng.choice([1000, 5000 if self.small else 50000])
        return b"".join(b'{"type":"process","pid":%d}\n' % (i + 1) for i in range(n))

    def many_apis(self):
        n = 1000 if self.small else 10000
        return b"".join(b'{"type":"call","api":"api%d","pid":2,"ts_ns":%d}\n' % (i, i) for i in range(n))

    def many_fields(self):
        out = [b'{"type":"process","pid":2}']
        line = '{"type":"call","api":"cudaMalloc","pid":2,%s}' % ",".join('"f%d":%d' % (i, i) for i in range(500))
        out += [line.encode()] * 20
        out.append(dumps({"type": "api", "pid": 2, "name": "cudaMalloc", "fields": ",".join("g%d:u" % i for i in range(500))}).encode())
        return b"\n".join(out) + b"\n"

    def many_rules(self):
        out = [b'{"type":"process","pid":2}']
        for i in range(100):
            out.append(dumps({"type": "call", "api": "cudaMalloc", "pid": 2, "ts_ns": i, "injected": "r%d" % i}).encode())
            out.append(dumps({"type": "fault_rule", "pid": 2, "name": "q%d" % i, "index": i % 40}).encode())
        out.append(dumps({"type": "call", "api": "cudaMalloc", "pid": 2, "injected": "mem-cap"}).encode())
        return b"\n".join(out) + b"\n"

    def random_bytes(self):
        out = []
        for line in self.base(20):
            out.append(line)
            out.append(bytes(self.rng.randrange(0, 256) for _ in range(self.rng.randrange(1, 300))).replace(b"\n", b""))
        return b"\n".join(out) + b"\n"

    def byte_flips(self):
        data = bytearray(b"\n".join(self.base(40)) + b"\n")
        for _ in range(self.rng.randrange(1, 60)):
            data[self.rng.randrange(len(data))] = self.rng.randrange(256)
        return bytes(data)

    def control_chars(self):
        out = []
        for line in self.base(30):
            pos = self.rng.randrange(len(line))
            out.append(line[:pos] + self.rng.choice([b"\x00", b"\x01", b"\x1f", b"\x7f", b"\x00" * 50, b"\x1b[31m"]) + line[pos:])
        out.append(b'{"type":"process","pid":3,"host":"a\\u0000b"}')
        return b"\n".join(out) + b"\n"

    def type_swaps(self):
        types = ["process", "api", "call", "count", "stack", "fault_rule", "crash", "search", "", "CALL", "call ",
                 "x" * 200]
        out = []
        for o in self.sample_objs(40):
            o["type"] = self.rng.choice(types)
            out.append(dumps(o).encode())
        out.append(b'{"pid":1,"api":"cudaMalloc"}')
        return b"\n".join(out) + b"\n"

    def top_level(self):
        return b"\n".join([b"[]", b"1", b'"x"', b"null", b"true", b"[{}]", b"{}", b"{", b"}", b"{}{}", b"{} {}",
                           b'{"type":"process","pid":1} x', b'{"type":"process","pid":1}/*c*/', b"//c", b"\\"]) + b"\n"

    def overflowing_times(self):
        out = [b'{"type":"process","pid":4,"start_ns":18446744073709551615,"end_ns":0}']
        for ts, dur in [(2 ** 64 - 1, 1), (2 ** 64 - 1, 0), (2 ** 63, 2 ** 63), (0, 2 ** 64 - 1), (1, 2 ** 64 - 1)]:
            out.append(dumps({"type": "call", "api": "cudaStreamSynchronize", "pid": 4, "ts_ns": ts, "dur_ns": dur,
                              "stream": "0xffffffffffffffff"}).encode())
        return b"\n".join(out) + b"\n"

    def mixed(self):
        """Several of the small strategies, their lines interleaved."""
        parts = [self.rng.choice(SMALL)(self) for _ in range(3)]
        lines = []
        for p in parts:
            lines += p.split(b"\n")
        self.rng.shuffle(lines)
        return b"\n".join(lines) + b"\n"


# (strategy, the most files it makes): the large inputs only a few times each.
STRATEGIES = [
    (Gen.huge_numbers, 99), (Gen.negative_numbers, 99), (Gen.float_numbers, 99), (Gen.pid_values, 2),
    (Gen.nan_strings, 99), (Gen.huge_number_text, 2), (Gen.duplicate_keys, 99), (Gen.unknown_keys, 99),
    (Gen.new_key_per_line, 2), (Gen.deep_nesting, 6), (Gen.truncated, 99), (Gen.invalid_utf8, 99),
    (Gen.huge_strings, 3), (Gen.million_keys, 2), (Gen.many_values, 1), (Gen.long_line, 2), (Gen.empty_lines, 99),
    (Gen.byte_order_marks, 99), (Gen.wrong_types, 99), (Gen.nested_wrong_types, 3), (Gen.unknown_ids, 99),
    (Gen.many_processes, 2), (Gen.many_apis, 2), (Gen.many_fields, 3), (Gen.many_rules, 3), (Gen.random_bytes, 99),
    (Gen.byte_flips, 99), (Gen.control_chars, 99), (Gen.type_swaps, 99), (Gen.top_level, 2),
    (Gen.overflowing_times, 2), (Gen.mixed, 99),
]
SMALL = [Gen.huge_numbers, Gen.negative_numbers, Gen.float_numbers, Gen.nan_strings, Gen.duplicate_keys,
         Gen.unknown_keys, Gen.truncated, Gen.invalid_utf8, Gen.wrong_types, Gen.unknown_ids, Gen.random_bytes,
         Gen.byte_flips, Gen.control_chars, Gen.type_swaps]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed_file")
    ap.add_argument("out_dir")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args()
    with open(args.seed_file, "rb") as f:
        seed_lines = [line.decode("utf-8", "replace") for line in f.read().splitlines() if line.strip()]
    rng = random.Random(args.seed)
    gen = Gen(seed_lines, rng, args.small)
    os.makedirs(args.out_dir, exist_ok=True)
    made = {}
    i = 0
    while i < args.count:
        progress = False
        for fn, most in STRATEGIES:
            if i >= args.count:
                break
            if made.get(fn.__name__, 0) >= most:
                continue
            made[fn.__name__] = made.get(fn.__name__, 0) + 1
            data = fn(gen)
            with open(os.path.join(args.out_dir, "%03d-%s.jsonl" % (i, fn.__name__)), "wb") as f:
                f.write(data)
            i += 1
            progress = True
        if not progress:
            break
    print(i)


if __name__ == "__main__":
    main()
