"""cuBLASLt's own API log as the oracle for cuprobe's cuBLASLt capture (issue 33).

  python3 check_cublaslt_log.py DUMP.jsonl CUBLASLT.log [cublasLt.h]

DUMP.jsonl: `cuprobe dump` of a run made with CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE=CUBLASLT.log.
Every cublasLtMatmul line of the log ("[cublasLtMatmul] ... Adesc=[type=R_16BF rows=.. cols=..
ld=..] ... computeDesc=[computeType=COMPUTE_32F ... transa=OP_T ... epilogue=EPILOGUE_BIAS ...]
... algo=[algoId=.. ...] workSpaceSizeInBytes=..") is reduced to the facts cuprobe records of a
matmul: the four layouts (type, rows, cols, leading dimension, batch), the transposes, the compute
type, the epilogue, the algorithm id and the workspace size. The log's calls and the dump's are
compared as multisets (threads interleave differently in the two files), field by field and
whole. With cublasLt.h (default /usr/local/cuda/include/cublasLt.h where it exists) the
algorithm's configuration is compared too: the log's tile=MATMUL_TILE_256x128,
stages=MATMUL_STAGES_64xAUTO, customOption, clusterShape=CLUSTER_SHAPE_1x2x1 (and splitK,
reductionScheme, swizzle where it states them) against the knobs cuprobe recorded (tile_id,
stages_id, custom_option, cluster_shape_id, splitk_num, reduction_scheme, cta_swizzling), the
names turned into numbers with the header's enums. Fields the log does not state are reported as such, not counted. Exit status 0 when every
field both sides state matches for every call ("ORACLE MATCH"), 1 otherwise.
"""
import collections
import json
import re
import sys

DTYPE = {0: "R_32F", 1: "R_64F", 2: "R_16F", 3: "R_8I", 4: "R_32I", 6: "R_8U", 9: "R_16BF", 10: "R_64I",
         12: "R_8F_E4M3", 13: "R_8F_E5M2"}
COMPUTE = {64: "COMPUTE_16F", 65: "COMPUTE_16F_PEDANTIC", 68: "COMPUTE_32F", 69: "COMPUTE_32F_PEDANTIC",
           70: "COMPUTE_64F", 72: "COMPUTE_32I", 74: "COMPUTE_32F_FAST_16F", 75: "COMPUTE_32F_FAST_16BF",
           77: "COMPUTE_32F_FAST_TF32"}
EPILOGUE = {1: "EPILOGUE_DEFAULT", 2: "EPILOGUE_RELU", 4: "EPILOGUE_BIAS", 6: "EPILOGUE_RELU_BIAS",
            32: "EPILOGUE_GELU", 36: "EPILOGUE_GELU_BIAS", 160: "EPILOGUE_GELU_AUX", 164: "EPILOGUE_GELU_AUX_BIAS",
            192: "EPILOGUE_DGELU", 208: "EPILOGUE_DGELU_BGRAD", 256: "EPILOGUE_BGRADA", 512: "EPILOGUE_BGRADB"}
FIELDS = ["A", "B", "C", "D", "transA", "transB", "computeType", "epilogue", "algoId", "workspace", "config"]
# The log's algorithm fields and the knob each is recorded as; the first three are enum names.
CONFIG = [("tile", "tile_id", "CUBLASLT_"), ("stages", "stages_id", "CUBLASLT_"),
          ("clusterShape", "cluster_shape_id", "CUBLASLT_"), ("customOption", "custom_option", None),
          ("splitK", "splitk_num", None), ("reductionScheme", "reduction_scheme", None),
          ("swizzle", "cta_swizzling", None)]
ENUMS = {}


def load_enums(path):
    try:
        text = open(path).read()
    except OSError:
        return False
    for name, value in re.findall(r"(CUBLASLT_(?:MATMUL_TILE|MATMUL_STAGES|CLUSTER_SHAPE)_\w+)\s*=\s*(\d+)", text):
        ENUMS[name] = value
    return bool(ENUMS)


def log_config(algo):
    """The algorithm's configuration as knob=value pairs, or None without the header's enums."""
    if not ENUMS:
        return None
    out = []
    for field, knob, prefix in CONFIG:
        value = algo.get(field)
        if value is None:
            continue
        if prefix:
            value = ENUMS.get(prefix + value, value)
        out.append(f"{knob}={value}")
    return ",".join(sorted(out))


def dump_config(knobs):
    stated = dict(kv.split("=", 1) for kv in (knobs or "").split(",") if "=" in kv)
    return ",".join(sorted(f"{knob}={stated[knob]}" for _, knob, _ in CONFIG if knob in stated))


def bracketed(line, key):
    """The text inside key=[...] (nested brackets allowed), or None."""
    i = line.find(key + "=[")
    if i < 0:
        return None
    depth, j = 0, i + len(key) + 1
    for k in range(j, len(line)):
        depth += line[k] == "["
        depth -= line[k] == "]"
        if depth == 0:
            return line[j + 1:k]
    return None


def kv(text):
    return dict(re.findall(r"(\w+)=([^\s\]]+)", text or ""))


def log_calls(path):
    calls = []
    for line in open(path, errors="replace"):
        # Level 5 writes each call twice: an [Api] line of pointers, then a [Trace] line with the
        # descriptors' contents. Only the latter states the matmul.
        if "[cublasLtMatmul]" not in line or ("[Api]" in line and "[Trace]" not in line):
            continue
        c = {}
        for m in "ABCD":
            d = kv(bracketed(line, m + "desc"))
            if d:
                batch = d.get("batchCount", d.get("batch_count", "1"))
                c[m] = (d.get("type"), d.get("rows"), d.get("cols"), d.get("ld"), batch)
        cd = kv(bracketed(line, "computeDesc"))
        if cd:  # the log leaves attributes at their defaults out
            c["transA"] = cd.get("transa", cd.get("transA", "OP_N"))  # the log spells them transa, transb
            c["transB"] = cd.get("transb", cd.get("transB", "OP_N"))
            if "computeType" in cd:
                c["computeType"] = cd["computeType"]
        c["epilogue"] = cd.get("epilogue", "EPILOGUE_DEFAULT") if cd else None
        algo = kv(bracketed(line, "algo"))
        if "algoId" in algo:
            c["algoId"] = algo["algoId"]
            config = log_config(algo)
            if config is not None:
                c["config"] = config
        else:
            m = re.search(r"algoId=(\d+)", line)
            if m:
                c["algoId"] = m.group(1)
        m = re.search(r"workSpaceSizeInBytes=(\d+)", line)
        if m:
            c["workspace"] = m.group(1)
        calls.append({k: v for k, v in c.items() if v is not None})
    return calls


def dump_calls(path):
    problems, calls = {}, []
    for line in open(path):
        j = json.loads(line)
        if j.get("type") == "problem":
            problems[j["text"]] = j.get("desc")
        elif j.get("type") == "call" and j.get("api") == "cublasLtMatmul" and j.get("ret") == 0:
            d = problems.get(j.get("problem"))
            if not d:
                calls.append({})
                continue
            c = {}
            for name, t in zip("ABCD", d["tensors"]):
                batch, rows, cols = t["dims"]
                row = t["strides"][2] == 1 and t["strides"][1] != 1
                ld = t["strides"][1] if row else t["strides"][2]
                c[name] = (DTYPE.get(t["dtype"], str(t["dtype"])), str(rows), str(cols), str(ld), str(batch))
            p = d.get("params", [])
            c["transA"] = "OP_T" if p[0] else "OP_N"
            c["transB"] = "OP_T" if p[1] else "OP_N"
            c["computeType"] = COMPUTE.get(p[2], str(p[2]))
            c["epilogue"] = EPILOGUE.get(p[4], str(p[4]))
            if j.get("engine", -1) >= 0:
                c["algoId"] = str(j["engine"])
                c["config"] = dump_config(j.get("knobs"))
            c["workspace"] = str(j.get("workspace", 0))
            calls.append(c)
    return calls


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    header = sys.argv[3] if len(sys.argv) == 4 else "/usr/local/cuda/include/cublasLt.h"
    if not load_enums(header):
        print(f"no cuBLASLt enums in {header}: the algorithms' configurations are not compared")
    ours, theirs = dump_calls(sys.argv[1]), log_calls(sys.argv[2])
    print(f"cublasLtMatmul calls: dump {len(ours)}, cuBLASLt log {len(theirs)}")
    ok = len(ours) == len(theirs) and len(ours) > 0
    stated = [f for f in FIELDS if any(f in c for c in theirs)]
    for f in FIELDS:
        if f not in stated:
            print(f"  {f}: not in the log's lines")
            continue
        a = collections.Counter(str(c.get(f)) for c in ours)
        b = collections.Counter(str(c.get(f)) for c in theirs)
        same = sum((a & b).values())
        print(f"  {f}: {same}/{len(theirs)} match" + ("" if a == b else f"  (dump only {dict(a - b)}; log only {dict(b - a)})"))
        ok = ok and a == b
    whole_a = collections.Counter(tuple(str(c.get(f)) for f in stated) for c in ours)
    whole_b = collections.Counter(tuple(str(c.get(f)) for f in stated) for c in theirs)
    print(f"  whole calls ({', '.join(stated)}): {sum((whole_a & whole_b).values())}/{len(theirs)} match")
    ok = ok and whole_a == whole_b
    if theirs[:1]:
        print("  first log call:", theirs[0])
    if ours[:1]:
        print("  first dump call:", ours[0])
    print("ORACLE MATCH" if ok else "ORACLE MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
