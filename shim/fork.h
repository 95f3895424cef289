// What a forked child forgets: each module registers its own reset, and atfork_child
// (recorder_lifecycle.cpp) runs them all.
//
// The child of a traced process writes a trace file of its own from its first event (docs/shim.md,
// "Processes"). Anything a module keeps that names the parent's file, the parent's interned ids
// (strings, problems, knob sets, stacks) or the parent's other threads must go: a module that keeps
// such state puts one line beside it,
//
//     CUPROBE_FORK_CHILD_RESET(problems_after_fork);
//
// naming a `void()` function of its own. The registry is a linker section of function pointers
// (cuprobe_fork_child): complete when the shim is loaded, before any constructor runs, with no
// allocation, no lock and no list to keep by hand. A reset runs in the child, in its only thread,
// inside fork(): it may only forget state (stores, memset, munmap, mmap, close); it must not take a
// lock or write to the trace, and must not count on another module's reset: they run in no promised
// order. The forking thread's thread-local state is the child's only thread's, so resetting
// `__thread` data resets it for the whole child.
#pragma once

namespace cuprobe::shim {

using ForkChildReset = void (*)();

// Runs every registered reset (atfork_child).
void run_fork_child_resets();
// How many are registered (tests).
int fork_child_reset_count();

}  // namespace cuprobe::shim

// `retain` (GCC 11+) keeps an entry even where the link drops unreferenced sections.
#if defined(__has_attribute)
#if __has_attribute(retain)
#define CUPROBE_RETAIN_ATTR retain,
#endif
#endif
#ifndef CUPROBE_RETAIN_ATTR
#define CUPROBE_RETAIN_ATTR
#endif

// At namespace scope in the module's .cpp; `fn` an unqualified name of a `void()` function.
#define CUPROBE_FORK_CHILD_RESET(fn)                                                                 \
  __attribute__((used, CUPROBE_RETAIN_ATTR section("cuprobe_fork_child"))) static ::cuprobe::shim:: \
      ForkChildReset cuprobe_fork_child_reset_##fn = &fn
