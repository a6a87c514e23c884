"""Tutorial 10: how Kiln generates GPU code (the seeds' note on CUDA generation).

Run from the repository root after building (POCL provides the OpenCL device
on a machine without a GPU):
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/10_gpu_codegen.py
"""
import numpy as np

import kiln
from kiln import te

# 1. The seeds' vector add, B = A + 2, with its loop bound to GPU threads:
#    blocks of 64 threads, one element per thread.
n = 1000
A = te.placeholder((n,), name="A")
B = te.compute((n,), lambda i: A[i] + 2.0, name="B")
s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], factor=64)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))

# 2. Lowering for a GPU target splits host from device: the host body
#    launches the kernel; the kernel's loops are the thread indices.
print(kiln.lower(s, [A, B], name="add2", target="cuda"))

# 3. The device code: CUDA C for "cuda" (compiled to PTX by NVRTC at build
#    time, when the toolkit is installed), OpenCL C for "opencl".
mod = kiln.build(s, [A, B], target="opencl", name="add2")
print(mod.imported_modules[0].get_source())

# 4. Run it on the OpenCL device: arrays live on the device, .numpy() copies
#    them back.
dev = kiln.opencl(0)
a = kiln.nd.array(np.arange(n, dtype="float32"), dev)
b = kiln.nd.empty((n,), "float32", dev)
mod["add2"](a, b)
print(b.device, b.numpy()[:5], "matches NumPy:", np.array_equal(b.numpy(), a.numpy() + 2))
