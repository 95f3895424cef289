"""Python frames in cuprobe's stacks: a helper library (argv[1]) called through ctypes makes the
CUDA call. Through PyDLL the thread keeps the GIL, so its Python frames are recorded; through
CDLL ctypes releases the GIL first, so only native frames are."""
import ctypes
import sys

held = ctypes.PyDLL(sys.argv[1])
released = ctypes.CDLL(sys.argv[1])


def allocate_with_gil():
    return held.helper_alloc(ctypes.c_size_t(2 << 20))  # STACK-LINE-GIL


def allocate_without_gil():
    return released.helper_alloc(ctypes.c_size_t(3 << 20))


print("with gil", allocate_with_gil())
print("without gil", allocate_without_gil())
