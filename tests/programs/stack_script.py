"""Python frames in cuprobe's stacks: a helper library (argv[1]) called through ctypes makes the
CUDA call. Through PyDLL the thread keeps the GIL (the frames come through CPython's API);
through CDLL ctypes releases the GIL first, as PyTorch does around its operators (the frames are
read from the interpreter's structures, CPython 3.10 to 3.14)."""
import ctypes
import sys

held = ctypes.PyDLL(sys.argv[1])
released = ctypes.CDLL(sys.argv[1])


def allocate_with_gil():
    return held.helper_alloc(ctypes.c_size_t(2 << 20))  # STACK-LINE-GIL


def allocate_without_gil():
    # Not the function's first line, nor its first statement: a line read from the wrong place
    # (the frame's start, the function's first line) does not pass for the right one.
    size = ctypes.c_size_t(3 << 20)
    return released.helper_alloc(size)  # STACK-LINE-NOGIL


print("with gil", allocate_with_gil())
print("without gil", allocate_without_gil())
