/*
 * codegen_c_intrin.c - intrinsics and vector helpers of the C code generator.
 *
 * An intrinsic call is a scalar C expression (libm, Kiln's own float32
 * math from kiln_vmath.h, or the freestanding math file's kiln_* names); on
 * vectors it goes through a lane-loop helper emitted once per type.  The
 * dot-accumulate intrinsics (bf16, int8) are rows of a table: one
 * AVX512-BF16 / AVX512-VNNI instruction where the compiler targets it, a
 * lane loop in the instruction's order elsewhere.
 */
#include "codegen_c_internal.h"
#include "codegen_print.h"

#include <string.h>

/* Emit a helper taking vector operands, defined by a lane loop body. */
const char *cgc_lane_helper(CG *g, const char *op, DType rt, int nargs, DType *at,
                               const char *lane_expr) {
  const char *rtn = cgc_ctype(g, rt);
  StrBuf sig = {0};
  const char *name = kfmt("kiln_%s_%s", op, rtn + 3);
  for (int i = 0; i < nargs; i++) name = kfmt("%s_%s", name, at[i].lanes > 1 ? cgc_ctype(g, at[i]) + 3 : cgc_short_name(at[i]));
  if (pm_has(&g->emitted, name)) return name;
  sb_printf(&sig, "static inline %s %s(", rtn, name);
  for (int i = 0; i < nargs; i++) sb_printf(&sig, "%s%s %c", i ? ", " : "", cgc_ctype(g, at[i]), 'a' + i);
  sb_printf(&sig, ") {\n  %s r;\n  for (int l = 0; l < %d; l++) r[l] = %s;\n  return r;\n}\n", rtn,
            rt.lanes, lane_expr);
  cgc_need(g, name, sig.data);
  sb_free(&sig);
  return name;
}

/* float32 exp, tanh, erf and sigmoid come from kiln_vmath.h (pasted into
 * the unit once): branch-free, so a lane loop over them vectorizes; exp of
 * an argument whose result is normal (exp_normal) is its
 * kiln_vm_exp_normal, and the coarser exp_approx its kiln_vm_exp_approx. */
bool cgc_intrin_uses_vmath(Intrinsic op, DType t) {
  if (!(t.code == kDLFloat && t.bits == 32)) return false;
  return op == INTRIN_exp || op == INTRIN_exp_normal || op == INTRIN_exp_approx || op == INTRIN_tanh || op == INTRIN_erf || op == INTRIN_sigmoid;
}

/* Append function text fn to dst; a function whose own body calls
 * kiln_vmath.h gets KILN_VM_KERNEL before its definition, which starts at
 * byte sig_at of fn: compiled without GCC's RTL loop-invariant motion
 * (kiln_vmath.h, docs/vmath.md).  Not one that also calls the bfloat16
 * dot-accumulate helpers: their loops ran up to 10 % slower without the
 * pass (EfficientNet-B0 --precision bf16 1.8-4.6 %). */
void cgc_put_function(StrBuf *dst, const char *fn, size_t sig_at, const CG *g) {
  sb_putn(dst, fn, sig_at);
  if (g->vmath_calls && !g->bf16_calls) sb_puts(dst, "KILN_VM_KERNEL ");
  sb_puts(dst, fn + sig_at);
}

static const char *scalar_ctype(void *state, DType t) {
  (void)state;
  return cgc_scalar_ctype(t);
}

/* Scalar C expression of an intrinsic on scalar operand names a, b. */
const char *cgc_intrin_scalar(const CG *g, Intrinsic op, DType t, const char *a, const char *b) {
  bool f32 = t.code == kDLFloat && t.bits == 32;
  const char *s = f32 ? "f" : "";
  if (cgc_intrin_uses_vmath(op, t)) {
    const char *fn = op == INTRIN_exp          ? "kiln_expf"
                     : op == INTRIN_exp_normal ? "kiln_vm_exp_normal"
                     : op == INTRIN_exp_approx ? "kiln_vm_exp_approx"
                     : op == INTRIN_tanh       ? "kiln_tanhf"
                     : op == INTRIN_erf        ? "kiln_erff"
                                               : "kiln_sigmoidf";
    return kfmt("%s(%s)", fn, a);
  }
  /* freestanding: the math file's kiln_logf, ... instead of libm's */
  const char *m = g->dialect && g->dialect->freestanding ? "kiln_" : "";
  switch (op) {
  case INTRIN_exp: case INTRIN_exp_normal: case INTRIN_exp_approx: return kfmt("%sexp%s(%s)", m, s, a);
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
  case INTRIN_shift_left: return cgp_shift_left(t, a, b, scalar_ctype, NULL); /* a signed one as unsigned bits */
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
  case INTRIN_prefetch: /* a is the element's lvalue, b the locality */
    if (g->dialect && g->dialect->portable) return "0";
    return kfmt("(__builtin_prefetch(&%s, 0, %s), 0)", a, b);
  case INTRIN__COUNT: break;
  }
  KUNREACHABLE();
}

/* bfloat16 in generated code (docs/bf16.md): scalar helpers with the
 * semantics of ir_bf16_round / ir_bf16_float (src/ir/scalar.c), and a
 * vector dot-accumulate that is one AVX512-BF16 VDPBF16PS where the
 * compiler targets it (a lane loop elsewhere). */
const char cgc_bf16_source[] =
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
const char cgc_int8_source[] =
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
    {INTRIN_bf16_dot2, "kiln_bf16", cgc_bf16_source, {kDLFloat, 32, 1}, "kiln_bf16_dot_acc", "__AVX512BF16__",
     "(%s)_mm512_dpbf16_ps((__m512)c, (__m512bh)a, (__m512bh)b)",
     "(%s)_mm256_dpbf16_ps((__m256)c, (__m256bh)a, (__m256bh)b)",
     "    float s = c[l] + kiln_bf16_float(a[l] >> 16) * kiln_bf16_float(b[l] >> 16);\n"
     "    c[l] = s + kiln_bf16_float(a[l]) * kiln_bf16_float(b[l]);\n"},
    /* VPDPBUSD: int32 wraps as the instruction does (the sum in uint32) */
    {INTRIN_u8s8_dot4, "kiln_int8", cgc_int8_source, {kDLInt, 32, 1}, "kiln_dpbusd", "__AVX512VNNI__",
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
bool cgc_emit_dot_acc(CG *g, Expr *e) {
  DType t = e->dtype;
  bool b_dot = dot_acc_of(e->bin.b) != NULL;
  Expr *dot = b_dot ? e->bin.b : e->bin.a, *acc = b_dot ? e->bin.a : e->bin.b;
  const DotAcc *d = dot_acc_of(dot);
  if (t.lanes < 2 || !d || !dt_eq(dt_scalar(t), d->acc)) return false;
  const char *vt = cgc_ctype(g, t), *uvt = cgc_ctype(g, dot->call.args[0]->dtype);
  const char *name = kfmt("%s_%s", d->prefix, vt + 3);
  cgc_need(g, d->source_key, d->source);
  if (d->op == INTRIN_bf16_dot2) g->bf16_calls++;
  const char *isa = t.lanes == 16  ? kfmt("defined(%s)", d->isa)
                    : t.lanes == 8 ? kfmt("defined(%s) && defined(__AVX512VL__)", d->isa)
                                   : "0";
  const char *body = t.lanes == 16 ? kfmt(d->intr16, vt) : t.lanes == 8 ? kfmt(d->intr8, vt) : "c";
  cgc_need(g, name,
       kfmt("static inline %s %s(%s c, %s a, %s b) {\n#if %s\n  return %s;\n#else\n"
            "  for (int l = 0; l < %d; l++) {\n%s  }\n  return c;\n#endif\n}\n",
            vt, name, vt, uvt, uvt, isa, body, t.lanes, d->lane));
  sb_printf(g->out, "%s(", name);
  cgc_expr(g, acc);
  sb_puts(g->out, ", ");
  cgc_expr(g, dot->call.args[0]);
  sb_puts(g->out, ", ");
  cgc_expr(g, dot->call.args[1]);
  sb_putc(g->out, ')');
  return true;
}

/* Whether the freestanding math file (graph/backend/export_c_math.c) covers op. */
bool cgc_freestanding_has(Intrinsic op, DType t) {
  bool f32 = t.code == kDLFloat && t.bits == 32;
  switch (op) {
  case INTRIN_exp: case INTRIN_exp_normal: case INTRIN_exp_approx: case INTRIN_log: case INTRIN_sqrt: case INTRIN_rsqrt: case INTRIN_tanh:
  case INTRIN_erf: case INTRIN_pow: case INTRIN_floor: case INTRIN_ceil: case INTRIN_round: case INTRIN_trunc: case INTRIN_sigmoid:
  case INTRIN_isnan: case INTRIN_isinf:
    return f32;
  case INTRIN_fabs:
    return f32 || t.code != kDLFloat;
  case INTRIN_sin: case INTRIN_cos: case INTRIN_tan: case INTRIN_asin: case INTRIN_acos: case INTRIN_atan:
  case INTRIN_sinh: case INTRIN_cosh: case INTRIN_asinh: case INTRIN_acosh: case INTRIN_atanh: case INTRIN_fmod:
    return false;
  case INTRIN_shift_left: case INTRIN_shift_right: case INTRIN_bitwise_and: case INTRIN_bitwise_or:
  case INTRIN_bitwise_xor: case INTRIN_bitwise_not: case INTRIN_likely: case INTRIN_bf16_pack2: case INTRIN_bf16_dot2:
  case INTRIN_bf16_half: case INTRIN_u8s8_dot4: case INTRIN_prefetch:
    return true;
  case INTRIN__COUNT:
    break;
  }
  return false;
}
