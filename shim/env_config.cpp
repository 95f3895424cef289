// See env_config.h.
#include "env_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder_internal.h"

namespace cuprobe::shim {

namespace {

// write(2) from a stack buffer: this runs in the traced process while it loads. CUPROBE_QUIET
// is read first (do_configure), so a quiet flag the shim cannot read is not quiet.
void warn_not_taken(const env::Var& var, const char* value) {
  if (!g_config.quiet) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, "cuprobe: %s=%.120s%s is not %s; %s\n", var.name, value,
                     strlen(value) > 120 ? "..." : "", var.expected, var.fallback);
    if (n > 0) (void)!write(STDERR_FILENO, buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
  }
  env_not_taken(var.id);
}

}  // namespace

const char* env_value(env::Id id) {
  const env::Var& var = env::var(id);
  const char* v = getenv(var.name);
  if (v == nullptr || *v == 0) return nullptr;
  if (env::value_ok(var, v)) return v;
  warn_not_taken(var, v);
  return nullptr;
}

bool env_flag(env::Id id) {
  bool on = false;
  const char* v = env_value(id);
  return v != nullptr && env::parse_flag(v, &on) && on;
}

void env_not_taken(env::Id id) { unsetenv(env::var(id).name); }

uint64_t env_number(env::Id id) {
  uint64_t n = 0;
  const char* v = env_value(id);
  const env::Var& var = env::var(id);
  bool ok = var.kind == env::Kind::kPercent ? env::parse_percent(v, &n) : env::parse_decimal(v, &n);
  return v != nullptr && ok ? n : var.def;
}

}  // namespace cuprobe::shim
