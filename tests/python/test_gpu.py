"""The GPU backend: schedules bound to threads, run as OpenCL kernels (POCL on
a machine without a GPU) and compiled as CUDA C to PTX with NVRTC.

Every kernel is checked against the CPU lowering of the same compute
(unscheduled) on fresh random inputs.  Run by /usr/bin/python3 with
KILN_LIBRARY_PATH set (tests/python/conftest.py).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import te
from e2e_common import nvrtc_or_skip

OPENCL = kiln.opencl(0).exist
needs_opencl = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (install pocl-opencl-icd)")


def _cpu_reference(outputs, args, inputs):
    """Run the unscheduled compute on the CPU."""
    s = te.create_schedule([o.op for o in outputs])
    f = kiln.build(s, args, target="cpu", name="ref")
    arrs = [kiln.nd.array(x) for x in inputs]
    outs = [kiln.nd.array(np.zeros([int(d) for d in o.shape], o.dtype)) for o in outputs]
    f["ref"](*arrs, *outs)
    return [o.numpy() for o in outs]


def _run_opencl(s, args, inputs, out_shapes, name="f"):
    f = kiln.build(s, args, target="opencl", name=name)
    dev = kiln.opencl(0)
    arrs = [kiln.nd.array(x, dev) for x in inputs]
    outs = [kiln.nd.array(np.zeros(shp, "float32"), dev) for shp in out_shapes]
    f[name](*arrs, *outs)
    return f, [o.numpy() for o in outs]


def _vector_add(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return A, B, s


@needs_opencl
@pytest.mark.parametrize("n", [3, 1000])
def test_vector_add_opencl(n):
    """The seeds' vector add (B = A + 2), threads bound as on CUDA."""
    A, B, s = _vector_add(n)
    a = np.random.rand(n).astype("float32")
    f, (b,) = _run_opencl(s, [A, B], [a], [(n,)])
    np.testing.assert_allclose(b, a + 2, rtol=1e-6)
    src = f.imported_modules[0].get_source()
    assert "__kernel" in src and "get_local_id(0)" in src
    # one block (n <= 64) reads no block index, and none is declared
    assert ("get_group_id(0)" in src) == (n > 64), src


def test_vector_add_cuda_source_compiles():
    A, B, s = _vector_add(1000)
    f = nvrtc_or_skip(lambda: kiln.build(s, [A, B], target="cuda -arch=sm_90", name="vadd"))
    src = f.imported_modules[0].get_source()
    assert 'extern "C" __global__ void __launch_bounds__(64, 1) vadd_kernel0' in src
    assert "blockIdx.x" in src and "threadIdx.x" in src
    log = kiln._ffi._get_api("driver.nvrtc_compile")(src, "sm_90", 0)
    assert "warning" not in log.lower(), log


def _matmul_schedule(M, N, K, tile=32, nthread=8, vthread=1, kstep=8):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    AL = s.cache_read(AA, "local", [C])
    BL = s.cache_read(BB, "local", [C])
    CC = s.cache_write(C, "local")
    by, yi = s[C].split(C.op.axis[0], factor=tile)
    bx, xi = s[C].split(C.op.axis[1], factor=tile)
    s[C].reorder(by, bx, yi, xi)
    tyz, yi = s[C].split(yi, nparts=vthread)
    ty, yi = s[C].split(yi, nparts=nthread)
    txz, xi = s[C].split(xi, nparts=vthread)
    tx, xi = s[C].split(xi, nparts=nthread)
    s[C].reorder(tyz, txz, ty, tx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tyz, te.thread_axis("vthread"))
    s[C].bind(txz, te.thread_axis("vthread"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CC].compute_at(s[C], tx)
    yo, xo = CC.op.axis
    ko, ki = s[CC].split(CC.op.reduce_axis[0], factor=kstep)
    s[CC].reorder(ko, ki, yo, xo)
    s[AA].compute_at(s[CC], ko)
    s[BB].compute_at(s[CC], ko)
    s[AL].compute_at(s[CC], ki)
    s[BL].compute_at(s[CC], ki)
    for S in (AA, BB):
        a0, a1 = s[S].op.axis
        t0, a0 = s[S].split(a0, nparts=nthread)
        t1, a1 = s[S].split(a1, nparts=nthread)
        s[S].bind(t0, te.thread_axis("threadIdx.y"))
        s[S].bind(t1, te.thread_axis("threadIdx.x"))
    return A, B, C, s


@needs_opencl
@pytest.mark.parametrize("vthread", [1, 2])
def test_tiled_matmul_shared_memory(vthread):
    """TVM's shared-memory matmul schedule: cache_read to shared and local,
    thread and virtual-thread binding, barriers; against the CPU lowering."""
    M, N, K = 64, 96, 48
    A, B, C, s = _matmul_schedule(M, N, K, tile=32, nthread=8, vthread=vthread)
    text = str(kiln.lower(s, [A, B, C], target="opencl"))
    assert "device_barrier" in text and "shared" in text
    a = np.random.rand(M, K).astype("float32")
    b = np.random.rand(K, N).astype("float32")
    f, (c,) = _run_opencl(s, [A, B, C], [a, b], [(M, N)])
    (ref,) = _cpu_reference([C], [A, B, C], [a, b])
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    src = f.imported_modules[0].get_source()
    assert "__local float" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src


def test_tiled_matmul_cuda_registers_and_spills():
    A, B, C, s = _matmul_schedule(256, 256, 256, tile=64, nthread=8, vthread=2)
    f = nvrtc_or_skip(lambda: kiln.build(s, [A, B, C], target="cuda -arch=sm_90", name="mm"))
    src = f.imported_modules[0].get_source()
    assert "__shared__ float" in src and "__syncthreads();" in src
    log = kiln._ffi._get_api("driver.nvrtc_compile")(src, "sm_90", 1)
    assert "warning" not in log.lower(), log
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", log)]
    assert regs and max(regs) <= 128, log
    assert spills and max(spills) == 0, log


def _random_gpu_case(rng):
    """A random compute and a random GPU schedule of it (split / bind /
    vthread / shared cache)."""
    kind = rng.choice(["ew2d", "matmul", "rowsum"])
    if kind == "ew2d":
        M, N = int(rng.integers(5, 70)), int(rng.integers(5, 70))
        A = te.placeholder((M, N), name="A")
        B = te.placeholder((M, N), name="B")
        C = te.compute((M, N), lambda i, j: A[i, j] * B[i, j] + A[i, j], name="C")
        s = te.create_schedule(C.op)
        i, j = C.op.axis
        if rng.random() < 0.5:
            f = s[C].fuse(i, j)
            bx, tx = s[C].split(f, factor=int(rng.choice([16, 32, 64])))
            s[C].bind(bx, te.thread_axis("blockIdx.x"))
            s[C].bind(tx, te.thread_axis("threadIdx.x"))
        else:
            by, ty = s[C].split(i, factor=int(rng.choice([2, 4, 8])))
            bx, tx = s[C].split(j, factor=int(rng.choice([4, 8, 16])))
            s[C].reorder(by, bx, ty, tx)
            if rng.random() < 0.5:
                vz, ty = s[C].split(ty, nparts=2)
                s[C].reorder(by, bx, vz, ty, tx)
                s[C].bind(vz, te.thread_axis("vthread"))
            s[C].bind(by, te.thread_axis("blockIdx.y"))
            s[C].bind(bx, te.thread_axis("blockIdx.x"))
            s[C].bind(ty, te.thread_axis("threadIdx.y"))
            s[C].bind(tx, te.thread_axis("threadIdx.x"))
        return [A, B], [C], s
    if kind == "rowsum":
        M, N = int(rng.integers(3, 50)), int(rng.integers(3, 90))
        A = te.placeholder((M, N), name="A")
        k = te.reduce_axis((0, N), name="k")
        C = te.compute((M,), lambda i: te.sum(A[i, k], axis=k), name="C")
        s = te.create_schedule(C.op)
        bx, tx = s[C].split(C.op.axis[0], factor=int(rng.choice([1, 4, 16])))
        s[C].bind(bx, te.thread_axis("blockIdx.x"))
        s[C].bind(tx, te.thread_axis("threadIdx.x"))
        if rng.random() < 0.5:
            ko, ki = s[C].split(C.op.reduce_axis[0], factor=int(rng.choice([3, 8])))
        return [A], [C], s
    nt = int(rng.choice([2, 4]))
    vt = int(rng.choice([1, 2]))
    tile = nt * vt * int(rng.choice([1, 2]))
    M, N = tile * int(rng.integers(1, 4)), tile * int(rng.integers(1, 4))
    kstep = int(rng.choice([2, 4]))
    K = kstep * int(rng.integers(1, 5))
    A, B, C, s = _matmul_schedule(M, N, K, tile=tile, nthread=nt, vthread=vt, kstep=kstep)
    return [A, B], [C], s


@needs_opencl
@pytest.mark.parametrize("seed", range(8))
def test_random_gpu_schedules(seed):
    rng = np.random.default_rng(1000 + seed)
    ins, outs, s = _random_gpu_case(rng)
    inputs = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in ins]
    shapes = [tuple(int(d) for d in o.shape) for o in outs]
    _, got = _run_opencl(s, ins + outs, inputs, shapes)
    ref = _cpu_reference(outs, ins + outs, inputs)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


# ---- errors ----


def test_unknown_target():
    A, B, s = _vector_add(16)
    with pytest.raises(kiln.KilnError, match=r"target 'rocm' is not supported \(supported: .*cuda, opencl\)"):
        kiln.build(s, [A, B], target="rocm")
    with pytest.raises(kiln.KilnError, match="-arch=compute_x is not a CUDA architecture like sm_90"):
        kiln.lower(s, [A, B], target="cuda -arch=compute_x")
    with pytest.raises(kiln.KilnError, match="opencl takes no attribute -arch"):
        kiln.lower(s, [A, B], target="opencl -arch=sm_90")
    t = kiln.target.Target("cuda -model=unknown")
    assert "gpu" in t.keys and "cuda" in t.keys
    with pytest.raises(kiln.KilnError, match="target_host 'cuda' is not a CPU target"):
        kiln.build(s, [A, B], target="opencl", target_host="cuda")


def test_too_many_threads():
    A = te.placeholder((4096,), name="A")
    B = te.compute((4096,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=2048)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(kiln.KilnError, match=r"2048 threads per block .* exceed the target's limit of 1024"):
        kiln.lower(s, [A, B], target="cuda")
    with pytest.raises(kiln.KilnError, match="limit of 256"):
        kiln.lower(s, [A, B], target="opencl")


def test_too_much_shared_memory():
    A, B, C, s = _matmul_schedule(512, 512, 512, tile=128, nthread=8, kstep=64)
    with pytest.raises(kiln.KilnError, match=r"bytes of shared memory per block exceed the target's 49152"):
        kiln.lower(s, [A, B, C], target="cuda")


def test_unbound_stage():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(kiln.KilnError, match="stage 'B' has no loop bound to a GPU thread"):
        kiln.lower(s, [A, B], target="opencl")


def test_thread_binding_on_cpu_target():
    A, B, s = _vector_add(16)
    with pytest.raises(kiln.KilnError, match="thread-bound loops need a GPU target"):
        kiln.build(s, [A, B], target="cpu")


def _in_subprocess(code, **env):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(kiln.__file__)),
                                       e.get("PYTHONPATH", "")])
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def test_no_cuda_driver():
    code = ("import numpy as np, kiln\n"
            "print(kiln.cuda(0).exist)\n"
            "try:\n"
            "    kiln.nd.array(np.zeros(4, 'float32'), kiln.cuda(0))\n"
            "except kiln.KilnError as e:\n"
            "    print('ERR', e)\n")
    rc, out = _in_subprocess(code, KILN_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    assert rc == 0, out
    assert "False" in out
    assert "cuda: cannot load the CUDA driver /nonexistent/libcuda.so.1" in out, out


def test_no_opencl_driver():
    code = ("import numpy as np, kiln\n"
            "print(kiln.opencl(0).exist)\n"
            "try:\n"
            "    kiln.nd.array(np.zeros(4, 'float32'), kiln.opencl(0))\n"
            "except kiln.KilnError as e:\n"
            "    print('ERR', e)\n")
    rc, out = _in_subprocess(code, KILN_OPENCL_LIBRARY="/nonexistent/libOpenCL.so.1")
    assert rc == 0, out
    assert "False" in out
    assert "opencl: cannot load the OpenCL library /nonexistent/libOpenCL.so.1" in out, out


@needs_opencl
def test_device_out_of_memory():
    with pytest.raises(kiln.KilnError, match="opencl: out of device memory: cannot allocate"):
        kiln.nd.empty((1 << 42,), "float32", kiln.opencl(0))


@needs_opencl
def test_wrong_device_argument():
    A, B, s = _vector_add(16)
    f = kiln.build(s, [A, B], target="opencl", name="v")
    a = kiln.nd.array(np.zeros(16, "float32"))
    b = kiln.nd.array(np.zeros(16, "float32"), kiln.opencl(0))
    with pytest.raises(kiln.KilnError, match=r"argument 0 \(A\) is on device type 1; this kernel runs on opencl"):
        f["v"](a, b)


@needs_opencl
def test_device_arrays_round_trip():
    dev = kiln.opencl(0)
    x = np.random.rand(3, 5).astype("float32")
    a = kiln.nd.array(x, dev)
    assert a.device == dev and repr(dev) == "opencl(0)"
    np.testing.assert_array_equal(a.numpy(), x)
    a.copyfrom(x * 2)
    np.testing.assert_array_equal(a.numpy(), x * 2)
    assert kiln.gpu(0) == kiln.cuda(0) and kiln.device("opencl", 0) == dev


@needs_opencl
def test_set_scope_shared_exchange_between_threads():
    """Each thread reads what another thread of its block wrote to shared
    memory: set_scope("shared") + compute_at + a barrier."""
    n = 256
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n,), lambda i: B[i] + B[(i // 64) * 64 + 63 - i % 64], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].set_scope("shared")
    s[B].compute_at(s[C], bx)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    text = str(kiln.lower(s, [A, C], target="opencl"))
    assert text.count("device_barrier") == 1, text
    a = np.random.rand(n).astype("float32")
    _, (c,) = _run_opencl(s, [A, C], [a], [(n,)])
    (ref,) = _cpu_reference([C], [A, C], [a])
    np.testing.assert_allclose(c, ref, rtol=1e-6)
    with pytest.raises(kiln.KilnError, match="set_scope: stage 'C' is an output of the schedule"):
        s[C].set_scope("shared")
    with pytest.raises(kiln.KilnError, match="set_scope: unknown scope 'texture'"):
        s[B].set_scope("texture")


@needs_opencl
def test_graph_executor_device_index():
    """lib["default"](kiln.opencl(N)) runs on device N; a device the machine
    does not have (POCL has one) is an error naming how many there are."""
    from kiln.contrib import graph_executor
    digits = os.path.join(os.path.dirname(__file__), "..", "..", "models", "digits", "digits.onnx")
    mod, params = kiln.frontend.from_onnx(digits, {"image": (2, 1, 8, 8)})
    lib = kiln.build(mod, target="opencl", params=params)
    x = np.random.rand(2, 1, 8, 8).astype("float32")
    outs = []
    for dev in (kiln.opencl(0), kiln.cpu()):
        if dev.device_type == 1:
            lib = kiln.build(mod, target="llvm", params=params)
        m = graph_executor.GraphModule(lib["default"](dev))
        m.set_input("image", x)
        m.run()
        outs.append(m.get_output(0).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    lib = kiln.build(mod, target="opencl", params=params)
    with pytest.raises(kiln.KilnError, match=r"opencl: no device 1 \(this machine has 1 OpenCL device"):
        lib["default"](kiln.opencl(1))
    with pytest.raises(kiln.KilnError, match="this model was built for opencl"):
        lib["default"](kiln.cuda(0))


@needs_opencl
def test_async_launch_failure_names_the_kernel():
    """OpenCL launches do not wait for their kernels; a kernel that failed
    is found at the next copy back (or sync) and named there.  POCL runs
    every valid kernel to completion, so KILN_OPENCL_FAIL_KERNEL marks one
    as failed."""
    code = ("import numpy as np, kiln\n"
            "from kiln import te\n"
            "A = te.placeholder((256,), name='A')\n"
            "B = te.compute((256,), lambda i: A[i] + 2.0, name='B')\n"
            "C = te.compute((256,), lambda i: B[i] * 3.0, name='C')\n"
            "s = te.create_schedule(C.op)\n"
            "for T in (B, C):\n"
            "    bx, tx = s[T].split(T.op.axis[0], factor=64)\n"
            "    s[T].bind(bx, te.thread_axis('blockIdx.x'))\n"
            "    s[T].bind(tx, te.thread_axis('threadIdx.x'))\n"
            "f = kiln.build(s, [A, C], target='opencl', name='two')\n"
            "dev = kiln.opencl(0)\n"
            "a = kiln.nd.array(np.ones(256, 'float32'), dev)\n"
            "c = kiln.nd.empty((256,), 'float32', dev)\n"
            "f['two'](a, c)\n"
            "print('LAUNCHED')\n"
            "try:\n"
            "    print(c.numpy()[:2])\n"
            "except kiln.KilnError as e:\n"
            "    print('ERR', e)\n")
    rc, out = _in_subprocess(code)
    assert rc == 0 and "LAUNCHED" in out and "[9. 9.]" in out, out
    rc, out = _in_subprocess(code, KILN_OPENCL_FAIL_KERNEL="two_kernel0")
    assert rc == 0 and "LAUNCHED" in out, out
    assert re.search(r"ERR .*opencl: kernel 'two_kernel0' failed on device 0 .*CL_OUT_OF_RESOURCES.*found at a copy",
                     out), out
