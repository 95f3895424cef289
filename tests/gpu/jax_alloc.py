"""A JAX program (XLA allocates through the CUDA driver, not through PyTorch): by default XLA's
allocator takes 75% of the device at start-up; then a few arrays and a matmul. cuprobe must see
that memory with XLA as owner, and memory-coverage must stay quiet."""
import jax
import jax.numpy as jnp

x = jnp.ones((8192, 8192), dtype=jnp.float32)
y = (x @ x).block_until_ready()
print("jax", jax.__version__, jax.devices(), float(y[0, 0]), flush=True)
