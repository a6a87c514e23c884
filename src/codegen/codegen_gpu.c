/*
 * codegen_gpu.c - the kernels of lowered GPU functions as device source:
 * one printer, two dialects.
 *
 *                     CUDA C                        OpenCL C
 *   kernel            extern "C" __global__         __kernel void
 *                     __launch_bounds__(threads, 1)
 *   buffer parameter  float* __restrict__ A         __global float* restrict A
 *   thread index      blockIdx.x, threadIdx.x       get_group_id(0), get_local_id(0)
 *   shared buffer     __shared__ float s[n]         __local float s[n]
 *   barrier           __syncthreads()               barrier(CLK_LOCAL_MEM_FENCE)
 *   64-bit int        long long                     long
 *
 * Each column of that table is a field of a row in dialects[] below; the
 * printer asks the row and never which dialect it prints.
 *
 * A kernel body (split_host_device.c) runs once per thread: a loop bound
 * to a thread tag becomes `int v = <index>;`, guarded by `if (v < extent)`
 * where the loop is shorter than the launch extent.  Shared buffers are
 * declared at the top of the kernel (OpenCL allows __local variables only
 * there), local ones where they are allocated.  Integer floor division and
 * modulo keep Kiln's semantics through small helpers, a signed << shifts
 * unsigned bits as the C printer's does, and min/max are the comparisons
 * the C back end uses, so a kernel computes what the CPU code
 * computes.  Vector expressions (a vectorized loop) are printed by
 * codegen_gpu_vector.c.
 */
#include "codegen_gpu.h"
#include "codegen_print.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void gfail(GG *g, const char *msg) {
  if (!g->failed) kiln_set_error("%s (kernel '%s')", msg, g->k->name);
  g->failed = 1;
}

static void cuda_nonfinite(StrBuf *o, double v, bool f32) {
  if (f32)
    sb_printf(o, "__int_as_float(%s)", isnan(v) ? "0x7fc00000" : v < 0 ? "0xff800000" : "0x7f800000");
  else
    sb_printf(o, "__longlong_as_double(%s)",
              isnan(v) ? "0x7ff8000000000000LL" : v < 0 ? "(long long)0xfff0000000000000ULL" : "0x7ff0000000000000LL");
}

static void opencl_nonfinite(StrBuf *o, double v, bool f32) {
  sb_printf(o, "((%s)%s)", f32 ? "float" : "double", isnan(v) ? "NAN" : v < 0 ? "-INFINITY" : "INFINITY");
}

/* __launch_bounds__(threads, 1): at most `threads` per block, and one
 * resident block is enough - ptxas may then use the registers a tile's
 * accumulators need (with the threads alone it aims at more resident
 * blocks, and a seed config's eight interleaved virtual threads spilled). */
static void cuda_kernel_head(StrBuf *o, bool known, int64_t threads, const int64_t e[3]) {
  (void)e;
  sb_puts(o, "extern \"C\" __global__ void ");
  if (known) sb_printf(o, "__launch_bounds__(%lld, 1) ", (long long)threads);
}

static void opencl_kernel_head(StrBuf *o, bool known, int64_t threads, const int64_t e[3]) {
  (void)threads;
  sb_puts(o, "__kernel ");
  if (known)
    sb_printf(o, "__attribute__((reqd_work_group_size(%lld, %lld, %lld))) ", (long long)e[0], (long long)e[1],
              (long long)e[2]);
  sb_puts(o, "void ");
}

static const GpuDialectRow dialects[] = {
    [GPU_CUDA] = {"cuda", "bool", "unsigned char", "signed char", "long long", "unsigned char", "unsigned short",
                  "unsigned int", "unsigned long long", "LL", "ULL", "__device__ __forceinline__", true,
                  {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"}, "%s",
                  "__syncthreads();\n", "__shared__", "", " __restrict__", NULL, cuda_nonfinite, cuda_kernel_head,
                  4, false, "longlong", "ulonglong", "_16a", {"x", "y", "z", "w"}, {"", "", ""},
                  "__align__(16) "},
    [GPU_OPENCL] = {"opencl", "int", "uchar", "char", "long", "uchar", "ushort", "uint", "ulong", "L", "UL", "inline",
                    false,
                    {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)", "get_local_id(0)", "get_local_id(1)",
                     "get_local_id(2)"},
                    "(int)%s", "barrier(CLK_LOCAL_MEM_FENCE);\n", "__local", "__global ", " restrict",
                    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n", opencl_nonfinite, opencl_kernel_head,
                    16, true, "long", "ulong", "",
                    {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"},
                    {"__global ", "__local ", ""}, ""},
};

static const GpuDialectRow *row(GG *g) { return &dialects[g->d]; }
const GpuDialectRow *gpu_row(GG *g) { return row(g); }

/* ---- types and names ---- */

static const char *gtype(GG *g, DType t) {
  if (t.lanes != 1) return gpu_vector_type(g, t);
  const GpuDialectRow *r = row(g);
  if (dt_is_bool(t)) return r->bool_type;
  switch (t.code) {
  case kDLFloat:
    if (t.bits == 32) return "float";
    if (t.bits == 64) return "double";
    break;
  case kDLInt:
    if (t.bits == 8) return r->i8;
    if (t.bits == 16) return "short";
    if (t.bits == 32) return "int";
    if (t.bits == 64) return r->i64;
    break;
  case kDLUInt:
    if (t.bits == 8) return r->u8;
    if (t.bits == 16) return r->u16;
    if (t.bits == 32) return r->u32;
    if (t.bits == 64) return r->u64;
    break;
  default:
    break;
  }
  gfail(g, kfmt("codegen: data type %s is not supported in GPU kernels", dt_str(t)));
  return "int";
}

/* The element type of a buffer in memory (bool is one byte). */
static const char *etype(GG *g, DType t) {
  if (dt_is_bool(t)) return row(g)->byte_type;
  return gtype(g, t);
}

static const char *reserved[] = {
    "int", "float", "double", "char", "short", "long", "unsigned", "signed", "void", "bool", "if", "else",
    "for", "while", "do", "return", "break", "continue", "switch", "case", "default", "const", "static",
    "struct", "union", "typedef", "sizeof", "restrict", "kernel", "global", "local", "private",
    "constant", "half", "uchar", "ushort", "uint", "ulong", "min", "max", "register", "auto", "goto",
    "volatile", "extern", "inline", "new", "delete", "this", "class", "template", "namespace",
    "operator", "true", "false", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", NULL};

static const char *vname(GG *g, Expr *v) {
  const char *n = pm_get(&g->names, v);
  if (n) return n;
  char buf[96];
  size_t len = 0;
  for (const char *p = v->var.name; *p && len < sizeof buf - 12; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    buf[len++] = ok ? ch : '_';
  }
  buf[len] = 0;
  if (!len || (buf[0] >= '0' && buf[0] <= '9') || !strncmp(buf, "__", 2) || !strncmp(buf, "kiln_", 5) ||
      !strncmp(buf, "get_", 4)) {
    memmove(buf + 2, buf, len + 1);
    buf[0] = 'v';
    buf[1] = '_';
  }
  for (int i = 0; reserved[i]; i++)
    if (!strcmp(buf, reserved[i])) strcat(buf, "_");
  const char *name = kstrdup(buf);
  for (int i = 1; pm_has(&g->used, name); i++) name = kfmt("%s_%d", buf, i);
  pm_put(&g->used, name, (void *)1);
  pm_put(&g->names, v, (void *)name);
  return name;
}

static void line(GG *g) {
  for (int i = 0; i < g->indent; i++) sb_putc(g->out, ' ');
}
void gpu_line(GG *g) { line(g); }

/* A thread index or local array named name (a kernel declares each once):
 * where this kernel declared it before, open a scope of its own ("{") and
 * return true, for close_scope to close. */
static bool open_scope_if_declared(GG *g, const char *name) {
  const char *key = kfmt("%s\n%s", g->k->name, name);
  bool again = pm_get(&g->thread_decl, key) != NULL;
  pm_put(&g->thread_decl, key, (void *)1);
  if (again) {
    line(g);
    sb_puts(g->out, "{\n");
    g->indent += 2;
  }
  return again;
}

static void close_scope(GG *g, bool opened) {
  if (!opened) return;
  g->indent -= 2;
  line(g);
  sb_puts(g->out, "}\n");
}

static void need(GG *g, const char *name, const char *def) {
  if (pm_has(&g->emitted, name)) return;
  pm_put(&g->emitted, kstrdup(name), (void *)1);
  sb_puts(&g->helpers, def);
}
void gpu_need(GG *g, const char *name, const char *def) { need(g, name, def); }
void gpu_fail(GG *g, const char *msg) { gfail(g, msg); }
const char *gpu_type(GG *g, DType t) { return gtype(g, t); }

static const char *fn_prefix(GG *g) { return row(g)->fn_prefix; }

/* ---- expressions ---- */

static void expr(GG *g, Expr *e);

static void print_int(GG *g, int64_t v, DType t) {
  StrBuf *o = g->out;
  if (dt_is_bool(t)) {
    sb_printf(o, "%d", v ? 1 : 0);
    return;
  }
  if (t.bits == 64) {
    const char *sfx = t.code == kDLUInt ? row(g)->ulit64 : row(g)->lit64;
    if (v == INT64_MIN)
      sb_printf(o, "(-9223372036854775807%s - 1)", sfx);
    else if (t.code == kDLUInt)
      sb_printf(o, "%llu%s", (unsigned long long)v, sfx);
    else
      sb_printf(o, "(%lld%s)", (long long)v, sfx);
    return;
  }
  if (t.code == kDLInt && t.bits == 32) {
    if (v == INT32_MIN)
      sb_puts(o, "(-2147483647 - 1)");
    else
      sb_printf(o, v < 0 ? "(%lld)" : "%lld", (long long)v);
    return;
  }
  sb_printf(o, "((%s)%lld)", gtype(g, t), (long long)v);
}

static void print_float(GG *g, double v, DType t) {
  StrBuf *o = g->out;
  bool f32 = t.bits == 32;
  if (t.bits != 32 && t.bits != 64) {
    gtype(g, t);
    return;
  }
  if (isnan(v) || isinf(v)) {
    row(g)->nonfinite(o, v, f32);
    return;
  }
  char buf[64];
  cgp_float_digits(buf, v, f32);
  sb_printf(o, v < 0 ? "(%s%s)" : "%s%s", buf, f32 ? "f" : "");
}

static void sub_expr(void *g, Expr *e) { expr(g, e); }

ExprPrinter gpu_printer(GG *g) { return (ExprPrinter){g->out, sub_expr, g}; }

static void binary(GG *g, const char *op, Expr *a, Expr *b) { cgp_binary(gpu_printer(g), op, a, b); }

/* e's text, for a shared printer taking its operands as text */
static const char *text(GG *g, Expr *e) {
  StrBuf *saved = g->out, one = {0};
  g->out = &one;
  expr(g, e);
  g->out = saved;
  const char *r = kstrdup(one.data ? one.data : "");
  sb_free(&one);
  return r;
}

static const char *type_name(void *g, DType t) { return gtype(g, t); }

/* fn(a) or fn(a, b) */
static void call2(GG *g, const char *fn, Expr *a, Expr *b) {
  Expr *args[2] = {a, b};
  cgp_call(gpu_printer(g), fn, b ? 2 : 1, args);
}

static const char *short_name(DType t) { return kfmt("%c%d", t.code == kDLFloat ? 'f' : t.code == kDLUInt ? 'u' : 'i', t.bits); }

static void minmax(GG *g, Expr *e, bool is_min) {
  DType t = e->dtype;
  const char *tn = gtype(g, t);
  const char *name = kfmt("kiln_%s_%s", is_min ? "min" : "max", short_name(t));
  need(g, name, cgp_minmax_def(fn_prefix(g), tn, name, is_min));
  call2(g, name, e->bin.a, e->bin.b);
}

static const char *mathfn(GG *g, const char *base, DType t);

static void floordiv(GG *g, Expr *e, bool is_mod) {
  DType t = e->dtype;
  const char *tn = gtype(g, t);
  if (t.code == kDLFloat) {
    const char *fl = mathfn(g, "floor", t);
    if (!is_mod) {
      sb_printf(g->out, "%s(", fl);
      binary(g, "/", e->bin.a, e->bin.b);
      sb_putc(g->out, ')');
      return;
    }
    const char *name = kfmt("kiln_floormod_%s", short_name(t));
    need(g, name, cgp_float_floormod_def(fn_prefix(g), tn, name, fl));
    call2(g, name, e->bin.a, e->bin.b);
    return;
  }
  if (cgp_floordiv_is_plain(g->an, e)) {
    binary(g, is_mod ? "%" : "/", e->bin.a, e->bin.b);
    return;
  }
  const char *name = kfmt("kiln_%s_%s", is_mod ? "floormod" : "floordiv", short_name(t));
  need(g, name, cgp_int_floordiv_def(fn_prefix(g), tn, name, is_mod));
  call2(g, name, e->bin.a, e->bin.b);
}

/* A math function's name for float type t: CUDA has expf/exp, OpenCL
 * overloads exp. */
static const char *mathfn(GG *g, const char *base, DType t) {
  return row(g)->f32_math_suffix && t.bits == 32 ? kfmt("%sf", base) : base;
}

static void intrinsic(GG *g, Expr *e) {
  Expr **a = e->call.args;
  DType t = e->dtype, at = e->call.nargs ? a[0]->dtype : t;
  StrBuf *o = g->out;
  switch (e->call.op) {
#define M1(n, f)                                                                                   \
  case INTRIN_##n:                                                                                 \
    call2(g, mathfn(g, f, t), a[0], NULL);                                                         \
    return;
    M1(exp, "exp") M1(exp_normal, "exp") M1(exp_approx, "exp") M1(log, "log") M1(sqrt, "sqrt") M1(rsqrt, "rsqrt") M1(tanh, "tanh") M1(erf, "erf")
    M1(floor, "floor") M1(ceil, "ceil") M1(round, "rint") M1(trunc, "trunc") M1(sin, "sin") M1(cos, "cos")
    M1(tan, "tan") M1(asin, "asin") M1(acos, "acos") M1(atan, "atan") M1(sinh, "sinh") M1(cosh, "cosh")
    M1(asinh, "asinh") M1(acosh, "acosh") M1(atanh, "atanh")
#undef M1
  case INTRIN_pow:
    call2(g, mathfn(g, "pow", t), a[0], a[1]);
    return;
  case INTRIN_fmod:
    call2(g, mathfn(g, "fmod", t), a[0], a[1]);
    return;
  case INTRIN_fabs:
    if (t.code == kDLFloat) {
      call2(g, mathfn(g, "fabs", t), a[0], NULL);
    } else if (t.code == kDLUInt) {
      expr(g, a[0]);
    } else {
      const char *tn = gtype(g, t), *name = kfmt("kiln_abs_%s", short_name(t));
      need(g, name, kfmt("%s %s %s(%s a) { return a < 0 ? -a : a; }\n", fn_prefix(g), tn, name, tn));
      call2(g, name, a[0], NULL);
    }
    return;
  case INTRIN_sigmoid: {
    const char *one = t.bits == 32 ? "1.0f" : "1.0";
    sb_printf(o, "(%s / (%s + %s(-(", one, one, mathfn(g, "exp", t));
    expr(g, a[0]);
    sb_puts(o, "))))");
    return;
  }
  case INTRIN_isnan:
  case INTRIN_isinf:
    sb_printf(o, "(%s(", e->call.op == INTRIN_isnan ? "isnan" : "isinf");
    expr(g, a[0]);
    sb_puts(o, ") != 0)");
    (void)at;
    return;
  case INTRIN_shift_left: /* a signed one as unsigned bits */
    sb_puts(o, cgp_shift_left(t, text(g, a[0]), text(g, a[1]), type_name, g));
    return;
  case INTRIN_shift_right:
    binary(g, ">>", a[0], a[1]);
    return;
  case INTRIN_bitwise_and:
    binary(g, "&", a[0], a[1]);
    return;
  case INTRIN_bitwise_or:
    binary(g, "|", a[0], a[1]);
    return;
  case INTRIN_bitwise_xor:
    binary(g, "^", a[0], a[1]);
    return;
  case INTRIN_bitwise_not:
    sb_puts(o, "(~");
    expr(g, a[0]);
    sb_putc(o, ')');
    return;
  case INTRIN_likely:
    sb_putc(o, '(');
    expr(g, a[0]);
    sb_putc(o, ')');
    return;
  case INTRIN_bf16_pack2:
  case INTRIN_bf16_dot2:
  case INTRIN_bf16_half:
  case INTRIN_u8s8_dot4:
    gfail(g, kfmt("codegen: %s is a CPU intrinsic (the bfloat16 and int8 kernels are CPU kernels)", intrin_name(e->call.op)));
    return;
  case INTRIN_prefetch: /* a CPU cache hint: no kernel dialect has it, and dropping it keeps the meaning */
    sb_putc(o, '0');
    return;
  case INTRIN__COUNT:
    break;
  }
  KUNREACHABLE();
}

static void expr(GG *g, Expr *e) {
  StrBuf *o = g->out;
  if (g->failed) return;
  if (e->dtype.lanes != 1) {
    gpu_vector_expr(g, e);
    return;
  }
  switch (e->kind) {
  case EK_IntImm:
    print_int(g, e->int_value, e->dtype);
    return;
  case EK_FloatImm:
    print_float(g, e->float_value, e->dtype);
    return;
  case EK_Var:
    sb_puts(o, vname(g, e));
    return;
  case EK_Add: case EK_Sub: case EK_Mul: case EK_Div:
    cgp_arith(gpu_printer(g), e, gpu_type(g, e->dtype), gpu_type(g, DT_U32));
    return;
  case EK_EQ: case EK_NE: case EK_LT: case EK_LE: case EK_GT: case EK_GE: case EK_And: case EK_Or:
    binary(g, cgp_binary_op(e->kind), e->bin.a, e->bin.b);
    return;
  case EK_Mod:
    if (dt_is_float(e->dtype))
      call2(g, mathfn(g, "fmod", e->dtype), e->bin.a, e->bin.b);
    else
      cgp_arith(gpu_printer(g), e, gpu_type(g, e->dtype), gpu_type(g, DT_U32));
    return;
  case EK_FloorDiv:
    floordiv(g, e, false);
    return;
  case EK_FloorMod:
    floordiv(g, e, true);
    return;
  case EK_Min:
    minmax(g, e, true);
    return;
  case EK_Max:
    minmax(g, e, false);
    return;
  case EK_Not:
    sb_puts(o, "(!");
    expr(g, e->bin.a);
    sb_putc(o, ')');
    return;
  case EK_Select:
    sb_putc(o, '(');
    expr(g, e->select.cond);
    sb_puts(o, " ? ");
    expr(g, e->select.t);
    sb_puts(o, " : ");
    expr(g, e->select.f);
    sb_putc(o, ')');
    return;
  case EK_Cast:
    if (dt_is_bool(e->dtype)) {
      sb_puts(o, "(");
      expr(g, e->bin.a);
      sb_puts(o, " != 0)");
    } else {
      sb_printf(o, "((%s)", gtype(g, e->dtype));
      expr(g, e->bin.a);
      sb_putc(o, ')');
    }
    return;
  case EK_Call:
    if (cgp_intrin_wraps(e->call.op, e->dtype)) { /* computed in int */
      sb_printf(o, "((%s)", gtype(g, e->dtype));
      intrinsic(g, e);
      sb_putc(o, ')');
    } else {
      intrinsic(g, e);
    }
    return;
  case EK_Load: {
    DType *et = pm_get(&g->elem, e->load.buf);
    bool boolbuf = et && dt_is_bool(*et);
    if (boolbuf) sb_puts(o, "(");
    sb_printf(o, "%s[", vname(g, e->load.buf));
    expr(g, e->load.index);
    sb_putc(o, ']');
    if (boolbuf) sb_puts(o, " != 0)");
    return;
  }
  case EK_Let:
    expr(g, ir_substitute1(e->let.body, e->let.var, e->let.value));
    return;
  case EK_StrImm:
  case EK_Read:
  case EK_Ramp:
  case EK_Broadcast:
  case EK_Reduce:
    gfail(g, kfmt("codegen: %s cannot appear in a GPU kernel", expr_kind_name(e->kind)));
    return;
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

void gpu_expr(GG *g, Expr *e) { expr(g, e); }
void gpu_intrinsic(GG *g, Expr *e) { intrinsic(g, e); }
const char *gpu_name(GG *g, Expr *var) { return vname(g, var); }

/* ---- statements ---- */

static const char *thread_index(GG *g, int tag) {
  return kfmt(row(g)->thread_index_fmt, row(g)->thread_index[tag]);
}

static void stmt(GG *g, Stmt *s);

static void block(GG *g, Stmt *s) {
  g->indent += 2;
  stmt(g, s);
  g->indent -= 2;
}

/* The statement printer codegen_print.c's shared statements use. */
static void sub_stmt(void *g, Stmt *s) { stmt(g, s); }
static const char *var_type(void *g, DType t) { return gtype(g, t); }
static const char *var_name(void *g, Expr *v) { return vname(g, v); }

static StmtPrinter stmt_printer(GG *g) { return (StmtPrinter){gpu_printer(g), &g->indent, sub_stmt, var_type, var_name}; }

static void stmt(GG *g, Stmt *s) {
  StrBuf *o = g->out;
  if (g->failed) return;
  switch (s->kind) {
  case SK_For: {
    const char *v = vname(g, s->for_.var);
    const char *vt = gtype(g, s->for_.var->dtype);
    if (s->for_.fkind == FOR_THREAD) {
      int tag = lower_thread_tag(s->for_.thread_tag);
      bool full = lower_thread_loop_full(g->k, s);
      analyzer_bind_range(g->an, s->for_.var, s->for_.min, s->for_.extent);
      if (full && !ir_stmt_uses_var(s->for_.body, s->for_.var)) { /* an index nothing reads */
        stmt(g, s->for_.body);
        return;
      }
      /* two fetches bound to the same thread axis side by side may name
       * their indices alike */
      bool again = open_scope_if_declared(g, v);
      line(g);
      sb_printf(o, "%s %s = %s;\n", vt, v, thread_index(g, tag));
      if (full) {
        stmt(g, s->for_.body);
      } else {
        line(g);
        sb_printf(o, "if (%s < ", v);
        expr(g, s->for_.extent);
        sb_puts(o, ") {\n");
        block(g, s->for_.body);
        line(g);
        sb_puts(o, "}\n");
      }
      close_scope(g, again);
      return;
    }
    if (s->for_.fkind == FOR_PARALLEL) {
      gfail(g, kfmt("codegen: loop '%s' is parallel; on a GPU, bind it to blockIdx/threadIdx instead",
                    s->for_.var->var.name));
      return;
    }
    analyzer_bind_range(g->an, s->for_.var, s->for_.min, s->for_.extent);
    if (s->for_.fkind == FOR_UNROLLED) {
      line(g);
      sb_puts(o, "#pragma unroll\n");
    }
    line(g);
    sb_printf(o, "for (%s %s = ", vt, v);
    expr(g, s->for_.min);
    sb_printf(o, "; %s < ", v);
    if (ir_is_int_value(s->for_.min, 0)) {
      expr(g, s->for_.extent);
    } else {
      Expr *end = ir_simplify(ir_add(s->for_.min, s->for_.extent));
      expr(g, end);
    }
    sb_printf(o, "; ++%s) {\n", v);
    block(g, s->for_.body);
    line(g);
    sb_puts(o, "}\n");
    return;
  }
  case SK_Store: {
    if (s->store.index->dtype.lanes != 1) {
      gpu_vector_store(g, s);
      return;
    }
    DType *et = pm_get(&g->elem, s->store.buf);
    line(g);
    sb_printf(o, "%s[", vname(g, s->store.buf));
    expr(g, s->store.index);
    sb_puts(o, "] = ");
    if (et && dt_is_bool(*et)) {
      sb_printf(o, "(%s)(", etype(g, *et));
      expr(g, s->store.value);
      sb_putc(o, ')');
    } else {
      expr(g, s->store.value);
    }
    sb_puts(o, ";\n");
    return;
  }
  case SK_Allocate: {
    DType *et = KNEW(DType);
    *et = s->alloc.dtype;
    pm_put(&g->elem, s->alloc.buf, et);
    bool shared = !strcmp(s->alloc.scope ? s->alloc.scope : "global", "shared");
    pm_put(&g->space, s->alloc.buf, (void *)(intptr_t)(1 + (shared ? SPACE_SHARED : SPACE_PRIVATE)));
    if (!shared) { /* local: per thread */
      int64_t n = 1;
      ir_is_const_int(ir_simplify(s->alloc.size), &n);
      /* an allocation an unrolled loop repeated: each copy in a scope of
       * its own */
      const char *name = vname(g, s->alloc.buf);
      bool again = open_scope_if_declared(g, name);
      line(g);
      sb_printf(o, "%s%s %s[%lld];\n", pm_has(&g->vecbuf, s->alloc.buf) ? row(g)->vec_align : "", etype(g, *et),
                name, (long long)(n > 0 ? n : 1));
      stmt(g, s->alloc.body);
      close_scope(g, again);
      return;
    }
    stmt(g, s->alloc.body);
    return;
  }
  CGP_STMT_CASES:
    cgp_stmt(stmt_printer(g), s);
    return;
  case SK_Attr:
    if (!strcmp(s->attr.key, "device_barrier")) {
      line(g);
      sb_puts(o, row(g)->barrier);
    }
    stmt(g, s->attr.body);
    return;
  case SK_Provide:
  case SK_Realize:
    gfail(g, kfmt("codegen: %s reached code generation (storage was not flattened)", stmt_kind_name(s->kind)));
    return;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* Shared buffers, declared at the top of the kernel, each once: an
 * unrolled loop around a shared allocation repeats the Allocate of one
 * buffer, whose copies run one after another and share its storage. */
static void collect_shared(IRVisitor *v, Stmt *s) {
  if (s->kind == SK_Allocate && s->alloc.scope && !strcmp(s->alloc.scope, "shared")) {
    AVec *seen = v->ud;
    int i = 0;
    while (i < seen->len && ((Stmt *)seen->data[i])->alloc.buf != s->alloc.buf) i++;
    if (i == seen->len) av_push(seen, s);
  }
  ir_visit_stmt_children(v, s);
}

/* may_alias: the function's output may share memory with an input (an
 * in-place elementwise kernel): no restrict on its buffers. */
static void kernel(GG *g, DeviceKernel *k, bool may_alias, StrBuf *out) {
  g->k = k;
  pm_free(&g->names);
  pm_free(&g->used);
  pm_init_str(&g->used);
  pm_free(&g->elem);
  pm_free(&g->space);
  pm_free(&g->vecbuf);
  g->an = analyzer_new();
  gpu_vector_scan(g, k->body);
  StrBuf body = {0};
  g->out = &body;
  int64_t threads = 1;
  bool known = true;
  for (int t = TAG_THREAD_X; t <= TAG_THREAD_Z; t++) {
    int64_t c;
    if (ir_is_const_int(k->extent[t], &c))
      threads *= c;
    else
      known = false;
  }
  int64_t e[3] = {1, 1, 1};
  if (known)
    for (int t = 0; t < 3; t++) ir_is_const_int(k->extent[TAG_THREAD_X + t], &e[t]);
  row(g)->kernel_head(&body, known, threads, e);
  sb_printf(&body, "%s(", k->name);
  for (int p = 0; p < k->nparams; p++) {
    Expr *v = k->params[p];
    if (p) sb_puts(&body, ", ");
    if (dt_is_handle(v->dtype)) {
      DType *et = KNEW(DType);
      *et = k->ptype[p];
      pm_put(&g->elem, v, et);
      pm_put(&g->space, v, (void *)(intptr_t)(1 + SPACE_GLOBAL));
      sb_printf(&body, "%s%s*%s %s", row(g)->buffer_space, etype(g, *et), may_alias ? "" : row(g)->restrict_kw,
                vname(g, v));
    } else {
      sb_printf(&body, "%s %s", gtype(g, k->ptype[p]), vname(g, v));
    }
  }
  sb_puts(&body, ") {\n");
  g->indent = 2;
  AVec shared = {0};
  IRVisitor vis = {NULL, collect_shared, &shared};
  ir_visit_stmt(&vis, k->body);
  for (int i = 0; i < shared.len; i++) {
    Stmt *a = shared.data[i];
    int64_t n = 1;
    ir_is_const_int(ir_simplify(a->alloc.size), &n);
    line(g);
    sb_printf(&body, "%s %s%s %s[%lld];\n", row(g)->shared, pm_has(&g->vecbuf, a->alloc.buf) ? row(g)->vec_align : "",
              etype(g, a->alloc.dtype),
              vname(g, a->alloc.buf), (long long)(n > 0 ? n : 1));
  }
  stmt(g, k->body);
  sb_puts(&body, "}\n\n");
  analyzer_free(g->an);
  if (!g->failed) sb_puts(out, body.data);
  sb_free(&body);
}

char *codegen_gpu(LoweredFunc **funcs, int nfuncs, GpuDialect dialect) {
  GG g;
  memset(&g, 0, sizeof g);
  g.d = dialect;
  pm_init_str(&g.emitted);
  pm_init_str(&g.used);
  pm_init_str(&g.thread_decl);
  pm_init_str(&g.lanewise);
  StrBuf kernels = {0};
  for (int i = 0; i < nfuncs && !g.failed; i++)
    for (int k = 0; k < funcs[i]->nkernels && !g.failed; k++) kernel(&g, funcs[i]->kernels[k], funcs[i]->may_alias, &kernels);
  char *r = NULL;
  if (!g.failed) {
    StrBuf src = {0};
    sb_puts(&src, "/* Generated by Kiln. */\n");
    if (dialects[dialect].fp64_pragma && kernels.data && strstr(kernels.data, "double"))
      sb_puts(&src, dialects[dialect].fp64_pragma);
    sb_putc(&src, '\n');
    if (g.helpers.len) {
      sb_puts(&src, g.helpers.data);
      sb_putc(&src, '\n');
    }
    sb_puts(&src, kernels.data ? kernels.data : "");
    r = sb_steal(&src);
  }
  sb_free(&kernels);
  sb_free(&g.helpers);
  pm_free(&g.emitted);
  pm_free(&g.names);
  pm_free(&g.used);
  pm_free(&g.thread_decl);
  pm_free(&g.elem);
  pm_free(&g.space);
  pm_free(&g.vecbuf);
  pm_free(&g.lanewise);
  return r;
}

/* One line per kernel: "kernel <name> <nparams> <type>..." with "handle"
 * for a buffer; what the runtime needs to pass arguments. */
char *codegen_gpu_meta(LoweredFunc **funcs, int nfuncs, GpuDialect dialect) {
  StrBuf sb = {0};
  sb_printf(&sb, "kiln-device-v1 %s\n", dialects[dialect].name);
  for (int i = 0; i < nfuncs; i++)
    for (int k = 0; k < funcs[i]->nkernels; k++) {
      DeviceKernel *dk = funcs[i]->kernels[k];
      sb_printf(&sb, "kernel %s %d", dk->name, dk->nparams);
      for (int p = 0; p < dk->nparams; p++)
        sb_printf(&sb, " %s", dt_is_handle(dk->params[p]->dtype) ? "handle" : dt_str(dk->ptype[p]));
      sb_putc(&sb, '\n');
    }
  return sb_steal(&sb);
}
