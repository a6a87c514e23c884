"""Tutorial 5: the loop IR of a schedule, primitive by primitive.

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/05_schedule_primitives.py
"""
import numpy as np

import kiln


def show(title, s, args):
    print("==", title)
    print(kiln.lower(s, args, simple_mode=True))


def matmul(n, m, k):
    A = kiln.placeholder((n, k), name="A")
    B = kiln.placeholder((k, m), name="B")
    r = kiln.reduce_axis((0, k), name="k")
    C = kiln.compute((n, m), lambda i, j: kiln.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


# split: one loop becomes two, outer x inner; 3 does not divide 8, so a
# guard skips the three iterations past the end.
A, B, C = matmul(8, 8, 8)
s = kiln.create_schedule(C.op)
i, j = s[C].op.axis
io, ii = s[C].split(i, factor=3)
show("split i by 3", s, [A, B, C])

# reorder: the order of the loops, here the reduction outermost.
s = kiln.create_schedule(C.op)
i, j = s[C].op.axis
(k,) = s[C].op.reduce_axis
s[C].reorder(k, i, j)
show("reorder k, i, j", s, [A, B, C])

# tile: split two axes and move both inner loops inside (a 2-D block).
s = kiln.create_schedule(C.op)
i, j = s[C].op.axis
io, jo, ii, ji = s[C].tile(i, j, 4, 4)
show("tile i, j by 4 x 4", s, [A, B, C])

# fuse: two adjacent loops become one over the product of their extents.
s = kiln.create_schedule(C.op)
i, j = s[C].op.axis
s[C].fuse(i, j)
show("fuse i, j", s, [A, B, C])

# vectorize, unroll, parallel: annotations on loops of the tiled nest.
s = kiln.create_schedule(C.op)
i, j = s[C].op.axis
(k,) = s[C].op.reduce_axis
io, jo, ii, ji = s[C].tile(i, j, 2, 8)
s[C].reorder(io, jo, k, ii, ji)
s[C].vectorize(ji)
s[C].unroll(ii)
s[C].parallel(io)
show("tile 2 x 8; k outside the block; vectorize ji, unroll ii, parallel io", s, [A, B, C])

# A producer and its consumer: D = A * 2, E = D + 1.
A = kiln.placeholder((4, 16), name="A")
D = kiln.compute((4, 16), lambda i, j: A[i, j] * 2, name="D")
E = kiln.compute((4, 16), lambda i, j: D[i, j] + 1, name="E")

s = kiln.create_schedule(E.op)
show("producer at the root (the default)", s, [A, E])

# compute_at: compute D inside E's loop over i, one row at a time.
s = kiln.create_schedule(E.op)
s[D].compute_at(s[E], s[E].op.axis[0])
show("compute_at: D inside E's loop i", s, [A, E])

# compute_inline: no D at all, its expression substituted into E.
s = kiln.create_schedule(E.op)
s[D].compute_inline()
show("compute_inline D", s, [A, E])

# cache_write: accumulate C's block in a local buffer, then write it out.
A, B, C = matmul(4, 16, 8)
s = kiln.create_schedule(C.op)
CL = s.cache_write(C, "local")
i, j = s[C].op.axis
s[CL].compute_at(s[C], i)
s[CL].vectorize(s[CL].op.axis[1])
show("cache_write C local, computed per row", s, [A, B, C])

# Every schedule computes the same thing: build the last one and check.
f = kiln.build(s, [A, B, C], name="matmul")
rng = np.random.default_rng(1)
a = rng.uniform(-1, 1, (4, 8)).astype("float32")
b = rng.uniform(-1, 1, (8, 16)).astype("float32")
c = kiln.nd.empty((4, 16), "float32")
f["matmul"](a, b, c)
print("matches NumPy:", np.allclose(c.numpy(), a @ b, atol=1e-5))

# An illegal schedule is an error with the reason, not wrong code.
s = kiln.create_schedule(C.op)
i, j = s[C].op.axis
io, ii = s[C].split(i, factor=2)
try:
    s[C].split(i, factor=2)
except kiln.KilnError as e:
    print("KilnError:", e)
