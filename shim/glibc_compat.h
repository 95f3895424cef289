// Binds the few glibc functions whose default symbol version is newer than glibc 2.28 to
// their older versions, so that a shim built on a new distribution loads into containers
// with glibc 2.28 and later (manylinux_2_28, which PyTorch's wheels target). Included into
// every shim source by the build (-include). The libdl/libpthread stubs of glibc >= 2.34 keep
// those versions, so the same binary runs on new systems too.
#pragma once

#if defined(__x86_64__)
#define CUPROBE_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define CUPROBE_GLIBC_BASE "GLIBC_2.17"
#endif

#ifdef CUPROBE_GLIBC_BASE
__asm__(".symver dlsym,dlsym@" CUPROBE_GLIBC_BASE);
__asm__(".symver dlvsym,dlvsym@" CUPROBE_GLIBC_BASE);
__asm__(".symver dlopen,dlopen@" CUPROBE_GLIBC_BASE);
__asm__(".symver dlclose,dlclose@" CUPROBE_GLIBC_BASE);
__asm__(".symver dladdr,dladdr@" CUPROBE_GLIBC_BASE);
__asm__(".symver pthread_key_create,pthread_key_create@" CUPROBE_GLIBC_BASE);
__asm__(".symver pthread_once,pthread_once@" CUPROBE_GLIBC_BASE);
__asm__(".symver pthread_setspecific,pthread_setspecific@" CUPROBE_GLIBC_BASE);
__asm__(".symver pthread_sigmask,pthread_sigmask@" CUPROBE_GLIBC_BASE);
__asm__(".symver pthread_create,pthread_create@" CUPROBE_GLIBC_BASE);
__asm__(".symver pthread_attr_setstacksize,pthread_attr_setstacksize@" CUPROBE_GLIBC_BASE);
#endif
