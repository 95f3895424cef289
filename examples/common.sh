# Sourced by the examples' run.sh: finds cuprobe (CUPROBE, else the build tree, else PATH) and
# the run directory (first argument, else a fresh one under /tmp; `cuprobe record` refuses one
# that already holds traces).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${CUPROBE:-}" ]; then cuprobe="$CUPROBE"
elif [ -x "$root/build/bin/cuprobe" ]; then cuprobe="$root/build/bin/cuprobe"
elif command -v cuprobe >/dev/null; then cuprobe="$(command -v cuprobe)"
else echo "cuprobe not found: build it (scripts/build.sh) or set CUPROBE=/path/to/cuprobe" >&2; exit 2
fi
out="${1:-$(mktemp -d /tmp/cuprobe-example.XXXXXX)}"
echo "run directory: $out"
