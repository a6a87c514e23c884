"""Tutorial 1: vector add with tensor expressions, and its lowered IR.

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/01_vector_add.py
"""
import numpy as np

import kiln

# 1. Describe the computation: c[i] = a[i] + b[i] over n elements.
n = 1024
a = kiln.placeholder((n,), name="a")
b = kiln.placeholder((n,), name="b")
c = kiln.compute((n,), lambda i: a[i] + b[i], name="c")

# 2. A schedule says how to run it; the default is one plain loop.
s = kiln.create_schedule(c.op)
print(kiln.lower(s, [a, b, c], simple_mode=True))

# 3. Reshape the loop: 16 lanes of SIMD inside, the outer loop in parallel.
outer, inner = s[c].split(c.op.axis[0], factor=16)
s[c].vectorize(inner)
s[c].parallel(outer)
print(kiln.lower(s, [a, b, c], simple_mode=True))

# 4. Compile it to a native module and run it on NumPy data.
mod = kiln.build(s, [a, b, c], target="cpu", name="vector_add")
print(mod.function_names)
x = np.random.default_rng(0).uniform(size=n).astype("float32")
y = np.arange(n, dtype="float32")
z = kiln.nd.empty((n,), "float32")
mod["vector_add"](kiln.nd.array(x), kiln.nd.array(y), z)
print("matches NumPy:", np.allclose(z.numpy(), x + y))

# 5. The C the module was compiled from: the parallel task's loop.
lines = mod.get_source().splitlines()
k = next(i for i, line in enumerate(lines) if "for (int32_t i_outer" in line)
print("\n".join(lines[k:k + 3]))
