# Sourced by the GPU validation scripts: installs the wheel where PyTorch lives, as a user would.
# When the machine's python3 is a virtual environment (PyTorch in a venv, as on the GPU machine:
# /opt/torch/.venv, made by uv), the wheel goes into that venv with its own pip (uninstalled on
# exit). Otherwise a new venv under $work that sees the system's site-packages (PyTorch installed
# system-wide); --without-pip + the system's pip where the image's python3 lacks ensurepip.
#   install_wheel WHEEL LOG     (needs $work; puts cuprobe on PATH; returns 1 on failure)
install_wheel() {
  local wheel="$1" log="$2"
  if python3 -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' && python3 -m pip --version >/dev/null 2>&1; then
    installed_into="$(python3 -c 'import sys; print(sys.prefix)')"
    python3 -m pip install -q --no-index --no-deps --no-cache-dir --force-reinstall "$wheel" >>"$log" 2>&1 || return 1
    trap 'python3 -m pip uninstall -y -q cuprobe >>"'"$log"'" 2>&1' EXIT
    export PATH="$installed_into/bin:$PATH"
  else
    installed_into=""
    python3 -m venv --system-site-packages "$work/venv" >>"$log" 2>&1 ||
      python3 -m venv --without-pip --system-site-packages "$work/venv" >>"$log" 2>&1
    "$work/venv/bin/python" -m pip install -q --no-index --no-deps --no-cache-dir "$wheel" >>"$log" 2>&1 || return 1
    export PATH="$work/venv/bin:$PATH"
  fi
}
