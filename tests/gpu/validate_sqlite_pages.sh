#!/usr/bin/env bash
# Real-GPU validation of the SQLite export's page writer (analyzer/export/sqlite_pages.h). Run from
# the repository root on the GPU machine:
#   tests/gpu/validate_sqlite_pages.sh BUILD_DIR OUT_DIR [SCENARIO...]
# Records scenarios of the corpus (default: thirdparty-imagenet, storm-images, ddp-torchrun) with
# their own run.sh, exports each as SQLite twice, with the large tables' pages written by cuprobe
# (as shipped) and with every row through SQL (CUPROBE_SQLITE_ROWS=sql), times both, and checks
# that SQLite's integrity check accepts the first and that every table holds the same rows in
# both (meta's export time aside). Log: OUT_DIR/sqlite_pages.log; exit status 1 on a mismatch.
set -uo pipefail
build="$(cd "${1:?build dir}" && pwd)"
out="${2:?out dir}"
shift 2
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(thirdparty-imagenet storm-images ddp-torchrun)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
export CUPROBE="$build/bin/cuprobe"
here="$(cd "$(dirname "$0")" && pwd)"
status=0
{
  echo "== machine ($(date -u +%FT%TZ))"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sqlite3, torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "sqlite", sqlite3.sqlite_version)'
  "$CUPROBE" --version
  for s in "${scenarios[@]}"; do
    echo
    echo "== $s ($(date -u +%T))"
    export SCEN="$here/scenarios/$s" TRACE_DIR="$work/$s"
    timeout -k 10 150 bash "$SCEN/run.sh" >"$out/$s.record.log" 2>&1
    echo "recorded: exit $? ($(du -sh "$TRACE_DIR" 2>/dev/null | cut -f1) of traces)"
    for rows in pages sql; do
      t0=$EPOCHREALTIME
      CUPROBE_SQLITE_ROWS=$rows timeout -k 5 120 "$CUPROBE" export -q --format sqlite -o "$work/$s.$rows.sqlite" "$TRACE_DIR" \
        2>"$work/$s.$rows.err"
      rc=$?
      t1=$EPOCHREALTIME
      printf 'export (%s): exit %d, %.2f s, %s bytes %s\n' "$rows" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" \
        "$(stat -c %s "$work/$s.$rows.sqlite" 2>/dev/null || echo 0)" "$(tail -1 "$work/$s.$rows.err")"
    done
    python3 - "$work/$s.pages.sqlite" "$work/$s.sql.sqlite" <<'PY' || status=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("attach ? as ref", (sys.argv[2],))
check = db.execute("pragma main.integrity_check").fetchall()
print("integrity_check:", check[0][0] if len(check) == 1 else check[:5])
bad = check != [("ok",)]
for (t,) in db.execute("select name from ref.sqlite_schema where type = 'table' order by name").fetchall():
    rows = "select * from {}.meta where key not like 'exported_at%'" if t == "meta" else "select * from {}.%s" % t
    a, b = rows.format("main"), rows.format("ref")
    n = db.execute(f"select count(*) from ({a})").fetchone()[0]
    m = db.execute(f"select count(*) from ({b})").fetchone()[0]
    only_a = db.execute(f"select count(*) from ({a} except {b})").fetchone()[0]
    only_b = db.execute(f"select count(*) from ({b} except {a})").fetchone()[0]
    same = n == m and only_a == 0 and only_b == 0
    bad |= not same
    print(f"  {t:20s} {n:9d} rows  {'same' if same else f'DIFFER: {m} in the reference, {only_a}/{only_b} unmatched'}")
print("verdict:", "MISMATCH" if bad else "identical")
sys.exit(1 if bad else 0)
PY
  done
  echo
  echo "validate_sqlite_pages exit status: $status"
  exit $status
} 2>&1 | tee "$out/sqlite_pages.log"
rc=${PIPESTATUS[0]}
rm -rf "$work"
exit "$rc"
