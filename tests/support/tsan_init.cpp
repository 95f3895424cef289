// Preloaded right after the ThreadSanitizer runtime in the TSan build (CUPROBE_PRELOAD_FIRST,
// tests/CMakeLists.txt). The runtime initializes itself only when instrumented code starts (the
// executable's preinit array, or an instrumented library's constructor): preloaded alone into an
// uninstrumented program (bash, sh, python3 that a test runs with shim_env()), its interceptors
// run uninitialized and the program dies at start. This constructor starts it.
extern "C" void __tsan_init();

__attribute__((constructor)) static void start_thread_sanitizer() { __tsan_init(); }
