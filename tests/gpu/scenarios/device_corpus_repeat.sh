#!/usr/bin/env bash
# The scenario corpus run several times in one device call, to see how stable its verdicts are:
# each pass's files go to OUT/passN/ (4 files a pass; the device tool returns 8).
#   tests/gpu/scenarios/device_corpus_repeat.sh BUILD_DIR OUT PASSES GUARD_SECONDS [SCENARIO...]
set -u
build="${1:?build dir}"
out="${2:?out dir}"
passes="${3:-2}"
guard="${4:-250}"
shift 4 2>/dev/null || shift $#
here="$(cd "$(dirname "$0")" && pwd)"
for n in $(seq 1 "$passes"); do
  echo "== pass $n $(date -u +%H:%M:%S)"
  "$here/device_corpus.sh" "$build" "$out/pass$n" "$guard" "$@" | tail -4
done
