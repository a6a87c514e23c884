"""Vector types in GPU kernels: a vectorized loop in a GPU schedule becomes
float4/int2/... in CUDA C and floatN with vloadN/vstoreN in OpenCL C.

Randomized GPU schedules (split + bind + vthread + vectorize the inner
part, shared-memory fetches vectorized) run on OpenCL (POCL without a GPU)
and are checked against the CPU lowering of the same compute on fresh
random inputs; the CUDA source of each is compiled by NVRTC for sm_90
without warnings.  Run by /usr/bin/python3 with KILN_LIBRARY_PATH set.
"""
import re

import numpy as np
import pytest

import kiln
from kiln import te
from e2e_common import nvrtc_or_skip

OPENCL = kiln.opencl(0).exist
needs_opencl = pytest.mark.skipif(not OPENCL, reason="no OpenCL device (install pocl-opencl-icd)")


def _nvrtc(s, args):
    f = nvrtc_or_skip(lambda: kiln.build(s, args, target="cuda -arch=sm_90", name="f"))
    src = f.imported_modules[0].get_source()
    log = kiln._ffi._get_api("driver.nvrtc_compile")(src, "sm_90", 1)
    assert "warning" not in log.lower(), log
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", log)]
    assert spills and max(spills) == 0, log
    return src


def _cpu(outputs, args, inputs):
    s = te.create_schedule([o.op for o in outputs])
    f = kiln.build(s, args, target="cpu", name="ref")
    outs = [kiln.nd.array(np.zeros([int(d) for d in o.shape], o.dtype)) for o in outputs]
    f["ref"](*[kiln.nd.array(x) for x in inputs], *outs)
    return [o.numpy() for o in outs]


def _opencl(s, args, inputs, outputs):
    f = kiln.build(s, args, target="opencl", name="f")
    dev = kiln.opencl(0)
    outs = [kiln.nd.array(np.zeros([int(d) for d in o.shape], o.dtype), dev) for o in outputs]
    f["f"](*[kiln.nd.array(x, dev) for x in inputs], *outs)
    return f.imported_modules[0].get_source(), [o.numpy() for o in outs]


# Elementwise bodies over A[i, j] (a), B[i, j] (b), a row vector R[j] (r),
# a column vector Q[i] (q) and the transposed T[j, i] (t): together they
# give contiguous, broadcast and strided (gathered) vector loads, float and
# int arithmetic, floor division of negative ints, min/max, comparisons,
# selects and casts.
_BODIES = [
    ("float32", lambda a, b, r, q, t: a * b + a),
    ("float32", lambda a, b, r, q, t: te.max(a, b) * 2.0 - te.min(r, q)),
    ("float32", lambda a, b, r, q, t: te.exp(a * 0.5) + t),
    ("float32", lambda a, b, r, q, t: te.if_then_else(a > b, 1.0, -0.5) * r + q),
    ("float32", lambda a, b, r, q, t: te.sqrt(te.abs(a)) + te.floor(b * 3.0)),
    ("int32", lambda a, b, r, q, t: te.floordiv(te.cast(a * 100.0, "int32"), 7)
     + te.floormod(te.cast(b * 50.0, "int32"), 5)),
    ("float32", lambda a, b, r, q, t: te.cast(te.cast(a * 10.0, "int32") * 3, "float32") + t * q),
    ("int32", lambda a, b, r, q, t: te.cast(te.all(a > 0.0, b < 0.5), "int32") * 4
     + te.cast(te.max(r, t) > 0.0, "int32")),
]


def _random_vector_case(rng, max_lanes, kind):
    """Case kind (an index of _BODIES, or len(_BODIES): the matmul) with
    random sizes, lanes, threads and virtual threads."""
    vec = int(rng.choice([2, 4] if max_lanes == 4 else [2, 4, 8]))
    if kind < len(_BODIES):
        dtype, body = _BODIES[kind]
        nt = int(rng.choice([4, 8, 16]))
        M = int(rng.integers(2, 9))
        # mostly whole vectors; sometimes a tail the guard covers (the loop
        # stays scalar then, and must still be right)
        N = vec * nt * int(rng.integers(1, 4)) + (int(rng.integers(1, vec)) if rng.random() < 0.2 else 0)
        A = te.placeholder((M, N), name="A")
        B = te.placeholder((M, N), name="B")
        R = te.placeholder((N,), name="R")
        Q = te.placeholder((M,), name="Q")
        T = te.placeholder((N, M), name="T")
        C = te.compute((M, N), lambda i, j: te.cast(body(A[i, j], B[i, j], R[j], Q[i], T[j, i]), dtype),
                       name="C")
        s = te.create_schedule(C.op)
        i, j = C.op.axis
        jo, ji = s[C].split(j, factor=vec)
        bx, tx = s[C].split(jo, factor=nt)
        if rng.random() < 0.5 and M % 2 == 0:
            vz, i = s[C].split(i, nparts=2)
            s[C].reorder(vz, i, bx, tx, ji)
            s[C].bind(vz, te.thread_axis("vthread"))
        s[C].bind(i, te.thread_axis("blockIdx.y"))
        s[C].bind(bx, te.thread_axis("blockIdx.x"))
        s[C].bind(tx, te.thread_axis("threadIdx.x"))
        s[C].vectorize(ji)
        used = {t.name for t in C.op.input_tensors}
        return [x for x in (A, B, R, Q, T) if x.name in used], [C], s, N % vec == 0
    # TVM's shared-memory matmul with the cooperative fetch and the local
    # accumulator's inner axis vectorized
    nt = int(rng.choice([2, 4]))
    tile = nt * vec
    M, N = tile * int(rng.integers(1, 3)), tile * int(rng.integers(1, 3))
    kstep = int(rng.choice([vec, 2 * vec]))
    K = kstep * int(rng.integers(1, 4))
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CC = s.cache_write(C, "local")
    by, yi = s[C].split(C.op.axis[0], factor=tile)
    bx, xi = s[C].split(C.op.axis[1], factor=tile)
    ty, yi = s[C].split(yi, nparts=nt)
    tx, xi = s[C].split(xi, nparts=nt)
    s[C].reorder(by, bx, ty, tx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[C].vectorize(xi)
    s[CC].compute_at(s[C], tx)
    yo, xo = CC.op.axis
    ko, ki = s[CC].split(CC.op.reduce_axis[0], factor=kstep)
    s[CC].reorder(ko, ki, yo, xo)
    s[CC].vectorize(xo)
    for S in (AA, BB):
        s[S].compute_at(s[CC], ko)
        a0, a1 = s[S].op.axis
        t0, a0 = s[S].split(a0, nparts=nt)
        a1o, a1i = s[S].split(a1, factor=vec)
        t1, a1o = s[S].split(a1o, nparts=nt)
        s[S].reorder(t0, t1, a0, a1o, a1i)
        s[S].bind(t0, te.thread_axis("threadIdx.y"))
        s[S].bind(t1, te.thread_axis("threadIdx.x"))
        s[S].vectorize(a1i)
    return [A, B], [C], s, True


def _inputs(rng, tensors):
    return [rng.standard_normal([int(d) for d in t.shape]).astype(t.dtype) for t in tensors]


@needs_opencl
@pytest.mark.parametrize("seed", range(2 * (len(_BODIES) + 1)))
def test_random_vectorized_schedules_opencl(seed):
    rng = np.random.default_rng(2000 + seed)
    ins, outs, s, whole = _random_vector_case(rng, 16, seed % (len(_BODIES) + 1))
    inputs = _inputs(rng, ins)
    src, got = _opencl(s, ins + outs, inputs, outs)
    ref = _cpu(outs, ins + outs, inputs)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    if whole:
        assert re.search(r"vstore(2|4|8)\(", src), src


@pytest.mark.parametrize("seed", range(2 * (len(_BODIES) + 1)))
def test_random_vectorized_schedules_cuda_source(seed):
    rng = np.random.default_rng(3000 + seed)
    ins, outs, s, whole = _random_vector_case(rng, 4, seed % (len(_BODIES) + 1))
    src = _nvrtc(s, ins + outs)
    if whole:
        assert re.search(r"\b(float|int)(2|4)\b", src), src


def _vadd(n, vec):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64 * vec)
    tx, vi = s[B].split(tx, factor=vec)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].vectorize(vi)
    return A, B, s


def test_cuda_aligned_vector_loads():
    """A contiguous ramp whose base is a multiple of the lanes reads and
    writes through float4 pointers; an odd base goes element by element."""
    A, B, s = _vadd(1024, 4)
    src = _nvrtc(s, [A, B])
    assert "*(float4 *)(B + " in src and "(*(float4 *)(A + " in src, src
    A = te.placeholder((1025,), name="A")
    B = te.compute((1024,), lambda i: A[i + 1] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=256)
    tx, vi = s[B].split(tx, factor=4)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].vectorize(vi)
    src = _nvrtc(s, [A, B])
    assert "kiln_vload_f32x4(A + " in src and "*(float4 *)(B + " in src, src


@needs_opencl
def test_opencl_vload_vstore():
    A, B, s = _vadd(1000, 8)
    src, (b,) = _opencl(s, [A, B], [np.arange(1000, dtype="float32")], [B])
    np.testing.assert_allclose(b, np.arange(1000) * 2.0 + 1.0)
    # 1000 is not a multiple of 512: the tail's guard keeps that loop scalar
    A, B, s = _vadd(1024, 8)
    src, (b,) = _opencl(s, [A, B], [np.arange(1024, dtype="float32")], [B])
    np.testing.assert_allclose(b, np.arange(1024) * 2.0 + 1.0)
    assert "vload8(0, A + " in src and "vstore8(" in src, src


def test_too_many_lanes_is_an_error():
    A, B, s = _vadd(1024, 8)
    with pytest.raises(kiln.KilnError, match=r"a vector of 8 lanes \(float32x8\); cuda vector types have at "
                                             r"most 4 lanes: split the vectorized loop by 4"):
        kiln.build(s, [A, B], target="cuda", name="f")
    A, B, s = _vadd(4096, 32)
    with pytest.raises(kiln.KilnError, match="opencl vector types have at most 16 lanes"):
        kiln.build(s, [A, B], target="opencl", name="f")
