/*
 * codegen_c.c - lowered functions to one C translation unit.
 *
 * Every kernel has the packed signature of the module ABI (kiln/runtime.h):
 *   int32_t name(KilnValue *args, int32_t *type_codes, int32_t num_args)
 * and starts by checking its arguments — count, type codes, rank, dtype,
 * shape (binding symbolic dimensions on first sight), compact strides and
 * device — returning -1 with a message instead of touching bad memory.
 *
 * Vector expressions use GCC/Clang vector extensions: a float32x16 value is
 * `kv_f32x16`, contiguous loads and stores go through an unaligned,
 * may_alias twin type, and operations C does not define on vectors
 * (select, min/max, casts of masks, math functions) are small inline
 * helpers emitted once each.  A boolean vector is an int32 lane mask
 * (-1/0), whatever width its operands had.
 *
 * A parallel loop is outlined into a static function over a closure struct
 * that captures the loop's free variables, and launched through the
 * runtime's thread pool (or run inline when the module is used without it).
 *
 * The text is meant to be read: loops keep their variable names (made
 * unique and C-safe), and each produce point is marked with a comment.
 */
#include "codegen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct CG {
  StrBuf *out;      /* where statements go now */
  StrBuf helpers;   /* typedefs and helper functions, each emitted once */
  StrBuf outlined;  /* parallel closures */
  PtrMap names;     /* Var -> C name */
  PtrMap used;      /* C name -> (void*)1 (string keys) */
  PtrMap buftype;   /* buffer Var -> DType* (element type) */
  PtrMap emitted;   /* helper name -> (void*)1 (string keys) */
  Analyzer *an;     /* loop ranges, to prove floordiv operands non-negative */
  const char *fname;
  const char *restrict_; /* "restrict " on argument pointers, "" when they may alias */
  LoweredFunc *f;   /* the function being printed */
  int kernel_base;  /* launch index of f's first kernel (GPU functions) */
  int ndev;         /* device buffers allocated so far in f (labels) */
  int indent;
  int npar;
  bool failed;
  const CDialect *dialect; /* plain kernels for standalone C, or NULL (module ABI) */
  int64_t scratch_off;     /* plain kernels: scratch bytes in use at this point */
  int64_t scratch_max;     /* ... and the most ever in use */
  int par_depth;           /* plain kernels: parallel loops around this point */
} CG;

static void fail(CG *g, const char *fmt, const char *arg) {
  if (!g->failed) kiln_set_error(fmt, arg);
  g->failed = true;
}

/* ---- names ---- */

static const char *c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "args", "type_codes", "num_args", "main",
    NULL};

static const char *unique_name(CG *g, const char *base) {
  char buf[128];
  size_t n = 0;
  for (const char *p = base; *p && n < sizeof buf - 8; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    buf[n++] = ok ? ch : '_';
  }
  buf[n] = 0;
  if (n == 0 || (buf[0] >= '0' && buf[0] <= '9')) {
    memmove(buf + 1, buf, n + 1);
    buf[0] = 'v';
  }
  for (int i = 0; c_keywords[i]; i++)
    if (!strcmp(buf, c_keywords[i])) {
      strcat(buf, "_");
      break;
    }
  if (!strncmp(buf, "kiln_", 5) || !strncmp(buf, "kv_", 3) || !strncmp(buf, "__", 2)) {
    memmove(buf + 2, buf, strlen(buf) + 1);
    buf[0] = 'v';
    buf[1] = '_';
  }
  const char *name = kstrdup(buf);
  for (int k = 1; pm_has(&g->used, name); k++) name = kfmt("%s_%d", buf, k);
  pm_put(&g->used, name, (void *)1);
  return name;
}

static const char *vname(CG *g, Expr *v) {
  const char *n = pm_get(&g->names, v);
  if (!n) {
    n = unique_name(g, v->var.name);
    pm_put(&g->names, v, (void *)n);
  }
  return n;
}

/* ---- types ---- */

static const char *scalar_ctype(DType t) {
  if (dt_is_bool(t)) return "int8_t";
  switch (t.code) {
  case kDLFloat:
    return t.bits == 64 ? "double" : t.bits == 32 ? "float" : "_Float16";
  case kDLInt:
    return t.bits == 8 ? "int8_t" : t.bits == 16 ? "int16_t" : t.bits == 32 ? "int32_t" : "int64_t";
  case kDLUInt:
    return t.bits == 8 ? "uint8_t" : t.bits == 16 ? "uint16_t" : t.bits == 32 ? "uint32_t" : "uint64_t";
  default:
    return "void *";
  }
}

/* Short name of a scalar type for helper names: f32, i64, u8, b (bool). */
static const char *short_name(DType t) {
  if (dt_is_bool(t)) return "i32"; /* masks */
  char c = t.code == kDLFloat ? 'f' : t.code == kDLInt ? 'i' : 'u';
  return kfmt("%c%d", c, t.bits);
}

static void need(CG *g, const char *key, const char *text) {
  if (pm_has(&g->emitted, key)) return;
  pm_put(&g->emitted, kstrdup(key), (void *)1);
  sb_puts(&g->helpers, text);
}

/* The C vector type of t (lanes > 1), declaring it on first use. */
static const char *vtype(CG *g, DType t) {
  DType s = dt_scalar(t);
  const char *sn = short_name(s);
  const char *name = kfmt("kv_%sx%d", sn, t.lanes);
  const char *ct = dt_is_bool(s) ? "int32_t" : scalar_ctype(s);
  int bytes = (dt_is_bool(s) ? 4 : s.bits / 8) * t.lanes;
  need(g, name,
       kfmt("typedef %s %s __attribute__((vector_size(%d)));\n"
            "typedef %s %su __attribute__((vector_size(%d), aligned(%d), may_alias));\n",
            ct, name, bytes, ct, name, bytes, dt_is_bool(s) ? 4 : s.bits / 8));
  return name;
}

static const char *ctype(CG *g, DType t) {
  if (t.lanes > 1) return vtype(g, t);
  if (dt_is_bool(t)) return "int32_t";
  return scalar_ctype(t);
}

/* The mask type matching a vector type of the same element width. */
static const char *mask_of(CG *g, DType t) {
  DType s = dt_scalar(t);
  int bits = dt_is_bool(s) ? 32 : s.bits;
  return vtype(g, dt_make(kDLInt, bits, t.lanes));
}

/* ---- expressions ---- */

static void expr(CG *g, Expr *e);

static void print_int(StrBuf *sb, int64_t v, DType t) {
  if (dt_is_bool(t)) {
    sb_printf(sb, "%d", v ? 1 : 0);
    return;
  }
  if (t.bits == 64) {
    if (v == INT64_MIN)
      sb_puts(sb, "INT64_MIN");
    else if (t.code == kDLUInt)
      sb_printf(sb, "UINT64_C(%llu)", (unsigned long long)v);
    else
      sb_printf(sb, "INT64_C(%lld)", (long long)v);
    return;
  }
  if (t.code == kDLInt && t.bits == 32) {
    if (v == INT32_MIN)
      sb_puts(sb, "INT32_MIN");
    else
      sb_printf(sb, "%lld", (long long)v);
    return;
  }
  sb_printf(sb, "((%s)%lld)", scalar_ctype(t), (long long)v);
}

static void print_float(StrBuf *sb, double v, DType t, bool freestanding) {
  const char *suffix = t.bits == 32 ? "f" : "";
  if (freestanding && (isnan(v) || isinf(v))) { /* no math.h: NAN and INFINITY come from the math file */
    sb_printf(sb, "((%s)%skiln_%s())", scalar_ctype(t), isinf(v) && v < 0 ? "-" : "", isnan(v) ? "nanf" : "inff");
    return;
  }
  if (isnan(v)) {
    sb_printf(sb, "((%s)NAN)", scalar_ctype(t));
    return;
  }
  if (isinf(v)) {
    sb_printf(sb, "((%s)%sINFINITY)", scalar_ctype(t), v < 0 ? "-" : "");
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, t.bits == 32 ? "%.9g" : "%.17g", v);
  if (!strpbrk(buf, ".e")) strcat(buf, ".0");
  if (t.bits == 16)
    sb_printf(sb, "((_Float16)%s)", buf);
  else
    sb_printf(sb, "%s%s", buf, suffix);
}

/* Emit a helper taking vector operands, defined by a lane loop body. */
static const char *lane_helper(CG *g, const char *op, DType rt, int nargs, DType *at,
                               const char *lane_expr) {
  const char *rtn = ctype(g, rt);
  StrBuf sig = {0};
  const char *name = kfmt("kiln_%s_%s", op, rtn + 3);
  for (int i = 0; i < nargs; i++) name = kfmt("%s_%s", name, at[i].lanes > 1 ? ctype(g, at[i]) + 3 : short_name(at[i]));
  if (pm_has(&g->emitted, name)) return name;
  sb_printf(&sig, "static inline %s %s(", rtn, name);
  for (int i = 0; i < nargs; i++) sb_printf(&sig, "%s%s %c", i ? ", " : "", ctype(g, at[i]), 'a' + i);
  sb_printf(&sig, ") {\n  %s r;\n  for (int l = 0; l < %d; l++) r[l] = %s;\n  return r;\n}\n", rtn,
            rt.lanes, lane_expr);
  need(g, name, sig.data);
  sb_free(&sig);
  return name;
}

/* float32 exp, tanh, erf and sigmoid come from kiln_vmath.h (pasted into
 * the unit once): branch-free, so a lane loop over them vectorizes. */
static bool intrin_uses_vmath(Intrinsic op, DType t) {
  if (!(t.code == kDLFloat && t.bits == 32)) return false;
  return op == INTRIN_exp || op == INTRIN_tanh || op == INTRIN_erf || op == INTRIN_sigmoid;
}

/* Scalar C expression of an intrinsic on scalar operand names a, b. */
static const char *intrin_scalar(const CG *g, Intrinsic op, DType t, const char *a, const char *b) {
  bool f32 = t.code == kDLFloat && t.bits == 32;
  const char *s = f32 ? "f" : "";
  if (intrin_uses_vmath(op, t)) {
    const char *fn = op == INTRIN_exp ? "kiln_expf" : op == INTRIN_tanh ? "kiln_tanhf" : op == INTRIN_erf ? "kiln_erff" : "kiln_sigmoidf";
    return kfmt("%s(%s)", fn, a);
  }
  /* freestanding: the math file's kiln_logf, ... instead of libm's */
  const char *m = g->dialect && g->dialect->freestanding ? "kiln_" : "";
  switch (op) {
  case INTRIN_exp: return kfmt("%sexp%s(%s)", m, s, a);
  case INTRIN_log: return kfmt("%slog%s(%s)", m, s, a);
  case INTRIN_sqrt: return kfmt("%ssqrt%s(%s)", m, s, a);
  case INTRIN_rsqrt: return kfmt("(1%s / %ssqrt%s(%s))", f32 ? ".0f" : ".0", m, s, a);
  case INTRIN_tanh: return kfmt("%stanh%s(%s)", m, s, a);
  case INTRIN_erf: return kfmt("%serf%s(%s)", m, s, a);
  case INTRIN_pow: return kfmt("%spow%s(%s, %s)", m, s, a, b);
  case INTRIN_fabs:
    if (t.code == kDLFloat) return kfmt("%sfabs%s(%s)", m, s, a);
    if (t.code == kDLUInt) return kfmt("(%s)", a);
    return kfmt("((%s) < 0 ? -(%s) : (%s))", a, a, a);
  case INTRIN_floor: return kfmt("%sfloor%s(%s)", m, s, a);
  case INTRIN_ceil: return kfmt("%sceil%s(%s)", m, s, a);
  case INTRIN_round: return kfmt("%snearbyint%s(%s)", m, s, a);
  case INTRIN_trunc: return kfmt("%strunc%s(%s)", m, s, a);
  case INTRIN_sigmoid: return kfmt("(1%s / (1%s + %sexp%s(-(%s))))", f32 ? ".0f" : ".0", f32 ? ".0f" : ".0", m, s, a);
  case INTRIN_sin: return kfmt("%ssin%s(%s)", m, s, a);
  case INTRIN_cos: return kfmt("%scos%s(%s)", m, s, a);
  case INTRIN_tan: return kfmt("%stan%s(%s)", m, s, a);
  case INTRIN_asin: return kfmt("%sasin%s(%s)", m, s, a);
  case INTRIN_acos: return kfmt("%sacos%s(%s)", m, s, a);
  case INTRIN_atan: return kfmt("%satan%s(%s)", m, s, a);
  case INTRIN_sinh: return kfmt("%ssinh%s(%s)", m, s, a);
  case INTRIN_cosh: return kfmt("%scosh%s(%s)", m, s, a);
  case INTRIN_asinh: return kfmt("%sasinh%s(%s)", m, s, a);
  case INTRIN_acosh: return kfmt("%sacosh%s(%s)", m, s, a);
  case INTRIN_atanh: return kfmt("%satanh%s(%s)", m, s, a);
  case INTRIN_fmod: return kfmt("%sfmod%s(%s, %s)", m, s, a, b);
  case INTRIN_isnan: return kfmt("(%sisnan(%s) != 0)", m, a);
  case INTRIN_isinf: return kfmt("(%sisinf(%s) != 0)", m, a);
  case INTRIN_shift_left: return kfmt("(%s << %s)", a, b);
  case INTRIN_shift_right: return kfmt("(%s >> %s)", a, b);
  case INTRIN_bitwise_and: return kfmt("(%s & %s)", a, b);
  case INTRIN_bitwise_or: return kfmt("(%s | %s)", a, b);
  case INTRIN_bitwise_xor: return kfmt("(%s ^ %s)", a, b);
  case INTRIN_bitwise_not: return kfmt("(~%s)", a);
  case INTRIN_likely:
    if (g->dialect && g->dialect->portable) return kfmt("(%s)", a);
    return kfmt("__builtin_expect(!!(%s), 1)", a);
  case INTRIN_bf16_pack2: return kfmt("kiln_bf16_pack2(%s, %s)", a, b);
  case INTRIN_bf16_dot2: return kfmt("kiln_bf16_dot2(%s, %s)", a, b);
  case INTRIN_bf16_half: return kfmt("kiln_bf16_float((%s) >> (((%s) & 1u) * 16u))", a, b);
  case INTRIN_u8s8_dot4: return kfmt("kiln_u8s8_dot4(%s, %s)", a, b);
  case INTRIN__COUNT: break;
  }
  KUNREACHABLE();
}

/* bfloat16 in generated code (docs/bf16.md): scalar helpers with the
 * semantics of ir_bf16_round / ir_bf16_float (src/ir/scalar.c), and a
 * vector dot-accumulate that is one AVX512-BF16 VDPBF16PS where the
 * compiler targets it (a lane loop elsewhere). */
static const char bf16_source[] =
    "static inline uint32_t kiln_bf16_round(float x) {\n"
    "  union { float f; uint32_t u; } v = {x};\n"
    "  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (v.u >> 16) | 0x40u;\n"
    "  return (v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16;\n"
    "}\n"
    "static inline float kiln_bf16_float(uint32_t h) {\n"
    "  union { uint32_t u; float f; } v = {(h & 0xffffu) << 16};\n"
    "  return v.f;\n"
    "}\n"
    "static inline uint32_t kiln_bf16_pack2(float lo, float hi) {\n"
    "  return kiln_bf16_round(lo) | (kiln_bf16_round(hi) << 16);\n"
    "}\n"
    "static inline float kiln_bf16_dot2(uint32_t a, uint32_t b) {\n"
    "  return kiln_bf16_float(a) * kiln_bf16_float(b) + kiln_bf16_float(a >> 16) * kiln_bf16_float(b >> 16);\n"
    "}\n"
    "#if defined(__AVX512BF16__)\n#include <immintrin.h>\n#endif\n";

/* int8 in generated code (docs/int8.md): the scalar u8s8_dot4 with the
 * semantics of src/ir/scalar.c, and a vector dot-accumulate that is one
 * AVX512-VNNI VPDPBUSD where the compiler targets it (a lane loop
 * elsewhere; both wrap in int32 as the instruction does). */
static const char int8_source[] =
    "static inline int32_t kiln_u8s8_dot4(uint32_t a, uint32_t b) {\n"
    "  int32_t s = 0;\n"
    "  for (int j = 0; j < 4; j++) s += (int32_t)((a >> (8 * j)) & 0xffu) * (int32_t)(int8_t)(uint8_t)(b >> (8 * j));\n"
    "  return s;\n"
    "}\n"
    "#if defined(__AVX512VNNI__)\n#include <immintrin.h>\n#endif\n";

/* The dot-accumulate intrinsics: `acc + dot(a, b)` on vectors of 32-bit
 * lanes becomes one instruction where the compiler targets it (16 lanes,
 * or 8 with AVX512VL) and a lane loop in the instruction's order
 * elsewhere, behind one inline helper per vector type.  A row per
 * intrinsic: its scalar helpers, the accumulator's scalar type, the ISA
 * macro, the two intrinsics ("%s" the vector type) and the lane loop's
 * body (lane l of c, a, b). */
typedef struct DotAcc {
  Intrinsic op;
  const char *source_key, *source;
  DType acc;
  const char *prefix, *isa, *intr16, *intr8, *lane;
} DotAcc;

static const DotAcc dot_accs[] = {
    /* VDPBF16PS: the high pair's product first, as the instruction */
    {INTRIN_bf16_dot2, "kiln_bf16", bf16_source, {kDLFloat, 32, 1}, "kiln_bf16_dot_acc", "__AVX512BF16__",
     "(%s)_mm512_dpbf16_ps((__m512)c, (__m512bh)a, (__m512bh)b)",
     "(%s)_mm256_dpbf16_ps((__m256)c, (__m256bh)a, (__m256bh)b)",
     "    float s = c[l] + kiln_bf16_float(a[l] >> 16) * kiln_bf16_float(b[l] >> 16);\n"
     "    c[l] = s + kiln_bf16_float(a[l]) * kiln_bf16_float(b[l]);\n"},
    /* VPDPBUSD: int32 wraps as the instruction does (the sum in uint32) */
    {INTRIN_u8s8_dot4, "kiln_int8", int8_source, {kDLInt, 32, 1}, "kiln_dpbusd", "__AVX512VNNI__",
     "(%s)_mm512_dpbusd_epi32((__m512i)c, (__m512i)a, (__m512i)b)",
     "(%s)_mm256_dpbusd_epi32((__m256i)c, (__m256i)a, (__m256i)b)",
     "    c[l] = (int32_t)((uint32_t)c[l] + (uint32_t)kiln_u8s8_dot4(a[l], b[l]));\n"},
};

static const DotAcc *dot_acc_of(const Expr *e) {
  for (size_t i = 0; e->kind == EK_Call && i < sizeof dot_accs / sizeof dot_accs[0]; i++)
    if (e->call.op == dot_accs[i].op) return &dot_accs[i];
  return NULL;
}

/* e = a + b on vectors where one side is a dot intrinsic of the row whose
 * accumulator type is e's: the helper call, true; false otherwise. */
static bool emit_dot_acc(CG *g, Expr *e) {
  DType t = e->dtype;
  bool b_dot = dot_acc_of(e->bin.b) != NULL;
  Expr *dot = b_dot ? e->bin.b : e->bin.a, *acc = b_dot ? e->bin.a : e->bin.b;
  const DotAcc *d = dot_acc_of(dot);
  if (t.lanes < 2 || !d || !dt_eq(dt_scalar(t), d->acc)) return false;
  const char *vt = ctype(g, t), *uvt = ctype(g, dot->call.args[0]->dtype);
  const char *name = kfmt("%s_%s", d->prefix, vt + 3);
  need(g, d->source_key, d->source);
  const char *isa = t.lanes == 16  ? kfmt("defined(%s)", d->isa)
                    : t.lanes == 8 ? kfmt("defined(%s) && defined(__AVX512VL__)", d->isa)
                                   : "0";
  const char *body = t.lanes == 16 ? kfmt(d->intr16, vt) : t.lanes == 8 ? kfmt(d->intr8, vt) : "c";
  need(g, name,
       kfmt("static inline %s %s(%s c, %s a, %s b) {\n#if %s\n  return %s;\n#else\n"
            "  for (int l = 0; l < %d; l++) {\n%s  }\n  return c;\n#endif\n}\n",
            vt, name, vt, uvt, uvt, isa, body, t.lanes, d->lane));
  sb_printf(g->out, "%s(", name);
  expr(g, acc);
  sb_puts(g->out, ", ");
  expr(g, dot->call.args[0]);
  sb_puts(g->out, ", ");
  expr(g, dot->call.args[1]);
  sb_putc(g->out, ')');
  return true;
}

/* Whether the freestanding math file (graph/backend/export_c_math.c) covers op. */
static bool freestanding_has(Intrinsic op, DType t) {
  bool f32 = t.code == kDLFloat && t.bits == 32;
  switch (op) {
  case INTRIN_exp: case INTRIN_log: case INTRIN_sqrt: case INTRIN_rsqrt: case INTRIN_tanh: case INTRIN_erf:
  case INTRIN_pow: case INTRIN_floor: case INTRIN_ceil: case INTRIN_round: case INTRIN_trunc: case INTRIN_sigmoid:
  case INTRIN_isnan: case INTRIN_isinf:
    return f32;
  case INTRIN_fabs:
    return f32 || t.code != kDLFloat;
  case INTRIN_sin: case INTRIN_cos: case INTRIN_tan: case INTRIN_asin: case INTRIN_acos: case INTRIN_atan:
  case INTRIN_sinh: case INTRIN_cosh: case INTRIN_asinh: case INTRIN_acosh: case INTRIN_atanh: case INTRIN_fmod:
    return false;
  case INTRIN_shift_left: case INTRIN_shift_right: case INTRIN_bitwise_and: case INTRIN_bitwise_or:
  case INTRIN_bitwise_xor: case INTRIN_bitwise_not: case INTRIN_likely: case INTRIN_bf16_pack2: case INTRIN_bf16_dot2:
  case INTRIN_bf16_half: case INTRIN_u8s8_dot4:
    return true;
  case INTRIN__COUNT:
    break;
  }
  return false;
}

static bool provably_nonneg(CG *g, Expr *e) {
  int64_t lo, hi;
  return analyzer_const_bound(g->an, e, &lo, &hi) && lo >= 0;
}

static void binary(CG *g, const char *op, Expr *a, Expr *b) {
  sb_putc(g->out, '(');
  expr(g, a);
  sb_printf(g->out, " %s ", op);
  expr(g, b);
  sb_putc(g->out, ')');
}

static void call_helper(CG *g, const char *name, int n, Expr **args) {
  sb_printf(g->out, "%s(", name);
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(g->out, ", ");
    expr(g, args[i]);
  }
  sb_putc(g->out, ')');
}

/* A vector comparison yields a mask of the operands' width; make it int32. */
static void vcompare(CG *g, const char *op, Expr *a, Expr *b, DType rt) {
  DType ot = a->dtype;
  int w = dt_is_bool(dt_scalar(ot)) ? 32 : ot.bits;
  if (w == 32) {
    binary(g, op, a, b);
    return;
  }
  sb_printf(g->out, "__builtin_convertvector(");
  binary(g, op, a, b);
  sb_printf(g->out, ", %s)", ctype(g, rt));
}

static void emit_minmax(CG *g, Expr *e, bool is_min) {
  DType t = e->dtype;
  const char *cmp = is_min ? "<" : ">";
  if (t.lanes == 1) {
    const char *tn = ctype(g, t);
    const char *name = kfmt("kiln_%s_%s", is_min ? "min" : "max", short_name(t));
    need(g, name, kfmt("static inline %s %s(%s a, %s b) { return a %s b ? a : b; }\n", tn, name, tn, tn, cmp));
    Expr *args[2] = {e->bin.a, e->bin.b};
    call_helper(g, name, 2, args);
    return;
  }
  const char *vt = ctype(g, t), *mt = mask_of(g, t);
  const char *name = kfmt("kiln_%s_%s", is_min ? "min" : "max", vt + 3);
  need(g, name,
       kfmt("static inline %s %s(%s a, %s b) {\n  %s m = (%s)(a %s b);\n"
            "  return (%s)(((%s)a & m) | ((%s)b & ~m));\n}\n",
            vt, name, vt, vt, mt, mt, cmp, vt, mt, mt));
  Expr *args[2] = {e->bin.a, e->bin.b};
  call_helper(g, name, 2, args);
}

static void emit_floordiv(CG *g, Expr *e, bool is_mod) {
  DType t = e->dtype;
  Expr *a = e->bin.a, *b = e->bin.b;
  if (t.code == kDLFloat) {
    const char *s = t.bits == 32 ? "f" : "";
    if (t.lanes > 1) {
      DType at[2] = {t, t};
      const char *n = lane_helper(g, is_mod ? "floormod" : "floordiv", t, 2, at,
                                  is_mod ? kfmt("a[l] - floor%s(a[l] / b[l]) * b[l]", s)
                                         : kfmt("floor%s(a[l] / b[l])", s));
      Expr *args[2] = {a, b};
      call_helper(g, n, 2, args);
      return;
    }
    if (is_mod) {
      sb_printf(g->out, "kiln_fmodf_floor%s(", s);
      need(g, kfmt("kiln_fmodf_floor%s", s),
           kfmt("static inline %s kiln_fmodf_floor%s(%s a, %s b) { return a - floor%s(a / b) * b; }\n",
                scalar_ctype(t), s, scalar_ctype(t), scalar_ctype(t), s));
      expr(g, a);
      sb_puts(g->out, ", ");
      expr(g, b);
      sb_putc(g->out, ')');
    } else {
      sb_printf(g->out, "floor%s(", s);
      binary(g, "/", a, b);
      sb_putc(g->out, ')');
    }
    return;
  }
  int64_t c;
  if (t.lanes == 1 && t.code == kDLUInt) {
    binary(g, is_mod ? "%" : "/", a, b);
    return;
  }
  if (t.lanes == 1 && ir_is_const_int(b, &c) && c > 0 && provably_nonneg(g, a)) {
    binary(g, is_mod ? "%" : "/", a, b);
    return;
  }
  if (t.lanes > 1) {
    DType at[2] = {t, t};
    const char *n = lane_helper(
        g, is_mod ? "floormod" : "floordiv", t, 2, at,
        is_mod ? "((a[l] % b[l]) != 0 && ((a[l] < 0) != (b[l] < 0)) ? a[l] % b[l] + b[l] : a[l] % b[l])"
               : "(a[l] / b[l] - (((a[l] % b[l]) != 0) && ((a[l] < 0) != (b[l] < 0))))");
    Expr *args[2] = {a, b};
    call_helper(g, n, 2, args);
    return;
  }
  const char *tn = scalar_ctype(t);
  const char *name = kfmt("kiln_%s_%s", is_mod ? "floormod" : "floordiv", short_name(t));
  if (is_mod)
    need(g, name,
         kfmt("static inline %s %s(%s a, %s b) { %s r = a %% b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n",
              tn, name, tn, tn, tn));
  else
    need(g, name,
         kfmt("static inline %s %s(%s a, %s b) { %s q = a / b; return ((a %% b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n",
              tn, name, tn, tn, tn));
  Expr *args[2] = {a, b};
  call_helper(g, name, 2, args);
}

static void need_bcast(CG *g, DType vt);

static bool is_contiguous_ramp(Expr *idx) {
  return idx->kind == EK_Ramp && ir_is_int_value(idx->ramp.stride, 1);
}

static void emit_load(CG *g, Expr *e) {
  const char *buf = vname(g, e->load.buf);
  Expr *idx = e->load.index;
  if (e->dtype.lanes == 1) {
    sb_printf(g->out, "%s[", buf);
    expr(g, idx);
    sb_putc(g->out, ']');
    return;
  }
  DType *et = pm_get(&g->buftype, e->load.buf);
  bool boolbuf = et && dt_is_bool(*et);
  if (is_contiguous_ramp(idx) && !boolbuf) {
    /* read through the unaligned twin type, then view as the plain one */
    const char *vt = ctype(g, e->dtype);
    sb_printf(g->out, "((%s)*(%su *)(%s + ", vt, vt, buf);
    expr(g, idx->ramp.base);
    sb_puts(g->out, "))");
    return;
  }
  if (idx->kind == EK_Broadcast) {
    need_bcast(g, e->dtype);
    sb_printf(g->out, "kiln_bcast_%s(", ctype(g, e->dtype) + 3);
    sb_printf(g->out, "%s[", buf);
    expr(g, idx->bcast.value);
    sb_puts(g->out, "])");
    return;
  }
  /* a gather, one lane at a time */
  const char *vt = ctype(g, e->dtype), *it = ctype(g, idx->dtype);
  const char *ect = et ? scalar_ctype(*et) : scalar_ctype(dt_scalar(e->dtype));
  const char *name = kfmt("kiln_gather_%s_%s", vt + 3, it + 3);
  need(g, name,
       kfmt("static inline %s %s(const %s *p, %s i) {\n  %s r;\n  for (int l = 0; l < %d; l++) r[l] = "
            "%sp[i[l]];\n  return r;\n}\n",
            vt, name, ect, it, vt, e->dtype.lanes, boolbuf ? "-(int32_t)" : ""));
  sb_printf(g->out, "%s(%s, ", name, buf);
  expr(g, idx);
  sb_putc(g->out, ')');
}

static void need_bcast(CG *g, DType vt) {
  const char *v = ctype(g, vt);
  const char *name = kfmt("kiln_bcast_%s", v + 3);
  StrBuf sb = {0};
  sb_printf(&sb, "static inline %s %s(%s x) { return (%s){", v, name,
            dt_is_bool(dt_scalar(vt)) ? "int32_t" : scalar_ctype(dt_scalar(vt)), v);
  for (int l = 0; l < vt.lanes; l++) sb_printf(&sb, "%sx", l ? ", " : "");
  sb_puts(&sb, "}; }\n");
  need(g, name, sb.data);
  sb_free(&sb);
}

static void expr(CG *g, Expr *e) {
  StrBuf *o = g->out;
  DType t = e->dtype;
  bool vec = t.lanes > 1;
  switch (e->kind) {
  case EK_IntImm:
    print_int(o, e->int_value, t);
    return;
  case EK_FloatImm:
    print_float(o, e->float_value, t, g->dialect && g->dialect->freestanding);
    return;
  case EK_StrImm:
    sb_printf(o, "\"%s\"", e->str);
    return;
  case EK_Var:
    sb_puts(o, vname(g, e));
    return;
  case EK_Add:
    if (vec && emit_dot_acc(g, e)) return;
    binary(g, "+", e->bin.a, e->bin.b);
    return;
  case EK_Sub:
    binary(g, "-", e->bin.a, e->bin.b);
    return;
  case EK_Mul:
    binary(g, "*", e->bin.a, e->bin.b);
    return;
  case EK_Div:
    binary(g, "/", e->bin.a, e->bin.b);
    return;
  case EK_Mod:
    binary(g, "%", e->bin.a, e->bin.b);
    return;
  case EK_FloorDiv:
    emit_floordiv(g, e, false);
    return;
  case EK_FloorMod:
    emit_floordiv(g, e, true);
    return;
  case EK_Min:
    emit_minmax(g, e, true);
    return;
  case EK_Max:
    emit_minmax(g, e, false);
    return;
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE: {
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
    const char *op = ops[e->kind - EK_EQ];
    if (vec)
      vcompare(g, op, e->bin.a, e->bin.b, t);
    else
      binary(g, op, e->bin.a, e->bin.b);
    return;
  }
  case EK_And:
    binary(g, vec ? "&" : "&&", e->bin.a, e->bin.b);
    return;
  case EK_Or:
    binary(g, vec ? "|" : "||", e->bin.a, e->bin.b);
    return;
  case EK_Not:
    sb_puts(o, vec ? "(~" : "(!");
    expr(g, e->bin.a);
    sb_putc(o, ')');
    return;
  case EK_Select: {
    Expr *c = e->select.cond;
    if (c->dtype.lanes == 1) {
      /* vector branches are cast to one type: a contiguous load has the
       * unaligned twin type, which ?: would not match with the other */
      const char *cast = t.lanes > 1 ? kfmt("(%s)", ctype(g, t)) : "";
      sb_putc(o, '(');
      expr(g, c);
      sb_printf(o, " ? %s(", cast);
      expr(g, e->select.t);
      sb_printf(o, ") : %s(", cast);
      expr(g, e->select.f);
      sb_puts(o, "))");
      return;
    }
    const char *vt = ctype(g, t), *mt = mask_of(g, t);
    const char *name = kfmt("kiln_select_%s", vt + 3);
    const char *cm = ctype(g, c->dtype);
    need(g, name,
         kfmt("static inline %s %s(%s c, %s a, %s b) {\n  %s m = %s;\n"
              "  return (%s)(((%s)a & m) | ((%s)b & ~m));\n}\n",
              vt, name, cm, vt, vt, mt, !strcmp(cm, mt) ? "c" : kfmt("__builtin_convertvector(c, %s)", mt), vt,
              mt, mt));
    Expr *args[3] = {c, e->select.t, e->select.f};
    call_helper(g, name, 3, args);
    return;
  }
  case EK_Cast: {
    Expr *a = e->bin.a;
    if (dt_is_bool(t)) { /* to bool: compare with zero */
      if (!vec) {
        sb_puts(o, "((");
        expr(g, a);
        sb_puts(o, ") != 0)");
      } else {
        Expr *z = ir_bcast(ir_const(0, dt_scalar(a->dtype)), a->dtype.lanes);
        vcompare(g, "!=", a, z, t);
      }
      return;
    }
    if (!vec) {
      sb_printf(o, "((%s)(", ctype(g, t));
      expr(g, a);
      sb_puts(o, "))");
      return;
    }
    sb_puts(o, "__builtin_convertvector(");
    if (dt_is_bool(a->dtype)) { /* masks are -1/0: take the low bit */
      sb_putc(o, '(');
      expr(g, a);
      sb_puts(o, " & 1)");
    } else
      expr(g, a);
    sb_printf(o, ", %s)", ctype(g, t));
    return;
  }
  case EK_Call: {
    Intrinsic op = e->call.op;
    if (g->dialect && g->dialect->freestanding && !freestanding_has(op, dt_scalar(e->call.args[0]->dtype))) {
      fail(g, "--freestanding: this model needs %s, which Kiln's own math files do not provide (they have float32 "
              "exp, log, sqrt, tanh, erf, sigmoid, pow and rounding); export without --freestanding",
           kfmt("%s on %s", intrin_name(op), dt_str(e->call.args[0]->dtype)));
      sb_puts(o, "0");
      return;
    }
    if (intrin_uses_vmath(op, dt_scalar(e->call.args[0]->dtype))) need(g, "kiln_vmath", codegen_vmath_source);
    if (op == INTRIN_bf16_pack2 || op == INTRIN_bf16_dot2 || op == INTRIN_bf16_half) need(g, "kiln_bf16", bf16_source);
    if (op == INTRIN_u8s8_dot4) need(g, "kiln_int8", int8_source);
    if (!vec) {
      StrBuf *saved = g->out;
      StrBuf a = {0}, b = {0};
      g->out = &a;
      expr(g, e->call.args[0]);
      if (e->call.nargs > 1) {
        g->out = &b;
        expr(g, e->call.args[1]);
      }
      g->out = saved;
      DType at = e->call.args[0]->dtype;
      sb_puts(o, intrin_scalar(g, op, at, a.data, b.data ? b.data : ""));
      sb_free(&a);
      sb_free(&b);
      return;
    }
    if (op == INTRIN_likely) {
      expr(g, e->call.args[0]);
      return;
    }
    if (op == INTRIN_bf16_half) { /* bit operations on the vector: a shift (and a mask), then a bit cast */
      const char *ut = ctype(g, e->call.args[0]->dtype);
      sb_printf(o, "((%s)((((%s)", ctype(g, t), ut);
      expr(g, e->call.args[0]);
      sb_printf(o, ") >> ((((%s)", ut);
      expr(g, e->call.args[1]);
      sb_puts(o, ") & 1u) * 16u)) << 16u))");
      return;
    }
    DType at[2] = {e->call.args[0]->dtype, e->call.nargs > 1 ? e->call.args[1]->dtype : t};
    DType st = dt_scalar(at[0]);
    const char *le = intrin_scalar(g, op, st, "a[l]", "b[l]");
    if ((op == INTRIN_isnan || op == INTRIN_isinf)) le = kfmt("-(int32_t)%s", le);
    const char *n = lane_helper(g, intrin_name(op), t, e->call.nargs, at, le);
    call_helper(g, n, e->call.nargs, e->call.args);
    return;
  }
  case EK_Load:
    emit_load(g, e);
    return;
  case EK_Ramp: {
    const char *vt = ctype(g, t);
    const char *name = kfmt("kiln_ramp_%s", vt + 3);
    const char *st = scalar_ctype(dt_scalar(t));
    StrBuf sb = {0};
    sb_printf(&sb, "static inline %s %s(%s b, %s s) { return (%s){", vt, name, st, st, vt);
    for (int l = 0; l < t.lanes; l++) sb_printf(&sb, "%sb + %d * s", l ? ", " : "", l);
    sb_puts(&sb, "}; }\n");
    need(g, name, sb.data);
    sb_free(&sb);
    Expr *args[2] = {e->ramp.base, e->ramp.stride};
    call_helper(g, name, 2, args);
    return;
  }
  case EK_Broadcast: {
    need_bcast(g, t);
    sb_printf(o, "kiln_bcast_%s(", ctype(g, t) + 3);
    expr(g, e->bcast.value);
    sb_putc(o, ')');
    return;
  }
  case EK_Let: {
    if (g->dialect) { /* plain kernels: no statement expressions (not C99); substitute */
      expr(g, ir_substitute1(e->let.body, e->let.var, e->let.value));
      return;
    }
    sb_printf(o, "({ %s %s = ", ctype(g, e->let.var->dtype), vname(g, e->let.var));
    expr(g, e->let.value);
    sb_puts(o, "; ");
    expr(g, e->let.body);
    sb_puts(o, "; })");
    return;
  }
  case EK_Read:
  case EK_Reduce:
    fail(g, "codegen: %s node reached code generation (lowering is incomplete)", expr_kind_name(e->kind));
    sb_puts(o, "0");
    return;
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ---- statements ---- */

static void line(CG *g) { sb_indent(g->out, g->indent); }

static void stmt(CG *g, Stmt *s);

typedef struct FreeVars {
  PtrMap bound; /* vars bound inside */
  AVec uses;    /* free vars in first-use order */
  PtrMap seen;
} FreeVars;

static void fv_expr(IRVisitor *v, Expr *e) {
  FreeVars *f = v->ud;
  if (e->kind == EK_Var) {
    if (!pm_has(&f->bound, e) && !pm_has(&f->seen, e)) {
      pm_put(&f->seen, e, e);
      av_push(&f->uses, e);
    }
    return;
  }
  if (e->kind == EK_Let) pm_put(&f->bound, e->let.var, e);
  ir_visit_expr_children(v, e);
}

static void fv_stmt(IRVisitor *v, Stmt *s) {
  FreeVars *f = v->ud;
  if (s->kind == SK_For) pm_put(&f->bound, s->for_.var, s);
  if (s->kind == SK_LetStmt) pm_put(&f->bound, s->let.var, s);
  if (s->kind == SK_Allocate) pm_put(&f->bound, s->alloc.buf, s);
  ir_visit_stmt_children(v, s);
}

static const char *buf_ctype(CG *g, Expr *buf) {
  DType *t = pm_get(&g->buftype, buf);
  return t ? scalar_ctype(*t) : "void";
}

/* Outline a parallel loop into a closure function and launch it. */
static void parallel_for(CG *g, Stmt *s) {
  FreeVars fv = {{0}, {0}, {0}};
  IRVisitor v = {fv_expr, fv_stmt, &fv};
  ir_visit_stmt(&v, s);
  const char *fn = kfmt("%s_parallel_%d", g->fname, g->npar++);
  /* closure struct and function */
  StrBuf *saved = g->out;
  int saved_indent = g->indent;
  StrBuf body = {0};
  g->out = &body;
  sb_printf(&body, "typedef struct {\n");
  for (int i = 0; i < fv.uses.len; i++) {
    Expr *x = fv.uses.data[i];
    if (dt_is_handle(x->dtype))
      sb_printf(&body, "  %s *%s;\n", buf_ctype(g, x), vname(g, x));
    else
      sb_printf(&body, "  %s %s;\n", ctype(g, x->dtype), vname(g, x));
  }
  if (!fv.uses.len) sb_puts(&body, "  int unused;\n");
  sb_printf(&body, "} %s_closure;\n\n", fn);
  sb_printf(&body, "static int %s(int kiln_task, int kiln_ntask, void *kiln_cdata) {\n", fn);
  sb_printf(&body, "  %s_closure *kiln_cl = (%s_closure *)kiln_cdata;\n", fn, fn);
  for (int i = 0; i < fv.uses.len; i++) {
    Expr *x = fv.uses.data[i];
    if (dt_is_handle(x->dtype))
      sb_printf(&body, "  %s *%s%s = kiln_cl->%s;\n", buf_ctype(g, x), g->restrict_, vname(g, x), vname(g, x));
    else
      sb_printf(&body, "  %s %s = kiln_cl->%s;\n", ctype(g, x->dtype), vname(g, x), vname(g, x));
  }
  if (!fv.uses.len) sb_puts(&body, "  (void)kiln_cl;\n");
  const char *lv = vname(g, s->for_.var);
  sb_puts(&body, "  int64_t kiln_n = ");
  expr(g, s->for_.extent);
  /* task k of m covers [k*n/m, (k+1)*n/m): shares differ by at most one */
  sb_puts(&body, ";\n  int64_t kiln_begin = kiln_n * kiln_task / kiln_ntask;\n"
                 "  int64_t kiln_end = kiln_n * (kiln_task + 1) / kiln_ntask;\n");
  sb_printf(&body, "  for (int32_t %s = (int32_t)kiln_begin; %s < (int32_t)kiln_end; ++%s) {\n", lv, lv, lv);
  g->indent = 4;
  /* the loop variable is offset by min */
  Stmt *inner = s->for_.body;
  if (!ir_is_int_value(s->for_.min, 0)) {
    Expr *nv = ir_var(s->for_.var->var.name, s->for_.var->dtype);
    inner = ir_substitute_stmt1(inner, s->for_.var, ir_add(nv, s->for_.min));
    inner = ir_let_stmt(nv, s->for_.var, inner);
  }
  analyzer_bind_range(g->an, s->for_.var, ir_i32(0), s->for_.extent);
  g->par_depth++;
  stmt(g, inner);
  g->par_depth--;
  sb_puts(&body, "  }\n  return 0;\n}\n\n");
  sb_puts(&g->outlined, body.data);
  sb_free(&body);
  g->out = saved;
  g->indent = saved_indent;
  /* the launch */
  line(g);
  sb_printf(g->out, "{ /* parallel loop over %s */\n", s->for_.var->var.name);
  g->indent += 2;
  line(g);
  sb_printf(g->out, "%s_closure kiln_cl = {", fn);
  for (int i = 0; i < fv.uses.len; i++)
    sb_printf(g->out, "%s%s", i ? ", " : "", vname(g, fv.uses.data[i]));
  if (!fv.uses.len) sb_puts(g->out, "0");
  sb_puts(g->out, "};\n");
  line(g);
  sb_printf(g->out, "if (kiln_parallel(%s, &kiln_cl)) return -1;\n", fn);
  g->indent -= 2;
  line(g);
  sb_puts(g->out, "}\n");
  pm_free(&fv.bound);
  pm_free(&fv.seen);
}

#define STACK_ALLOC_LIMIT (64 * 1024)
#define PARALLEL_STACK_LIMIT (256 * 1024) /* plain kernels: a task's own buffer on a thread's stack */

/* Plain kernels: an allocation of up to dialect->stack_bytes lives on the
 * stack; a larger one is a slice of the kernel's scratch area (the
 * caller's workspace), free again when its scope ends, so the kernel's
 * scratch need is the deepest nesting of slices.  Inside a parallel loop
 * run by several threads every task needs a buffer of its own, so there
 * the stack is the only place (up to PARALLEL_STACK_LIMIT). */
static void plain_alloc(CG *g, Stmt *s, const char *b, const char *ct, int esz) {
  StrBuf *o = g->out;
  int64_t n;
  const char *what = s->alloc.buf->var.name;
  if (!ir_is_const_int(s->alloc.size, &n)) {
    fail(g, "standalone C: the size of buffer '%s' is not a constant (every shape must be static)", what);
    return;
  }
  if (n < 1) n = 1;
  int64_t bytes = n * esz;
  bool per_task = g->par_depth > 0 && g->dialect->threads != CTHREADS_NONE;
  if (bytes <= g->dialect->stack_bytes || per_task) {
    if (bytes > PARALLEL_STACK_LIMIT) {
      fail(g, "standalone C: buffer '%s' is allocated inside a parallel loop and is too large for a thread's "
              "stack; export with --threads none",
           what);
      return;
    }
    sb_printf(o, "%s %s[%lld] KILN_ALIGN64;\n", ct, b, (long long)n);
    return;
  }
  int64_t off = (g->scratch_off + 63) & ~(int64_t)63;
  sb_printf(o, "%s *restrict %s = (%s *)(void *)(kiln_scratch + %lld); /* %lld bytes of scratch */\n", ct, b, ct,
            (long long)off, (long long)bytes);
  g->scratch_off = off + bytes;
  if (g->scratch_off > g->scratch_max) g->scratch_max = g->scratch_off;
}

/* Plain kernels: a parallel loop without threads is a serial loop; with
 * OpenMP it is a serial loop under `omp parallel for`; with pthreads it is
 * outlined as for the module ABI (false: the caller does that). */
static bool plain_parallel(CG *g, Stmt *s) {
  if (!g->dialect || g->dialect->threads == CTHREADS_PTHREADS) return false;
  Stmt *serial = ir_for(s->for_.var, s->for_.min, s->for_.extent, FOR_SERIAL, s->for_.body);
  /* OpenMP wants its canonical loop form: constant bounds here (else the
   * loop runs serially, still correct) */
  bool canonical = ir_is_const_int(s->for_.min, NULL) && ir_is_const_int(s->for_.extent, NULL);
  if (g->dialect->threads == CTHREADS_OPENMP && g->par_depth == 0 && canonical) {
    line(g);
    sb_puts(g->out, "#pragma omp parallel for schedule(static)\n");
  }
  g->par_depth++;
  stmt(g, serial);
  g->par_depth--;
  return true;
}

static void stmt(CG *g, Stmt *s);

/* A GPU function's host code: launch kernel `name` (Attr "device_launch")
 * with its parameters and launch extents through the runtime's pointer. */
static void device_launch(CG *g, Stmt *s) {
  StrBuf *o = g->out;
  const char *name = s->attr.value->str;
  DeviceKernel *k = NULL;
  int index = 0;
  for (int i = 0; g->f && i < g->f->nkernels; i++)
    if (!strcmp(g->f->kernels[i]->name, name)) {
      k = g->f->kernels[i];
      index = g->kernel_base + i;
    }
  if (!k) {
    fail(g, "codegen: launch of unknown kernel '%s'", name);
    return;
  }
  line(g);
  sb_printf(o, "{ /* launch %s */\n", name);
  g->indent += 2;
  line(g);
  sb_printf(o, "KilnValue kargs[%d];\n", k->nparams > 0 ? k->nparams : 1);
  for (int p = 0; p < k->nparams; p++) {
    Expr *v = k->params[p];
    line(g);
    if (dt_is_handle(v->dtype))
      sb_printf(o, "kargs[%d].v_handle = (void *)%s;\n", p, vname(g, v));
    else if (dt_is_float(v->dtype))
      sb_printf(o, "kargs[%d].v_float64 = (double)%s;\n", p, vname(g, v));
    else
      sb_printf(o, "kargs[%d].v_int64 = (int64_t)%s;\n", p, vname(g, v));
  }
  line(g);
  sb_puts(o, "const int64_t kext[6] = {");
  for (int t = 0; t < TAG__COUNT; t++) {
    if (t) sb_puts(o, ", ");
    sb_puts(o, "(int64_t)(");
    expr(g, k->extent[t]);
    sb_putc(o, ')');
  }
  sb_puts(o, "};\n");
  line(g);
  sb_printf(o, "if (kiln_device_launch(kiln_dev_id, %d, kext, kargs, %d)) return -1;\n", index, k->nparams);
  g->indent -= 2;
  line(g);
  sb_puts(o, "}\n");
}

/* A global buffer of a GPU function (between two kernels): device memory
 * for the duration of the body. */
static void device_alloc(CG *g, Stmt *s) {
  StrBuf *o = g->out;
  const char *b = vname(g, s->alloc.buf);
  DType *et = KNEW(DType);
  *et = s->alloc.dtype;
  pm_put(&g->buftype, s->alloc.buf, et);
  int esz = dt_is_bool(*et) ? 1 : dt_bytes(*et);
  int label = g->ndev++;
  line(g);
  sb_printf(o, "{ /* allocate %s (device) */\n", s->alloc.buf->var.name);
  g->indent += 2;
  line(g);
  sb_printf(o, "void *%s = kiln_device_alloc(kiln_dev_id, (uint64_t)(", b);
  expr(g, s->alloc.size);
  sb_printf(o, ") * %d);\n", esz);
  line(g);
  sb_printf(o, "if (!%s) return -1;\n", b);
  line(g);
  sb_printf(o, "int kiln_rc_%d = 0;\n", label);
  /* a failing launch inside jumps to the free, so the buffer never leaks */
  StrBuf inner = {0};
  StrBuf *saved = g->out;
  g->out = &inner;
  stmt(g, s->alloc.body);
  g->out = saved;
  const char *text = inner.data ? inner.data : "";
  for (const char *p = text; *p;) {
    const char *hit = strstr(p, "return -1;");
    if (!hit) {
      sb_puts(o, p);
      break;
    }
    sb_putn(o, p, (size_t)(hit - p));
    sb_printf(o, "{ kiln_rc_%d = -1; goto kiln_free_%d; }", label, label);
    p = hit + strlen("return -1;");
  }
  sb_free(&inner);
  sb_printf(o, "kiln_free_%d:\n", label);
  line(g);
  sb_printf(o, "kiln_device_free(kiln_dev_id, %s);\n", b);
  line(g);
  sb_printf(o, "if (kiln_rc_%d) return -1;\n", label);
  g->indent -= 2;
  line(g);
  sb_puts(o, "}\n");
}

static void stmt(CG *g, Stmt *s) {
  StrBuf *o = g->out;
  switch (s->kind) {
  case SK_For: {
    if (s->for_.fkind == FOR_THREAD) {
      fail(g, "loop '%s' is bound to a GPU thread axis; thread-bound loops need a GPU target",
           s->for_.var->var.name);
      return;
    }
    if (s->for_.fkind == FOR_PARALLEL && plain_parallel(g, s)) return;
    if (s->for_.fkind == FOR_PARALLEL) {
      parallel_for(g, s);
      return;
    }
    const char *v = vname(g, s->for_.var);
    analyzer_bind_range(g->an, s->for_.var, s->for_.min, s->for_.extent);
    if (s->for_.fkind == FOR_UNROLLED) {
      int64_t n = 0;
      ir_is_const_int(s->for_.extent, &n);
      line(g);
      if (g->dialect)
        sb_printf(o, "KILN_UNROLL(%lld)\n", (long long)(n > 0 ? n : 8));
      else
        sb_printf(o, "#pragma GCC unroll %lld\n", (long long)(n > 0 ? n : 8));
    }
    line(g);
    int64_t mn, ex;
    if (ir_is_const_int(s->for_.min, &mn) && ir_is_const_int(s->for_.extent, &ex)) {
      sb_printf(o, "for (int32_t %s = %lld; %s < %lld; ++%s) {\n", v, (long long)mn, v, (long long)(mn + ex), v);
    } else {
      const char *end = unique_name(g, kfmt("%s_end", v));
      sb_printf(o, "for (int32_t %s = ", v);
      expr(g, s->for_.min);
      sb_printf(o, ", %s = %s + ", end, v);
      expr(g, s->for_.extent);
      sb_printf(o, "; %s < %s; ++%s) {\n", v, end, v);
    }
    g->indent += 2;
    stmt(g, s->for_.body);
    g->indent -= 2;
    line(g);
    sb_puts(o, "}\n");
    return;
  }
  case SK_Store: {
    const char *buf = vname(g, s->store.buf);
    Expr *idx = s->store.index, *val = s->store.value;
    DType *et = pm_get(&g->buftype, s->store.buf);
    line(g);
    if (val->dtype.lanes == 1) {
      sb_printf(o, "%s[", buf);
      expr(g, idx);
      sb_puts(o, "] = ");
      expr(g, val);
      sb_puts(o, ";\n");
      return;
    }
    bool boolbuf = et && dt_is_bool(*et);
    if (is_contiguous_ramp(idx) && !boolbuf) {
      sb_printf(o, "*(%su *)(%s + ", ctype(g, val->dtype), buf);
      expr(g, idx->ramp.base);
      sb_puts(o, ") = ");
      expr(g, val);
      sb_puts(o, ";\n");
      return;
    }
    /* a scatter, one lane at a time */
    const char *vt = ctype(g, val->dtype), *it = ctype(g, idx->dtype);
    const char *ect = et ? scalar_ctype(*et) : scalar_ctype(dt_scalar(val->dtype));
    const char *name = kfmt("kiln_scatter_%s_%s", vt + 3, it + 3);
    need(g, name,
         kfmt("static inline void %s(%s *p, %s i, %s v) {\n  for (int l = 0; l < %d; l++) p[i[l]] = "
              "(%s)%s;\n}\n",
              name, ect, it, vt, val->dtype.lanes, ect, boolbuf ? "(v[l] & 1)" : "v[l]"));
    sb_printf(o, "%s(%s, ", name, buf);
    expr(g, idx);
    sb_puts(o, ", ");
    expr(g, val);
    sb_puts(o, ");\n");
    return;
  }
  case SK_Allocate: {
    if (g->f && g->f->device_type != kDLCPU) {
      device_alloc(g, s);
      return;
    }
    const char *b = vname(g, s->alloc.buf);
    DType *et = KNEW(DType);
    *et = s->alloc.dtype;
    pm_put(&g->buftype, s->alloc.buf, et);
    const char *ct = scalar_ctype(dt_scalar(s->alloc.dtype));
    int64_t n;
    int esz = dt_is_bool(*et) ? 1 : et->bits / 8;
    line(g);
    sb_printf(o, "{ /* allocate %s (%s) */\n", s->alloc.buf->var.name, s->alloc.scope);
    g->indent += 2;
    line(g);
    if (g->dialect) {
      plain_alloc(g, s, b, ct, esz);
    } else if (ir_is_const_int(s->alloc.size, &n) && n * esz <= STACK_ALLOC_LIMIT) {
      sb_printf(o, "%s %s[%lld] __attribute__((aligned(64)));\n", ct, b, (long long)(n > 0 ? n : 1));
    } else {
      sb_printf(o, "%s *%s __attribute__((cleanup(kiln_free_ptr))) = (%s *)kiln_alloc((size_t)(", ct, b, ct);
      expr(g, s->alloc.size);
      sb_printf(o, ") * %d);\n", esz);
      line(g);
      sb_printf(o, "if (!%s) { kiln_error(\"%s: out of memory allocating %s\"); return -1; }\n", b, g->fname,
                s->alloc.buf->var.name);
    }
    int64_t scratch_saved = g->scratch_off; /* the slice is free again after the scope */
    stmt(g, s->alloc.body);
    g->scratch_off = scratch_saved;
    g->indent -= 2;
    line(g);
    sb_puts(o, "}\n");
    return;
  }
  case SK_IfThenElse: {
    line(g);
    sb_puts(o, "if (");
    expr(g, s->if_.cond);
    sb_puts(o, ") {\n");
    g->indent += 2;
    stmt(g, s->if_.then_);
    g->indent -= 2;
    if (s->if_.else_ && !ir_is_nop(s->if_.else_)) {
      line(g);
      sb_puts(o, "} else {\n");
      g->indent += 2;
      stmt(g, s->if_.else_);
      g->indent -= 2;
    }
    line(g);
    sb_puts(o, "}\n");
    return;
  }
  case SK_Seq:
    for (int i = 0; i < s->seq.n; i++) stmt(g, s->seq.s[i]);
    return;
  case SK_Evaluate:
    if (ir_is_const(s->eval.value)) return;
    line(g);
    sb_puts(o, "(void)");
    expr(g, s->eval.value);
    sb_puts(o, ";\n");
    return;
  case SK_Attr:
    if (!strcmp(s->attr.key, "device_launch")) {
      device_launch(g, s);
      return;
    }
    if (!strncmp(s->attr.key, "pragma_", 7)) {
      line(g);
      sb_printf(o, "/* %s */\n", s->attr.key);
    }
    stmt(g, s->attr.body);
    return;
  case SK_Produce:
    line(g);
    sb_printf(o, "/* produce %s */\n", s->produce.tensor->name);
    stmt(g, s->produce.body);
    return;
  case SK_LetStmt: {
    line(g);
    sb_printf(o, "{\n");
    g->indent += 2;
    line(g);
    sb_printf(o, "%s %s = ", ctype(g, s->let.var->dtype), vname(g, s->let.var));
    expr(g, s->let.value);
    sb_puts(o, ";\n");
    stmt(g, s->let.body);
    g->indent -= 2;
    line(g);
    sb_puts(o, "}\n");
    return;
  }
  case SK_Provide:
  case SK_Realize:
    fail(g, "codegen: %s reached code generation (storage was not flattened)", stmt_kind_name(s->kind));
    return;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ---- kernels ---- */

static const char *dtype_desc(DType t) { return dt_str(t); }

/* Emit the argument checks and buffer bindings of f's entry. */
static void prologue(CG *g, LoweredFunc *f, PtrMap *bound_shape_vars) {
  StrBuf *o = g->out;
  const char *fn = f->name;
  const char **tvs = KNEWN(const char *, f->nargs > 0 ? f->nargs : 1);
  sb_printf(o, "  if (num_args != %d) {\n    kiln_error(\"%s: expected %d arguments, got %%d\", (int)num_args);\n    return -1;\n  }\n",
            f->nargs, fn, f->nargs);
  for (int i = 0; i < f->nargs; i++) {
    Tensor *t = f->args[i];
    const char *tv = unique_name(g, kfmt("arg_%s", t->name));
    sb_printf(o, "  if (type_codes[%d] != 7 && type_codes[%d] != 13) {\n"
                 "    kiln_error(\"%s: argument %d (%s) must be a tensor, got type code %%d\", (int)type_codes[%d]);\n"
                 "    return -1;\n  }\n",
              i, i, fn, i, t->name, i);
    sb_printf(o, "  const kiln_tensor *%s = (const kiln_tensor *)args[%d].v_handle;\n", tv, i);
    sb_printf(o, "  if (!%s || (!%s->data && kiln_numel(%s) > 0)) {\n    kiln_error(\"%s: argument %d (%s) is a null tensor\");\n    return -1;\n  }\n",
              tv, tv, tv, fn, i, t->name);
    if (f->device_type == kDLCPU) {
      sb_printf(o, "  if (%s->device.device_type != 1) {\n    kiln_error(\"%s: argument %d (%s) is on device type %%d; this kernel runs on the CPU\", (int)%s->device.device_type);\n    return -1;\n  }\n",
                tv, fn, i, t->name, tv);
    } else {
      const char *dn = f->device_type == kDLCUDA ? "cuda" : "opencl";
      sb_printf(o, "  if (%s->device.device_type != %d) {\n    kiln_error(\"%s: argument %d (%s) is on device type %%d; this kernel runs on %s (device type %d): copy it there with kiln.nd.array(x, kiln.%s(0))\", (int)%s->device.device_type);\n    return -1;\n  }\n",
                tv, f->device_type, fn, i, t->name, dn, f->device_type, dn, tv);
      if (i == 0)
        sb_printf(o, "  const int32_t kiln_dev_id = %s->device.device_id;\n", tv);
      else
        sb_printf(o, "  if (%s->device.device_id != kiln_dev_id) {\n    kiln_error(\"%s: argument %d (%s) is on %s device %%d, argument 0 on device %%d; a kernel runs on one device\", (int)%s->device.device_id, (int)kiln_dev_id);\n    return -1;\n  }\n",
                  tv, fn, i, t->name, dn, tv);
      sb_printf(o, "  if (%s->byte_offset) {\n    kiln_error(\"%s: argument %d (%s) starts at a byte offset into device memory; pass a tensor of its own\");\n    return -1;\n  }\n",
                tv, fn, i, t->name);
    }
    sb_printf(o, "  if (%s->ndim != %d) {\n    kiln_error(\"%s: argument %d (%s) has %%d dimensions, expected %d\", (int)%s->ndim);\n    return -1;\n  }\n",
              tv, t->ndim, fn, i, t->name, t->ndim, tv);
    DType dt = t->dtype;
    int bits = dt.bits;
    /* bool tensors arrive as 8-bit storage (NumPy) or 1-bit (TVM style) */
    if (dt_is_bool(dt))
      sb_printf(o, "  if (!((%s->dtype.code == 1 || %s->dtype.code == 6) && (%s->dtype.bits == 1 || %s->dtype.bits == 8) && %s->dtype.lanes == 1)) {\n",
                tv, tv, tv, tv, tv);
    else
      sb_printf(o, "  if (%s->dtype.code != %d || %s->dtype.bits != %d || %s->dtype.lanes != %d) {\n", tv, dt.code, tv, bits, tv,
                dt.lanes);
    sb_printf(o, "    kiln_error(\"%s: argument %d (%s) has dtype %%s, expected %s\", kiln_dtype_name(%s->dtype));\n    return -1;\n  }\n",
              fn, i, t->name, dtype_desc(dt), tv);
    for (int d = 0; d < t->ndim; d++) {
      Expr *sd = t->shape[d];
      int64_t c;
      if (ir_is_const_int(sd, &c)) {
        sb_printf(o, "  if (%s->shape[%d] != %lld) {\n    kiln_error(\"%s: argument %d (%s) has shape[%d] = %%lld, expected %lld\", (long long)%s->shape[%d]);\n    return -1;\n  }\n",
                  tv, d, (long long)c, fn, i, t->name, d, (long long)c, tv, d);
      } else if (sd->kind == EK_Var && !pm_has(bound_shape_vars, sd)) {
        pm_put(bound_shape_vars, sd, sd);
        sb_printf(o, "  %s %s = (%s)%s->shape[%d];\n", ctype(g, sd->dtype), vname(g, sd), ctype(g, sd->dtype), tv, d);
      }
    }
    /* a symbolic shape is sized at run time: more elements than 32-bit
     * indices reach is an error there (a constant one was refused when the
     * tensor was made, te.h) */
    bool symbolic = false;
    for (int d = 0; d < t->ndim; d++) symbolic |= !ir_is_const_int(t->shape[d], NULL);
    if (symbolic)
      sb_printf(o, "  if (kiln_numel(%s) > 2147483647LL) {\n    kiln_error(\"%s: argument %d (%s) has %%lld elements, more "
                   "than Kiln's generated code indexes (2^31 - 1, with 32-bit integers); call it on smaller tensors\", "
                   "(long long)kiln_numel(%s));\n    return -1;\n  }\n",
                tv, fn, i, t->name, tv);
    sb_printf(o, "  if (%s->strides) {\n    int64_t expect = 1;\n    for (int d = %d - 1; d >= 0; d--) {\n"
                 "      if (%s->shape[d] != 1 && %s->strides[d] != expect) {\n"
                 "        kiln_error(\"%s: argument %d (%s) must be compact (row-major), got a strided tensor\");\n"
                 "        return -1;\n      }\n      expect *= %s->shape[d];\n    }\n  }\n",
              tv, t->ndim, tv, tv, fn, i, t->name, tv);
    const char *bn = vname(g, f->arg_bufs[i]);
    DType *et = KNEW(DType);
    *et = dt;
    pm_put(&g->buftype, f->arg_bufs[i], et);
    if (f->device_type == kDLCPU)
      sb_printf(o, "  %s *%s%s = (%s *)((char *)%s->data + %s->byte_offset);\n", scalar_ctype(dt), g->restrict_,
                bn, scalar_ctype(dt), tv, tv);
    else
      sb_printf(o, "  void *%s = %s->data; /* device memory */\n", bn, tv);
    tvs[i] = tv;
  }
  /* symbolic dims: each is checked once all variables are bound */
  for (int i = 0; i < f->nargs; i++) {
    Tensor *t = f->args[i];
    const char *tv = tvs[i];
    for (int d = 0; d < t->ndim; d++) {
      Expr *sd = t->shape[d];
      if (ir_is_const_int(sd, NULL)) continue;
      sb_printf(o, "  if (%s->shape[%d] != (int64_t)(", tv, d);
      expr(g, sd);
      sb_printf(o, ")) {\n    kiln_error(\"%s: argument %d (%s) has shape[%d] = %%lld, expected %%lld (%s)\", (long long)%s->shape[%d], (long long)(",
                fn, i, t->name, d, ir_expr_str(sd), tv, d);
      expr(g, sd);
      sb_puts(o, "));\n    return -1;\n  }\n");
    }
  }
}

/* Free variables of the body that no argument shape binds. */
static int check_unbound(CG *g, LoweredFunc *f, PtrMap *bound) {
  FreeVars fv = {{0}, {0}, {0}};
  for (int i = 0; i < f->nargs; i++) pm_put(&fv.bound, f->arg_bufs[i], f);
  IRVisitor v = {fv_expr, fv_stmt, &fv};
  ir_visit_stmt(&v, f->body);
  int rc = 0;
  for (int i = 0; i < fv.uses.len; i++) {
    Expr *x = fv.uses.data[i];
    if (!pm_has(bound, x)) {
      rc = kiln_set_error("codegen: function '%s' uses variable '%s', which no argument's shape "
                          "binds",
                          f->name, x->var.name);
      break;
    }
  }
  pm_free(&fv.bound);
  pm_free(&fv.seen);
  return rc;
}

static const char *prelude =
    "/* Generated by Kiln. */\n"
    /* gcc 12 emits masked vmovsh for _Float16 code on AVX512-FP16 machines,
     * which binutils 2.40 cannot assemble: half precision goes through
     * float32 instructions there instead */
    "#if defined(__AVX512FP16__) && defined(__GNUC__) && !defined(__clang__)\n#pragma GCC target(\"no-avx512fp16\")\n#endif\n"
    "#include <math.h>\n#include <stdarg.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    "typedef union { int64_t v_int64; double v_float64; void *v_handle; const char *v_str; } KilnValue;\n"
    "typedef struct { uint8_t code, bits; uint16_t lanes; } kiln_dtype;\n"
    "typedef struct { int32_t device_type, device_id; } kiln_device;\n"
    "typedef struct {\n  void *data;\n  kiln_device device;\n  int32_t ndim;\n  kiln_dtype dtype;\n"
    "  int64_t *shape, *strides;\n  uint64_t byte_offset;\n} kiln_tensor; /* DLTensor */\n\n"
    "@GLOBALS@"
    "static void kiln_error(const char *fmt, ...) {\n  char msg[1024];\n  va_list ap;\n  va_start(ap, fmt);\n"
    "  vsnprintf(msg, sizeof msg, fmt, ap);\n  va_end(ap);\n  if (__kiln_set_last_error_ptr) __kiln_set_last_error_ptr(msg);\n}\n"
    "static inline int kiln_parallel(int (*fn)(int, int, void *), void *c) {\n"
    "  if (__kiln_parallel_launch_ptr) return __kiln_parallel_launch_ptr(fn, c, 0);\n  return fn(0, 1, c);\n}\n"
    "static inline void *kiln_alloc(size_t n) {\n  if (__kiln_workspace_alloc_ptr) return __kiln_workspace_alloc_ptr(n);\n"
    "  void *p = 0;\n  return posix_memalign(&p, 64, n ? n : 1) ? 0 : p;\n}\n"
    "static inline void kiln_free_ptr(void *pp) {\n  if (__kiln_workspace_free_ptr) __kiln_workspace_free_ptr(*(void **)pp);\n"
    "  else free(*(void **)pp);\n}\n"
    "static inline int64_t kiln_numel(const kiln_tensor *t) {\n  int64_t n = 1;\n"
    "  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];\n  return n;\n}\n"
    "static const char *kiln_dtype_name(kiln_dtype t) {\n  static __thread char buf[32];\n"
    "  const char *c = t.code == 0 ? \"int\" : t.code == 1 ? (t.bits == 1 ? \"bool\" : \"uint\") : t.code == 2 ? \"float\" : t.code == 6 ? \"bool\" : \"type\";\n"
    "  if ((t.code == 1 && t.bits == 1) || t.code == 6) snprintf(buf, sizeof buf, \"bool\");\n"
    "  else if (t.lanes > 1) snprintf(buf, sizeof buf, \"%s%dx%d\", c, t.bits, t.lanes);\n"
    "  else snprintf(buf, sizeof buf, \"%s%d\", c, t.bits);\n  return buf;\n}\n\n";

/* Unit 0 defines the module's globals; the others refer to them. */
static const char *globals_def =
    "const char __kiln_module_magic[] = \"kiln-module-v1\";\n"
    "void (*__kiln_set_last_error_ptr)(const char *) = 0;\n"
    "int (*__kiln_parallel_launch_ptr)(int (*)(int, int, void *), void *, int) = 0;\n"
    "void *(*__kiln_workspace_alloc_ptr)(size_t) = 0;\n"
    "void (*__kiln_workspace_free_ptr)(void *) = 0;\n\n";
/* A module with GPU functions: the device runtime's entry points, filled
 * by the loader (kiln/runtime.h, "the device ABI"). */
static const char *device_globals_def =
    "void *__kiln_device_module = 0;\n"
    "int (*__kiln_device_launch_ptr)(void *, int32_t, int32_t, const int64_t *, KilnValue *, int32_t) = 0;\n"
    "void *(*__kiln_device_alloc_ptr)(void *, int32_t, uint64_t) = 0;\n"
    "void (*__kiln_device_free_ptr)(void *, int32_t, void *) = 0;\n";
static const char *device_globals_decl =
    "extern void *__kiln_device_module;\n"
    "extern int (*__kiln_device_launch_ptr)(void *, int32_t, int32_t, const int64_t *, KilnValue *, int32_t);\n"
    "extern void *(*__kiln_device_alloc_ptr)(void *, int32_t, uint64_t);\n"
    "extern void (*__kiln_device_free_ptr)(void *, int32_t, void *);\n";
static const char *device_helpers =
    "static inline int kiln_device_launch(int32_t dev, int32_t k, const int64_t *ext, KilnValue *a, int32_t n) {\n"
    "  if (!__kiln_device_launch_ptr) {\n"
    "    kiln_error(\"this module's kernels run on a GPU; load it with kiln_module_load\");\n"
    "    return -1;\n  }\n"
    "  return __kiln_device_launch_ptr(__kiln_device_module, dev, k, ext, a, n);\n}\n"
    "static inline void *kiln_device_alloc(int32_t dev, uint64_t n) {\n"
    "  if (!__kiln_device_alloc_ptr) {\n"
    "    kiln_error(\"this module's kernels run on a GPU; load it with kiln_module_load\");\n"
    "    return 0;\n  }\n"
    "  return __kiln_device_alloc_ptr(__kiln_device_module, dev, n);\n}\n"
    "static inline void kiln_device_free(int32_t dev, void *p) {\n"
    "  if (__kiln_device_free_ptr) __kiln_device_free_ptr(__kiln_device_module, dev, p);\n}\n\n";

static const char *globals_decl =
    "extern void (*__kiln_set_last_error_ptr)(const char *);\n"
    "extern int (*__kiln_parallel_launch_ptr)(int (*)(int, int, void *), void *, int);\n"
    "extern void *(*__kiln_workspace_alloc_ptr)(size_t);\n"
    "extern void (*__kiln_workspace_free_ptr)(void *);\n\n";

/* ---- units ---- */

static void count_expr(IRVisitor *v, Expr *e) {
  (*(int64_t *)v->ud)++;
  ir_visit_expr_children(v, e);
}

static void count_stmt(IRVisitor *v, Stmt *s) {
  (*(int64_t *)v->ud)++;
  ir_visit_stmt_children(v, s);
}

/* Which unit each function goes to: the C compiler's time grows with the
 * code it reads, so the functions, largest first by IR nodes (loops are
 * already unrolled), each go to the unit with the fewest nodes so far.
 * Dealing them out in turn left ResNet-50's four units at 1.0 to 2.9 s
 * of gcc time (docs/compile_time.md). */
static void assign_units(LoweredFunc **funcs, int nfuncs, int nunits, int *unit_of) {
  int64_t *cost = KNEWN(int64_t, nfuncs + 1), *load = KNEWN(int64_t, nunits + 1);
  int *order = KNEWN(int, nfuncs + 1);
  for (int k = 0; k < nfuncs; k++) {
    IRVisitor v = {count_expr, count_stmt, &cost[k]};
    if (funcs[k] && funcs[k]->okind == KOBJ_FUNC && funcs[k]->body) ir_visit_stmt(&v, funcs[k]->body);
    order[k] = k;
  }
  for (int i = 1; i < nfuncs; i++) /* by cost, largest first; ties keep their order */
    for (int j = i; j > 0 && cost[order[j]] > cost[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < nfuncs; i++) {
    int best = 0;
    for (int u = 1; u < nunits; u++)
      if (load[u] < load[best]) best = u;
    unit_of[order[i]] = best;
    load[best] += cost[order[i]];
  }
}

char **codegen_c_units(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs, int nunits) {
  if (nunits < 1) nunits = 1;
  if (nunits > nfuncs && nfuncs > 0) nunits = nfuncs;
  CG g;
  memset(&g, 0, sizeof g);
  pm_init_str(&g.used);
  pm_init_str(&g.emitted);
  StrBuf *kernels = xcalloc((size_t)nunits, sizeof(StrBuf));
  StrBuf *helpers = xcalloc((size_t)nunits, sizeof(StrBuf));
  PtrMap *emitted = xcalloc((size_t)nunits, sizeof(PtrMap));
  for (int u = 0; u < nunits; u++) pm_init_str(&emitted[u]);
  const char **cnames = KNEWN(const char *, nfuncs > 0 ? nfuncs : 1);
  int rc = 0, nkern = 0;
  bool device = false;
  for (int k = 0; k < nfuncs; k++) device |= funcs[k] && funcs[k]->okind == KOBJ_FUNC && funcs[k]->device_type != kDLCPU;
  int *unit_of = KNEWN(int, nfuncs > 0 ? nfuncs : 1);
  assign_units(funcs, nfuncs, nunits, unit_of);
  for (int k = 0; k < nfuncs && !rc; k++) {
    LoweredFunc *f = funcs[k];
    int unit = unit_of[k];
    g.helpers = helpers[unit];
    g.emitted = emitted[unit];
    if (!f || f->okind != KOBJ_FUNC) {
      rc = kiln_set_error("codegen: function %d is not a lowered function", k);
      break;
    }
    for (int j = 0; j < k; j++)
      if (!strcmp(funcs[j]->name, f->name)) {
        rc = kiln_set_error("codegen: two functions are named '%s'", f->name);
        break;
      }
    if (rc) break;
    /* names are per kernel, except the kernels' own */
    pm_free(&g.names);
    PtrMap keep;
    pm_init_str(&keep);
    for (int j = 0; j < k; j++) pm_put(&keep, cnames[j], (void *)1);
    pm_free(&g.used);
    g.used = keep;
    cnames[k] = unique_name(&g, f->name);
    g.fname = cnames[k];
    g.restrict_ = f->may_alias ? "" : "restrict ";
    g.f = f;
    g.kernel_base = nkern;
    g.ndev = 0;
    nkern += f->nkernels;
    g.npar = 0;
    g.an = analyzer_new();
    PtrMap bound = {0};
    StrBuf body = {0};
    g.out = &body;
    sb_printf(&body, "int32_t %s(KilnValue *args, int32_t *type_codes, int32_t num_args) {\n", g.fname);
    prologue(&g, f, &bound);
    rc = check_unbound(&g, f, &bound);
    g.indent = 2;
    if (!rc) stmt(&g, f->body);
    sb_puts(&body, "  return 0;\n}\n\n");
    analyzer_free(g.an);
    pm_free(&bound);
    pm_free(&g.buftype);
    if (g.failed) rc = -1;
    if (!rc) {
      if (g.outlined.len) sb_puts(&kernels[unit], g.outlined.data);
      sb_puts(&kernels[unit], body.data);
    }
    helpers[unit] = g.helpers;
    emitted[unit] = g.emitted;
    sb_free(&g.outlined);
    sb_free(&body);
  }
  char **units = xcalloc((size_t)nunits, sizeof(char *));
  for (int u = 0; u < nunits && !rc; u++) {
    StrBuf src = {0};
    const char *mark = strstr(prelude, "@GLOBALS@");
    sb_putn(&src, prelude, (size_t)(mark - prelude));
    sb_puts(&src, u == 0 ? globals_def : globals_decl);
    if (device) sb_puts(&src, u == 0 ? device_globals_def : device_globals_decl);
    sb_puts(&src, mark + strlen("@GLOBALS@"));
    if (device) sb_puts(&src, device_helpers);
    if (helpers[u].len) {
      sb_puts(&src, helpers[u].data);
      sb_putc(&src, '\n');
    }
    if (u == 0)
      for (int k = 0; k < nfuncs; k++)
        if (unit_of[k]) sb_printf(&src, "int32_t %s(KilnValue *args, int32_t *type_codes, int32_t num_args);\n", cnames[k]);
    sb_puts(&src, kernels[u].data ? kernels[u].data : "");
    if (u > 0) {
      units[u] = sb_steal(&src);
      continue;
    }
    sb_printf(&src, "const int32_t __kiln_num_kernels = %d;\n", nfuncs);
    sb_puts(&src, "const char *const __kiln_kernel_names[] = {");
    for (int k = 0; k < nfuncs; k++) sb_printf(&src, "%s\"%s\"", k ? ", " : "", funcs[k]->name);
    if (!nfuncs) sb_puts(&src, "0");
    sb_puts(&src, "};\n");
    /* the names again, NUL-separated in a section of their own, for
     * readers that do not load the module (kiln_artifact_info) */
    sb_puts(&src, "__attribute__((section(\".kiln.kernels\"), used)) static const char __kiln_kernel_list[] = \"");
    for (int k = 0; k < nfuncs; k++) sb_printf(&src, "%s\\000", funcs[k]->name);
    sb_puts(&src, "\";\n");
    sb_puts(&src, "int32_t (*const __kiln_kernel_funcs[])(KilnValue *, int32_t *, int32_t) = {");
    for (int k = 0; k < nfuncs; k++) sb_printf(&src, "%s%s", k ? ", " : "", cnames[k]);
    if (!nfuncs) sb_puts(&src, "0");
    sb_puts(&src, "};\n");
    sb_printf(&src, "const int32_t __kiln_num_blobs = %d;\n", nblobs);
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "extern const unsigned char __kiln_blob_%d[];\n", b);
    sb_puts(&src, "const char *const __kiln_blob_names[] = {");
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "%s\"%s\"", b ? ", " : "", blobs[b].name);
    if (!nblobs) sb_puts(&src, "0");
    sb_puts(&src, "};\nconst unsigned char *const __kiln_blob_data[] = {");
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "%s__kiln_blob_%d", b ? ", " : "", b);
    if (!nblobs) sb_puts(&src, "0");
    sb_puts(&src, "};\nconst uint64_t __kiln_blob_sizes[] = {");
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "%s%lluu", b ? ", " : "", (unsigned long long)blobs[b].size);
    if (!nblobs) sb_puts(&src, "0");
    sb_puts(&src, "};\n");
    units[0] = sb_steal(&src);
  }
  for (int u = 0; u < nunits; u++) {
    sb_free(&kernels[u]);
    sb_free(&helpers[u]);
    pm_free(&emitted[u]);
  }
  free(kernels);
  free(helpers);
  free(emitted);
  pm_free(&g.names);
  pm_free(&g.used);
  if (rc) {
    for (int u = 0; u < nunits; u++) free(units[u]);
    free(units);
    return NULL;
  }
  return units;
}

char *codegen_c(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs) {
  char **u = codegen_c_units(funcs, nfuncs, nblobs, blobs, 1);
  if (!u) return NULL;
  char *r = u[0];
  free(u);
  return r;
}

/* ---- plain kernels (standalone C) ----
 *
 * The same statements and expressions, under another calling convention:
 *   static int NAME(float *restrict p0, ..., float *restrict T_out, char *restrict kiln_scratch)
 * with every shape static, no argument checks (the caller's executor is
 * generated with the kernels), no runtime to report errors to, and
 * allocations on the stack or in the kernel's scratch area (plain_alloc).
 * The unit's text needs the macros KILN_ALIGN64 and KILN_UNROLL(n), and
 * for pthreads a kiln_parallel(fn, closure) launcher, from its includer. */

struct CPlainUnit {
  CG g;
  StrBuf kernels;
  AVec cnames; /* the kernels' C names, kept unique across the unit */
};

CPlainUnit *codegen_c_plain_new(const CDialect *d) {
  CPlainUnit *u = xcalloc(1, sizeof *u);
  u->g.dialect = d;
  pm_init_str(&u->g.used);
  pm_init_str(&u->g.emitted);
  return u;
}

int codegen_c_plain_kernel(CPlainUnit *u, LoweredFunc *f, const char *cname, int64_t *scratch_bytes) {
  CG *g = &u->g;
  if (!f || f->okind != KOBJ_FUNC) return kiln_set_error("codegen: '%s' is not a lowered function", cname);
  for (int j = 0; j < u->cnames.len; j++)
    if (!strcmp(u->cnames.data[j], cname)) return kiln_set_error("codegen: two functions are named '%s'", cname);
  av_push(&u->cnames, kstrdup(cname));
  /* names are per kernel, except the kernels' own */
  pm_free(&g->names);
  pm_free(&g->used);
  pm_init_str(&g->used);
  for (int j = 0; j < u->cnames.len; j++) pm_put(&g->used, u->cnames.data[j], (void *)1);
  pm_put(&g->used, "kiln_scratch", (void *)1);
  g->fname = cname;
  g->restrict_ = f->may_alias ? "" : "restrict ";
  g->npar = 0;
  g->scratch_off = g->scratch_max = 0;
  g->par_depth = 0;
  g->failed = false;
  g->an = analyzer_new();
  StrBuf body = {0};
  g->out = &body;
  sb_printf(&body, "static int %s(", cname);
  for (int i = 0; i < f->nargs; i++) {
    DType dt = f->args[i]->dtype;
    DType *et = KNEW(DType);
    *et = dt;
    pm_put(&g->buftype, f->arg_bufs[i], et);
    sb_printf(&body, "%s *%s%s, ", scalar_ctype(dt), g->restrict_, vname(g, f->arg_bufs[i]));
  }
  sb_puts(&body, "char *restrict kiln_scratch) {\n");
  for (int i = 0; i < f->nargs; i++) sb_printf(&body, "  (void)%s;\n", vname(g, f->arg_bufs[i]));
  sb_puts(&body, "  (void)kiln_scratch;\n");
  PtrMap bound = {0};
  int rc = check_unbound(g, f, &bound);
  g->indent = 2;
  if (!rc) stmt(g, f->body);
  sb_puts(&body, "  return 0;\n}\n\n");
  analyzer_free(g->an);
  g->an = NULL;
  pm_free(&bound);
  pm_free(&g->buftype);
  if (g->failed) rc = -1;
  if (!rc) {
    if (g->outlined.len) sb_puts(&u->kernels, g->outlined.data);
    sb_puts(&u->kernels, body.data);
    *scratch_bytes = g->scratch_max;
  } else {
    kiln_error_context("kernel %s", cname);
  }
  sb_free(&g->outlined);
  sb_free(&body);
  return rc;
}

char *codegen_c_plain_finish(CPlainUnit *u, char **helpers) {
  *helpers = sb_steal(&u->g.helpers);
  char *k = sb_steal(&u->kernels);
  pm_free(&u->g.names);
  pm_free(&u->g.used);
  pm_free(&u->g.emitted);
  free(u);
  return k;
}
