/* The dlsym interposer: hands out recording wrappers for driver functions looked up in a libcuda
 * handle (dlopen("libcuda.so.1") + dlsym, as statically linked CUDA runtimes inside NCCL and
 * cuDNN reach the driver), and is otherwise invisible.
 *
 * Why assembly: glibc's dlsym resolves RTLD_NEXT relative to its caller, and RTLD_DEFAULT in the
 * caller's scope, from its own return address. For those two handles this stub jumps to the
 * real dlsym with the caller's return address untouched (a tail jump that C cannot promise), so
 * every such lookup answers exactly as without cuprobe. Lookups in an explicit handle go to
 * cuprobe_dlsym_handle (driver_wrappers.cpp), which calls the real dlsym and, for a libcuda
 * handle, swaps in a wrapper. The real dlsym is found on first use (cuprobe_dlsym_init). */
#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        movq    cuprobe_real_dlsym(%rip), %rax
        testq   %rax, %rax
        jne     1f
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    cuprobe_dlsym_init
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
1:
        testq   %rdi, %rdi              /* RTLD_DEFAULT */
        je      2f
        cmpq    $-1, %rdi               /* RTLD_NEXT */
        je      2f
        jmp     cuprobe_dlsym_handle
2:
        jmp     *%rax
        .cfi_endproc
        .size   dlsym, .-dlsym
#elif defined(__aarch64__)
        .text
        .globl  dlsym
        .type   dlsym, %function
dlsym:
        .cfi_startproc
        adrp    x16, cuprobe_real_dlsym
        ldr     x16, [x16, :lo12:cuprobe_real_dlsym]
        cbnz    x16, 1f
        stp     x29, x30, [sp, #-32]!
        .cfi_def_cfa_offset 32
        .cfi_offset 29, -32
        .cfi_offset 30, -24
        mov     x29, sp
        stp     x0, x1, [sp, #16]
        bl      cuprobe_dlsym_init
        mov     x16, x0
        ldp     x0, x1, [sp, #16]
        ldp     x29, x30, [sp], #32
        .cfi_def_cfa_offset 0
1:
        cbz     x0, 2f                  /* RTLD_DEFAULT */
        cmn     x0, #1                  /* RTLD_NEXT */
        b.eq    2f
        b       cuprobe_dlsym_handle
2:
        br      x16
        .cfi_endproc
        .size   dlsym, .-dlsym
#endif
        .section .note.GNU-stack,"",%progbits
