/*
 * codegen_gpu_vector.c - vector types in GPU kernels: what a vectorized
 * loop (lower/vectorize.c) becomes in CUDA C and OpenCL C.
 *
 *                       CUDA C                          OpenCL C
 *   float32 x 4         float4                          float4
 *   bool x 4            int4 (-1 true, 0 false)         int4 (-1 true, as its comparisons give)
 *   contiguous load     *(float4 *)(p + i) if aligned,  vload4(0, p + i)
 *                       else kiln_vload_f32x4(p + i)
 *   contiguous store    *(float4 *)(p + i) = v,         vstore4(v, 0, p + i)
 *                       or kiln_vstore_f32x4(p + i, v)
 *   other indices       kiln_vgather / kiln_vscatter helpers (lane by lane)
 *   a + b, a < b        lane-wise helper                a + b, a < b (32-bit lanes)
 *   broadcast, ramp     lane-wise helper                (float4)(x), (int4)(0, 1, 2, 3) * s + b
 *   cast                lane-wise helper                convert_float4(x)
 *   select              lane-wise helper                select(f, t, c) (32-bit lanes)
 *   exp, sqrt, ...      lane-wise helper                exp(x) (float lanes)
 *
 * A lane-wise helper is TVM's way with CUDA vectors (CodeGenCUDA prints a
 * vector operation lane by lane): a function taking the operands' vectors
 * and computing each lane with the scalar printer, so every operation has
 * exactly the scalar code's semantics (min/max, floor division, NaN).  It
 * is emitted once per distinct body and inlined by the compiler; operands
 * are evaluated once.
 *
 * "Aligned" means the index's base is a provable multiple of the lane count
 * and the buffer's start is aligned: kernel parameters are device
 * allocations (the host refuses a byte offset, and cuMemAlloc aligns to
 * 256 bytes), and shared or local arrays a vector access touches are
 * declared __align__(16).
 *
 * What cannot be printed is an error that says what to change: more lanes
 * than the dialect's widest vector (CUDA 4, OpenCL 16), vectors of bool
 * buffers.
 */
#include "codegen_gpu.h"

#include <stdio.h>
#include <string.h>

/* ---- types ---- */

static const char *stem(GG *g, DType t) {
  const GpuDialectRow *r = gpu_row(g);
  if (dt_is_bool(t)) return "int";
  switch (t.code) {
  case kDLFloat:
    return t.bits == 32 ? "float" : t.bits == 64 ? "double" : NULL;
  case kDLInt:
    return t.bits == 8 ? "char" : t.bits == 16 ? "short" : t.bits == 32 ? "int" : t.bits == 64 ? r->vec_i64 : NULL;
  case kDLUInt:
    return t.bits == 8 ? "uchar" : t.bits == 16 ? "ushort" : t.bits == 32 ? "uint" : t.bits == 64 ? r->vec_u64 : NULL;
  default:
    return NULL;
  }
}

const char *gpu_vector_type(GG *g, DType t) {
  const GpuDialectRow *r = gpu_row(g);
  const char *s = stem(g, t);
  if (!s) {
    gpu_fail(g, kfmt("codegen: vector type %s is not supported in GPU kernels; vectorize a loop over "
                     "float, int or bool values, or drop the vectorize",
                     dt_str(t)));
    return "int";
  }
  if (t.lanes > r->max_lanes) {
    gpu_fail(g, kfmt("codegen: a vector of %d lanes (%s); %s vector types have at most %d lanes: split "
                     "the vectorized loop by %d (or fewer) and vectorize the inner part",
                     t.lanes, dt_str(t), r->name, r->max_lanes, r->max_lanes));
    return "int";
  }
  bool wide = t.lanes == 4 && t.bits == 64 && !dt_is_bool(t);
  return kfmt("%s%d%s", s, t.lanes, wide ? r->wide_suffix : "");
}

static const char *lane(GG *g, int i) { return gpu_row(g)->lane[i]; }

static const char *sname(DType t) {
  return kfmt("%s%d", dt_is_bool(t) ? "b" : t.code == kDLFloat ? "f" : t.code == kDLUInt ? "u" : "i", t.bits);
}

/* ---- lane-wise helpers ---- */

/* The operands of a vector node the lane-wise helper takes. */
static int operands(Expr *e, Expr **kid) {
  switch (e->kind) {
  case EK_Not:
  case EK_Cast:
    kid[0] = e->bin.a;
    return 1;
  case EK_Select:
    kid[0] = e->select.cond, kid[1] = e->select.t, kid[2] = e->select.f;
    return 3;
  case EK_Call:
    for (int i = 0; i < e->call.nargs; i++) kid[i] = e->call.args[i];
    return e->call.nargs;
  case EK_Broadcast:
    kid[0] = e->bcast.value;
    return 1;
  case EK_Ramp:
    kid[0] = e->ramp.base, kid[1] = e->ramp.stride;
    return 2;
  default:
    if (e->kind >= EK_Add && e->kind <= EK_Or) {
      kid[0] = e->bin.a, kid[1] = e->bin.b;
      return 2;
    }
    return -1;
  }
}

/* Lane i of e over the scalar placeholders ph[] of its operands. */
static Expr *lane_expr(Expr *e, Expr **ph, int i) {
  if (e->kind == EK_Broadcast) return ph[0];
  if (e->kind == EK_Ramp) return ir_add(ph[0], ir_mul(ph[1], ir_int(i, ph[1]->dtype)));
  Expr *n = KNEW(Expr);
  *n = *e;
  n->dtype = dt_scalar(e->dtype);
  switch (e->kind) {
  case EK_Not:
  case EK_Cast:
    n->bin.a = ph[0];
    break;
  case EK_Select:
    n->select.cond = ph[0], n->select.t = ph[1], n->select.f = ph[2];
    break;
  case EK_Call:
    n->call.args = KNEWN(Expr *, e->call.nargs > 0 ? e->call.nargs : 1);
    for (int k = 0; k < e->call.nargs; k++) n->call.args[k] = ph[k];
    break;
  default:
    n->bin.a = ph[0], n->bin.b = ph[1];
    break;
  }
  return n;
}

/* Print e as a call of a helper computing it lane by lane. */
static void lanewise(GG *g, Expr *e) {
  Expr *kid[8];
  int nk = operands(e, kid);
  if (nk < 0 || nk > 8) {
    gpu_fail(g, kfmt("codegen: a vector %s cannot appear in a GPU kernel", expr_kind_name(e->kind)));
    return;
  }
  const char *rt = gpu_vector_type(g, e->dtype);
  StrBuf sig = {0};
  sb_printf(&sig, "%s (", rt);
  for (int k = 0; k < nk; k++) sb_printf(&sig, "%s%s a%d", k ? ", " : "", gpu_type(g, kid[k]->dtype), k);
  sb_printf(&sig, ") {\n  %s r;\n", rt);
  StrBuf *saved = g->out;
  for (int i = 0; i < e->dtype.lanes && !g->failed; i++) {
    Expr *ph[8];
    for (int k = 0; k < nk; k++) {
      DType t = dt_scalar(kid[k]->dtype);
      ph[k] = ir_var("lane", t);
      const char *text = kid[k]->dtype.lanes == 1 ? kfmt("a%d", k) : kfmt("a%d.%s", k, lane(g, i));
      /* a bool lane is -1 or 0 in its vector: read it as 0 or 1 */
      if (kid[k]->dtype.lanes != 1 && dt_is_bool(t)) text = kfmt("(%s != 0)", text);
      pm_put(&g->names, ph[k], (void *)text);
    }
    StrBuf one = {0};
    g->out = &one;
    gpu_expr(g, lane_expr(e, ph, i));
    g->out = saved;
    if (dt_is_bool(e->dtype))
      sb_printf(&sig, "  r.%s = -(int)%s;\n", lane(g, i), one.data ? one.data : "0");
    else
      sb_printf(&sig, "  r.%s = %s;\n", lane(g, i), one.data ? one.data : "0");
    sb_free(&one);
  }
  sb_puts(&sig, "  return r;\n}\n");
  if (g->failed) {
    sb_free(&sig);
    return;
  }
  const char *name = pm_get(&g->lanewise, sig.data);
  if (!name) {
    /* kiln_v<operation>_<lanes type>, numbered when two bodies share it */
    char op[40];
    snprintf(op, sizeof op, "%s", e->kind == EK_Call ? intrin_name(e->call.op) : expr_kind_name(e->kind));
    for (char *c = op; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    name = kfmt("kiln_v%s_%sx%d", op, sname(e->dtype), e->dtype.lanes);
    for (int i = 1; pm_has(&g->emitted, name); i++) name = kfmt("kiln_v%s_%sx%d_%d", op, sname(e->dtype), e->dtype.lanes, i);
    g->nlanewise++;
    pm_put(&g->lanewise, kstrdup(sig.data), (void *)name);
    const char *open = strchr(sig.data, '(');
    gpu_need(g, name, kfmt("%s %s %s%s", gpu_row(g)->fn_prefix, rt, name, open));
  }
  sb_free(&sig);
  StrBuf *o = g->out;
  sb_printf(o, "%s(", name);
  for (int k = 0; k < nk; k++) {
    if (k) sb_puts(o, ", ");
    gpu_expr(g, kid[k]);
  }
  sb_putc(o, ')');
}

/* ---- native vector operations (OpenCL) ---- */

static bool lanes32(DType t) { return !dt_is_bool(t) && t.bits == 32; }

static bool native_intrinsic(Intrinsic op) {
  switch (op) {
  case INTRIN_exp: case INTRIN_exp_normal: case INTRIN_exp_approx: case INTRIN_log: case INTRIN_sqrt: case INTRIN_rsqrt: case INTRIN_tanh:
  case INTRIN_erf: case INTRIN_floor: case INTRIN_ceil: case INTRIN_round: case INTRIN_trunc: case INTRIN_sin: case INTRIN_cos:
  case INTRIN_pow: case INTRIN_fmod: case INTRIN_fabs: case INTRIN_sigmoid:
    return true;
  default:
    return false;
  }
}

static void bin(GG *g, const char *op, Expr *a, Expr *b) { cgp_binary(gpu_printer(g), op, a, b); }

/* Print e with the dialect's vector operators; false when it has none for
 * e (the caller prints it lane-wise). */
static bool native(GG *g, Expr *e) {
  StrBuf *o = g->out;
  DType t = e->dtype;
  bool num = !dt_is_bool(t);
  switch (e->kind) {
  case EK_Add: case EK_Sub: case EK_Mul: case EK_Div: {
    if (!num) return false;
    bin(g, cgp_binary_op(e->kind), e->bin.a, e->bin.b);
    return true;
  }
  case EK_Mod:
    if (!dt_is_intlike(t)) return false;
    bin(g, cgp_binary_op(e->kind), e->bin.a, e->bin.b);
    return true;
  case EK_EQ: case EK_NE: case EK_LT: case EK_LE: case EK_GT: case EK_GE: {
    if (!lanes32(e->bin.a->dtype)) return false; /* 32-bit lanes compare to intN */
    bin(g, cgp_binary_op(e->kind), e->bin.a, e->bin.b);
    return true;
  }
  case EK_And: case EK_Or:
    bin(g, cgp_binary_op(e->kind), e->bin.a, e->bin.b);
    return true;
  case EK_Not:
    sb_puts(o, "(!");
    gpu_expr(g, e->bin.a);
    sb_putc(o, ')');
    return true;
  case EK_Select:
    if (e->select.cond->dtype.lanes == 1 || !lanes32(t)) return false;
    cgp_call(gpu_printer(g), "select", 3, (Expr *[]){e->select.f, e->select.t, e->select.cond});
    return true;
  case EK_Cast:
    if (!num || dt_is_bool(e->bin.a->dtype)) return false;
    sb_printf(o, "convert_%s(", gpu_vector_type(g, t));
    gpu_expr(g, e->bin.a);
    sb_putc(o, ')');
    return true;
  case EK_Broadcast:
    if (!num) return false;
    sb_printf(o, "((%s)(", gpu_vector_type(g, t));
    gpu_expr(g, e->bcast.value);
    sb_puts(o, "))");
    return true;
  case EK_Ramp: {
    if (e->ramp.lanes > gpu_row(g)->max_lanes) return false;
    sb_printf(o, "(((%s)(", gpu_vector_type(g, t));
    for (int i = 0; i < e->ramp.lanes; i++) sb_printf(o, "%s%d", i ? ", " : "", i);
    sb_puts(o, ")) * ");
    gpu_expr(g, e->ramp.stride);
    sb_puts(o, " + ");
    gpu_expr(g, e->ramp.base);
    sb_putc(o, ')');
    return true;
  }
  case EK_Call:
    if (!dt_is_float(t) || !native_intrinsic(e->call.op)) return false;
    for (int i = 0; i < e->call.nargs; i++)
      if (e->call.args[i]->dtype.lanes != t.lanes) return false;
    gpu_intrinsic(g, e); /* OpenCL's math functions take vectors */
    return true;
  default:
    return false;
  }
}

/* ---- loads and stores ---- */

/* Whether e is a provable multiple of n. */
static bool divisible(Expr *e, int64_t n) {
  switch (e->kind) {
  case EK_IntImm:
    return e->int_value % n == 0;
  case EK_Add:
  case EK_Sub:
    return divisible(e->bin.a, n) && divisible(e->bin.b, n);
  case EK_Mul:
    return divisible(e->bin.a, n) || divisible(e->bin.b, n);
  default:
    return false;
  }
}

static GpuSpace space_of(GG *g, Expr *buf, bool *known) {
  intptr_t v = (intptr_t)pm_get(&g->space, buf);
  *known = v != 0;
  return v ? (GpuSpace)(v - 1) : SPACE_GLOBAL;
}

static bool contiguous(Expr *index, Expr **base) {
  if (index->kind != EK_Ramp || !ir_is_int_value(index->ramp.stride, 1)) return false;
  *base = index->ramp.base;
  return true;
}

static DType elem_type(GG *g, Expr *buf, const char *what) {
  DType *et = pm_get(&g->elem, buf);
  if (!et) {
    gpu_fail(g, kfmt("codegen: a vector %s of buffer '%s' whose element type is unknown", what, buf->var.name));
    return DT_I32;
  }
  if (dt_is_bool(*et))
    gpu_fail(g, kfmt("codegen: a vector %s of the bool buffer '%s'; GPU kernels read and write bool "
                     "buffers one element at a time: do not vectorize this stage's loop",
                     what, buf->var.name));
  return *et;
}

/* A helper's pointer parameter into buf's address space. */
static const char *ptr_param(GG *g, Expr *buf, DType et, bool is_const) {
  bool known;
  GpuSpace sp = space_of(g, buf, &known);
  return kfmt("%s%s%s*", gpu_row(g)->space_kw[sp], is_const ? "const " : "", gpu_type(g, et));
}

/* A helper's name: OpenCL needs one per address space. */
static const char *helper_name(GG *g, const char *what, Expr *buf, DType vt, Expr *index) {
  static const char *sfx[SPACE__COUNT] = {"_g", "_l", "_p"};
  bool known;
  GpuSpace sp = space_of(g, buf, &known);
  return kfmt("kiln_%s_%sx%d%s%s", what, sname(vt), vt.lanes, index ? kfmt("_%s", sname(index->dtype)) : "",
              gpu_row(g)->native_vectors ? sfx[sp] : "");
}

/* An aligned vector access: CUDA dereferences a vector pointer. */
static bool aligned(GG *g, Expr *buf, Expr *base, int lanes) {
  bool known;
  space_of(g, buf, &known);
  return known && divisible(base, lanes);
}

static void vload(GG *g, Expr *e) {
  StrBuf *o = g->out;
  Expr *buf = e->load.buf, *index = e->load.index, *base;
  DType et = elem_type(g, buf, "load");
  if (g->failed) return;
  int n = e->dtype.lanes;
  const char *vt = gpu_vector_type(g, e->dtype), *p = gpu_name(g, buf);
  const GpuDialectRow *r = gpu_row(g);
  if (contiguous(index, &base)) {
    if (r->native_vectors) {
      sb_printf(o, "vload%d(0, %s + ", n, p);
    } else if (aligned(g, buf, base, n)) {
      sb_printf(o, "(*(%s *)(%s + ", vt, p);
      gpu_expr(g, base);
      sb_puts(o, "))");
      return;
    } else {
      const char *name = helper_name(g, "vload", buf, e->dtype, NULL);
      StrBuf def = {0};
      sb_printf(&def, "%s %s %s(%s p) {\n  %s r;\n", r->fn_prefix, vt, name, ptr_param(g, buf, et, true), vt);
      for (int i = 0; i < n; i++) sb_printf(&def, "  r.%s = p[%d];\n", lane(g, i), i);
      sb_puts(&def, "  return r;\n}\n");
      gpu_need(g, name, def.data);
      sb_free(&def);
      sb_printf(o, "%s(%s + ", name, p);
    }
    gpu_expr(g, base);
    sb_putc(o, ')');
    return;
  }
  const char *name = helper_name(g, "vgather", buf, e->dtype, index);
  StrBuf def = {0};
  sb_printf(&def, "%s %s %s(%s p, %s i) {\n  %s r;\n", r->fn_prefix, vt, name, ptr_param(g, buf, et, true),
            gpu_vector_type(g, index->dtype), vt);
  for (int i = 0; i < n; i++) sb_printf(&def, "  r.%s = p[i.%s];\n", lane(g, i), lane(g, i));
  sb_puts(&def, "  return r;\n}\n");
  gpu_need(g, name, def.data);
  sb_free(&def);
  sb_printf(o, "%s(%s, ", name, p);
  gpu_expr(g, index);
  sb_putc(o, ')');
}

void gpu_vector_store(GG *g, Stmt *s) {
  StrBuf *o = g->out;
  Expr *buf = s->store.buf, *index = s->store.index, *value = s->store.value, *base;
  DType et = elem_type(g, buf, "store");
  if (g->failed) return;
  int n = index->dtype.lanes;
  if (value->dtype.lanes != n) value = ir_bcast(value, n);
  DType t = value->dtype;
  const char *vt = gpu_vector_type(g, t), *p = gpu_name(g, buf);
  if (g->failed) return;
  const GpuDialectRow *r = gpu_row(g);
  gpu_line(g);
  if (contiguous(index, &base)) {
    if (r->native_vectors) {
      sb_printf(o, "vstore%d(", n);
      gpu_expr(g, value);
      sb_printf(o, ", 0, %s + ", p);
      gpu_expr(g, base);
      sb_puts(o, ");\n");
    } else if (aligned(g, buf, base, n)) {
      sb_printf(o, "*(%s *)(%s + ", vt, p);
      gpu_expr(g, base);
      sb_puts(o, ") = ");
      gpu_expr(g, value);
      sb_puts(o, ";\n");
    } else {
      const char *name = helper_name(g, "vstore", buf, t, NULL);
      StrBuf def = {0};
      sb_printf(&def, "%s void %s(%s p, %s v) {\n", r->fn_prefix, name, ptr_param(g, buf, et, false), vt);
      for (int i = 0; i < n; i++) sb_printf(&def, "  p[%d] = v.%s;\n", i, lane(g, i));
      sb_puts(&def, "}\n");
      gpu_need(g, name, def.data);
      sb_free(&def);
      sb_printf(o, "%s(%s + ", name, p);
      gpu_expr(g, base);
      sb_puts(o, ", ");
      gpu_expr(g, value);
      sb_puts(o, ");\n");
    }
    return;
  }
  const char *name = helper_name(g, "vscatter", buf, t, index);
  StrBuf def = {0};
  sb_printf(&def, "%s void %s(%s p, %s i, %s v) {\n", r->fn_prefix, name, ptr_param(g, buf, et, false),
            gpu_vector_type(g, index->dtype), vt);
  for (int i = 0; i < n; i++) sb_printf(&def, "  p[i.%s] = v.%s;\n", lane(g, i), lane(g, i));
  sb_puts(&def, "}\n");
  gpu_need(g, name, def.data);
  sb_free(&def);
  sb_printf(o, "%s(%s, ", name, p);
  gpu_expr(g, index);
  sb_puts(o, ", ");
  gpu_expr(g, value);
  sb_puts(o, ");\n");
}

/* Buffers that vector loads and stores touch. */
static void scan_expr(IRVisitor *v, Expr *e) {
  if (e->kind == EK_Load && e->dtype.lanes > 1) pm_put(&((GG *)v->ud)->vecbuf, e->load.buf, (void *)1);
  ir_visit_expr_children(v, e);
}

static void scan_stmt(IRVisitor *v, Stmt *s) {
  if (s->kind == SK_Store && s->store.index->dtype.lanes > 1) pm_put(&((GG *)v->ud)->vecbuf, s->store.buf, (void *)1);
  ir_visit_stmt_children(v, s);
}

void gpu_vector_scan(GG *g, Stmt *body) {
  IRVisitor v = {scan_expr, scan_stmt, g};
  ir_visit_stmt(&v, body);
}

void gpu_vector_expr(GG *g, Expr *e) {
  if (g->failed) return;
  gpu_vector_type(g, e->dtype); /* the lane limit */
  if (g->failed) return;
  switch (e->kind) {
  case EK_Var:
    sb_puts(g->out, gpu_name(g, e));
    return;
  case EK_Let:
    gpu_expr(g, ir_substitute1(e->let.body, e->let.var, e->let.value));
    return;
  case EK_Load:
    vload(g, e);
    return;
  default:
    if (gpu_row(g)->native_vectors && native(g, e)) return;
    lanewise(g, e);
    return;
  }
}
