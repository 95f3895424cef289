#!/usr/bin/env bash
# The shipped cuprobe on an older distribution, for real: a chroot of it (debootstrap), the
# relocatable tarball unpacked inside, and the real CUDA runtime and cuDNN (no GPU needed: they
# load and answer) driven by the distribution's own Python through ctypes under `cuprobe record`.
# The shim must load into that process (its glibc), record the calls, and the static command
# must analyze and report them there. Then the .deb is installed there with dpkg (its dependency
# satisfied by that glibc), its cuprobe analyzes the same run, and it is removed again.
#
#   tests/packaging/old_glibc.sh CHROOT_DIR PACKAGES_DIR [RELEASE [MIRROR]]
#
# PACKAGES_DIR holds scripts/package.sh's output.
#
# RELEASE defaults to Debian 11 "bullseye" (glibc 2.31, signatures checked against Debian's
# archive keyring); any release debootstrap knows works, e.g. `bionic http://archive.ubuntu.com/ubuntu`
# (Ubuntu 18.04, glibc 2.27; CUPROBE_CHROOT_NO_GPG=1 where no keyring for it is installed). The chroot
# is made once and reused. Needs root (debootstrap, chroot, mounting /proc), the network to the
# mirror, and the CUDA runtime and cuDNN libraries (CUDA_HOME, default /usr/local/cuda).
set -euo pipefail
chroot_dir="${1:?usage: old_glibc.sh CHROOT_DIR PACKAGES_DIR [RELEASE [MIRROR]]}"
packages="$(readlink -f "${2:?packages dir}")"
# `sed -n 1p`, not `head -1`: head exits after one line and, under pipefail, a writer with more
# lines to write dies of SIGPIPE and fails the script (CI: exit 141 at `ldd --version | head -1`).
tarball="$(ls "$packages"/cuprobe-*-linux-*.tar.gz | grep -v -- '-debug\.tar\.gz$' | sed -n 1p)"
deb="$(ls "$packages"/cuprobe_*.deb | sed -n 1p)"
[ -f "$tarball" ] && [ -f "$deb" ] || { echo "old_glibc: FAIL: no tarball or .deb in $packages" >&2; exit 1; }
release="${3:-bullseye}"
mirror="${4:-http://deb.debian.org/debian}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
fail() { echo "old_glibc: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot)"
for lib in libcudart.so.13 libcudnn.so.9 libcudnn_graph.so.9; do
  ls "$cuda"/lib64/$lib* >/dev/null 2>&1 || ls "$cuda"/lib/$lib* >/dev/null 2>&1 || fail "$lib not found under $cuda"
done

if [ ! -x "$chroot_dir/usr/bin/python3" ]; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  gpg=()
  [ "${CUPROBE_CHROOT_NO_GPG:-0}" = 1 ] && gpg=(--no-check-gpg)
  rm -rf "$chroot_dir"
  mkdir -p "$(dirname "$chroot_dir")"
  debootstrap "${gpg[@]}" --variant=minbase --include=python3 "$release" "$chroot_dir" "$mirror" \
    >"$chroot_dir.debootstrap.log" 2>&1 || { tail -20 "$chroot_dir.debootstrap.log"; fail "debootstrap $release"; }
fi
glibc="$(chroot "$chroot_dir" /usr/bin/ldd --version | sed -n 1p)"
echo "old_glibc: $release chroot: $glibc; $(chroot "$chroot_dir" /usr/bin/python3 --version)"

rm -rf "$chroot_dir/opt/cuprobe" "$chroot_dir/opt/cuda" "$chroot_dir/tmp/cuprobe-run"
mkdir -p "$chroot_dir/opt/cuprobe" "$chroot_dir/opt/cuda/lib"
tar -C "$chroot_dir/opt/cuprobe" --strip-components=1 -xzf "$tarball"
for lib in libcudart.so.13 libcudnn.so.9 libcudnn_graph.so.9; do
  src="$(ls "$cuda"/lib64/$lib "$cuda"/lib/$lib 2>/dev/null | sed -n 1p)"
  cp -L "$src" "$chroot_dir/opt/cuda/lib/$lib"
done
cat >"$chroot_dir/tmp/cuprobe-job.py" <<'EOF'
# A job as a user's would be on this distribution: its Python, the real CUDA runtime and cuDNN.
# The libraries are loaded into the global scope and their functions looked up there, as a
# program linked against them finds them (the shim's definitions first): dlsym on a library's
# own handle would search that library alone and bypass any LD_PRELOAD interposer.
import ctypes
ctypes.CDLL("/opt/cuda/lib/libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL("/opt/cuda/lib/libcudnn.so.9", mode=ctypes.RTLD_GLOBAL)
api = ctypes.CDLL(None)
count = ctypes.c_int(-1)
ptr = ctypes.c_void_p()
status = [api.cudaGetDeviceCount(ctypes.byref(count)), api.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(1 << 20))]
api.cudnnGetVersion.restype = ctypes.c_size_t
desc = ctypes.c_void_p()
status.append(api.cudnnBackendCreateDescriptor(1, ctypes.byref(desc)))  # CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
if status[-1] == 0:
    status.append(api.cudnnBackendDestroyDescriptor(desc))
print("job: cudaGetDeviceCount, cudaMalloc, cudnnBackendCreateDescriptor/Destroy ->", status,
      "cuDNN", api.cudnnGetVersion())
EOF
mount -t proc proc "$chroot_dir/proc"
trap 'umount "$chroot_dir/proc" 2>/dev/null || true' EXIT
in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 "$@"; }
in_chroot /opt/cuprobe/bin/cuprobe --version
in_chroot /opt/cuprobe/bin/cuprobe record -o /tmp/cuprobe-run -- /usr/bin/python3 /tmp/cuprobe-job.py ||
  fail "cuprobe record of the job failed"
ls "$chroot_dir"/tmp/cuprobe-run/*.cuprobe >/dev/null 2>&1 || fail "the shim wrote no trace in the chroot"
dump="$(in_chroot /opt/cuprobe/bin/cuprobe dump /tmp/cuprobe-run)"
for api in cudaGetDeviceCount cudaMalloc cudnnBackendCreateDescriptor; do
  grep -q "\"api\":\"$api\"" <<<"$dump" || fail "the trace has no $api call"
done
grep -q '"state":"exited"' <<<"$dump" || fail "the trace was not finalized (process state)"
rc=0
in_chroot /opt/cuprobe/bin/cuprobe analyze /tmp/cuprobe-run || rc=$?
[ "$rc" -le 1 ] || fail "cuprobe analyze exited $rc"
in_chroot /opt/cuprobe/bin/cuprobe report -o /tmp/cuprobe-run.html /tmp/cuprobe-run >/dev/null || fail "cuprobe report"
in_chroot /opt/cuprobe/bin/cuprobe export --format sqlite -o /tmp/cuprobe-run.sqlite /tmp/cuprobe-run >/dev/null ||
  fail "cuprobe export --format sqlite"

cp "$deb" "$chroot_dir/tmp/cuprobe.deb"
in_chroot /usr/bin/dpkg -i /tmp/cuprobe.deb >/dev/null || fail "dpkg -i of the .deb"
in_chroot /usr/bin/cuprobe --version
[ "$(in_chroot /usr/bin/cuprobe --shim-path)" = /usr/lib/cuprobe/libcuprobe.so ] || fail "the .deb's cuprobe looks elsewhere for its shim"
rc=0
in_chroot /usr/bin/cuprobe analyze /tmp/cuprobe-run >/dev/null || rc=$?
[ "$rc" -le 1 ] || fail "the .deb's cuprobe analyze exited $rc"
in_chroot /usr/bin/dpkg -r cuprobe >/dev/null || fail "dpkg -r cuprobe"
[ ! -e "$chroot_dir/usr/lib/cuprobe" ] || fail "dpkg -r left /usr/lib/cuprobe behind"
rm -f "$chroot_dir/tmp/cuprobe.deb"
echo "old_glibc: the shim recorded a real CUDA runtime and cuDNN on $glibc; the command analyzed, reported, exported;"
echo "           the .deb installed, worked and was removed with dpkg"
