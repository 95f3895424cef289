#!/usr/bin/env python3
"""Writes common/error_names.h: every error name of the CUDA runtime (cudaError_t), the driver
(CUresult), cuDNN (cudnnStatus_t) and NCCL (ncclResult_t), with its value, read from the vendor
headers (driver_types.h, cuda.h, cudnn_graph.h, nccl.h), so that fault plans accept each by name
(issue 32). Hand-written tables would drift from the libraries; the generated header is committed
(the build needs no headers beyond those it already uses) and test ErrorNamesMatchHeaders
regenerates it from the headers of the machine and compares.

  gen_error_names.py INCLUDE_DIR [OUT]     (INCLUDE_DIR: /usr/local/cuda/include; OUT: stdout)
  gen_error_names.py --check FILE INCLUDE_DIR...
      exit 0 when FILE is what the headers give, 1 when not, 77 (skipped) when a header is missing
      or the headers are other versions than FILE was written from (its first two lines say which)
"""
import os
import re
import sys

ENTRY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+CUDNN_DEPRECATED_ENUM)?\s*=\s*([A-Za-z0-9_]+)")


def enum_body(text, start_pattern, end_pattern):
    start = re.search(start_pattern, text, re.M)
    if start is None:
        raise SystemExit("gen_error_names: no %r" % start_pattern)
    end = re.compile(end_pattern, re.M).search(text, start.end())
    if end is None:
        raise SystemExit("gen_error_names: no end %r" % end_pattern)
    return text[start.end():end.start()]


def entries(body, prefix, skip=()):
    """(name, value) of each enumerator with a value: a number, or an earlier enumerator's name."""
    # Comments out, and continuation lines joined (cuDNN splits a long alias over two lines).
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    body = re.sub(r"//[^\n]*", "", body)
    body = re.sub(r"=\s*\n\s*", "= ", body)
    out, known = [], {}
    for part in body.replace("{", "\n").split(","):
        for line in part.splitlines():
            m = ENTRY.match(line)
            if not m or not m.group(1).startswith(prefix) or m.group(1) in skip:
                continue
            name, value = m.group(1), m.group(2)
            if value.isdigit():
                v = int(value)
            elif value in known:
                v = known[value]
            else:
                raise SystemExit("gen_error_names: %s = %s: unknown value" % (name, value))
            known[name] = v
            out.append((name, v))
    if not out:
        raise SystemExit("gen_error_names: no %s* enumerators" % prefix)
    return out


def version(text, macro):
    m = re.search(r"#define\s+%s\s+(\d+)" % macro, text)
    return int(m.group(1)) if m else 0


def find(dirs, name):
    for d in dirs:
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def generate(dirs):
    def read_any(name):
        path = find(dirs, name)
        if path is None:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    headers = {n: read_any(n) for n in ("cuda.h", "driver_types.h", "cudnn_graph.h", "nccl.h", "cudnn_version.h")}
    missing = [n for n, t in headers.items() if t is None]
    if missing:
        return None, "no %s in %s" % (", ".join(missing), ", ".join(dirs))
    return render(headers), None


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--check":
        text, why = generate(sys.argv[3:])
        if text is None:
            print("gen_error_names: skipped: " + why)
            sys.exit(77)
        with open(sys.argv[2], encoding="utf-8") as f:
            committed = f.read()
        if text.splitlines()[:2] != committed.splitlines()[:2]:
            print("gen_error_names: skipped: the headers here are other versions than %s was written from:\n%s\n%s"
                  % (sys.argv[2], "\n".join(text.splitlines()[:2]), "\n".join(committed.splitlines()[:2])))
            sys.exit(77)
        if text != committed:
            print("gen_error_names: %s differs from what the headers give; run tests/tools/gen_error_names.py "
                  "INCLUDE_DIR %s" % (sys.argv[2], sys.argv[2]))
            sys.exit(1)
        print("gen_error_names: %s matches the headers" % sys.argv[2])
        return
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    text, why = generate([sys.argv[1]])
    if text is None:
        raise SystemExit("gen_error_names: " + why)
    if len(sys.argv) == 3:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def render(h):
    cuda_h, runtime_h, cudnn_h, nccl_h, version_h = (h["cuda.h"], h["driver_types.h"], h["cudnn_graph.h"], h["nccl.h"],
                                                     h["cudnn_version.h"])
    tables = [
        ("kCudartErrors", "the CUDA runtime's cudaError_t (driver_types.h)",
         entries(enum_body(runtime_h, r"enum\s+__device_builtin__\s+cudaError\s*\{", r"^\};"), "cuda",
                 skip=("cudaErrorApiFailureBase",))),
        ("kDriverErrors", "the driver's CUresult (cuda.h)",
         entries(enum_body(cuda_h, r"typedef\s+enum\s+cudaError_enum\s*\{", r"^\}\s*CUresult;"), "CUDA_")),
        ("kCudnnStatuses", "cuDNN's cudnnStatus_t (cudnn_graph.h)",
         entries(enum_body(cudnn_h, r"typedef\s+enum\s*\{(?=\s*CUDNN_STATUS_SUCCESS)", r"^\}\s*cudnnStatus_t;"),
                 "CUDNN_STATUS_")),
        ("kNcclResults", "NCCL's ncclResult_t (nccl.h)",
         entries(enum_body(nccl_h, r"typedef\s+enum\s*\{(?=\s*ncclSuccess)", r"\}\s*ncclResult_t;"), "nccl",
                 skip=("ncclNumResults",))),
    ]
    cuda = version(cuda_h, "CUDA_VERSION")
    cudnn = (version(version_h, "CUDNN_MAJOR"), version(version_h, "CUDNN_MINOR"), version(version_h, "CUDNN_PATCHLEVEL"))
    nccl = (version(nccl_h, "NCCL_MAJOR"), version(nccl_h, "NCCL_MINOR"), version(nccl_h, "NCCL_PATCH"))
    lines = [
        "// Generated by tests/tools/gen_error_names.py from the vendor headers of CUDA %d.%d, cuDNN %d.%d.%d"
        % (cuda // 1000, cuda % 1000 // 10, *cudnn),
        "// and NCCL %d.%d.%d; do not edit (test ErrorNamesMatchHeaders compares it with the headers)." % nccl,
        "// Every error name of each library's status enum with its value: fault plans take them by name.",
        "#pragma once",
        "",
        "#include <stdint.h>",
        "",
        "// clang-format off",
        "",
        "namespace cuprobe::errors {",
        "",
        "struct ErrorName {",
        "  const char* name;",
        "  int32_t code;",
        "};",
        "",
    ]
    for ident, what, items in tables:
        lines.append("// %s" % what)
        lines.append("inline constexpr ErrorName %s[] = {" % ident)
        for name, value in items:
            lines.append('    {"%s", %d},' % (name, value))
        lines.append("};")
        lines.append("")
    lines.append("}  // namespace cuprobe::errors")
    lines.append("// clang-format on")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
