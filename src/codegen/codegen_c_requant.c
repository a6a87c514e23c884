/*
 * codegen_c_requant.c - the requantize step of int8 epilogues as integer
 * conversions (docs/int8.md, "The requantize epilogue").
 *
 * QuantizeLinear ends every int8 layer's kernel as
 *
 *     cast<uint8>(clip(round(x), lo, hi))          (int8 likewise)
 *
 * which lowers to min(max(round(x), lo), hi) on float32 lanes, then a
 * truncating conversion to int32 and one to 8 bits: VRNDSCALEPS, VMAXPS,
 * VMINPS, VCVTTPS2DQ, VPMOVDB - five instructions per 16 outputs, as many
 * as the multiply-adds of a layer with 16 input channels per output
 * block.  With lo and hi integers of the 8-bit type's range the same
 * values come from the conversions that round (in the current rounding
 * mode, as nearbyint does) and saturate:
 *
 *   uint8, lo >= 0: VMAXPS(x, lo), VCVTPS2UDQ, [VPMINUD hi,] VPMOVUSDB
 *   int8, hi <= 127: VMINPS(hi, x), VCVTPS2DQ, [VPMAXSD lo,] VPMOVSDB
 *
 * (the bracketed step only where the bound is not the type's own).  Equal
 * lane for lane to the float sequence, NaN and infinities included:
 * rounding commutes with a clip to integer bounds; VMAXPS(x, lo) returns
 * lo for a NaN x as the float max does; VCVTPS2UDQ gives 2^32 - 1 for a
 * value past its range, which saturates to 255 as the clip to hi would
 * have; VMINPS(hi, x) passes a NaN on, VCVTPS2DQ turns it (and any value
 * below -2^31) into -2^31, which the max or the signed saturation makes
 * lo, as the float clip does.  Elsewhere the helper is a lane loop of the
 * float sequence itself.
 */
#include "codegen_c_internal.h"

#include <math.h>

/* e through its Lets: the innermost body */
static Expr *let_body(Expr *e) {
  while (e->kind == EK_Let) e = e->let.body;
  return e;
}

/* e with its innermost Let body replaced by body */
static Expr *rewrap(Expr *e, Expr *body) {
  return e->kind == EK_Let ? ir_let(e->let.var, e->let.value, rewrap(e->let.body, body)) : body;
}

/* A broadcast float constant that is an integer: its value in *v. */
static bool int_bcast(const Expr *e, double *v) {
  if (e->kind != EK_Broadcast || e->bcast.value->kind != EK_FloatImm) return false;
  *v = e->bcast.value->float_value;
  return *v == floor(*v);
}

/* a = min(max(round(x), lo), hi), the round directly or bound by a Let
 * (with Lets of its own around it): x with those Lets, else NULL. */
static Expr *rounded_clip(Expr *a, double *lo, double *hi) {
  Expr *v = NULL, *r = a;
  if (a->kind == EK_Let) {
    v = a->let.var;
    r = a->let.value;
    a = a->let.body;
  }
  if (a->kind != EK_Min || a->bin.a->kind != EK_Max || !int_bcast(a->bin.b, hi) || !int_bcast(a->bin.a->bin.b, lo))
    return NULL;
  Expr *m = a->bin.a->bin.a;
  if (!v)
    r = m;
  else if (m != v)
    return NULL;
  Expr *c = let_body(r);
  if (c->kind != EK_Call || c->call.op != INTRIN_round) return NULL;
  return rewrap(r, c->call.args[0]);
}

bool cgc_emit_requant(CG *g, Expr *e) {
  DType t = e->dtype;
  Expr *a = e->bin.a;
  double lo, hi;
  if (t.lanes != 16 || t.bits != 8 || !dt_is_intlike(t) || dt_is_bool(t) || a->dtype.code != kDLFloat ||
      a->dtype.bits != 32)
    return false;
  Expr *x = rounded_clip(a, &lo, &hi);
  bool u = t.code == kDLUInt;
  if (!x || lo > hi || lo < (u ? 0 : -128) || hi > (u ? 255 : 127)) return false;
  const char *vt = cgc_ctype(g, t), *ft = cgc_ctype(g, a->dtype), *st = cgc_scalar_ctype(dt_scalar(t));
  const char *name = kfmt("kiln_requant_%s_%s", ft + 3, vt + 3);
  const char *simd =
      u ? "  __m512i r = _mm512_cvtps_epu32(_mm512_max_ps((__m512)x, _mm512_set1_ps(lo)));\n"
          "  if (hi < 255.0f) r = _mm512_min_epu32(r, _mm512_set1_epi32((int)hi));\n"
          "  return (%s)_mm512_cvtusepi32_epi8(r);\n"
        : "  __m512i r = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_set1_ps(hi), (__m512)x));\n"
          "  if (lo > -128.0f) r = _mm512_max_epi32(r, _mm512_set1_epi32((int)lo));\n"
          "  return (%s)_mm512_cvtsepi32_epi8(r);\n";
  cgc_need(g, "kiln_immintrin", "#if defined(__AVX512F__)\n#include <immintrin.h>\n#endif\n");
  cgc_need(g, name,
           kfmt("static inline %s %s(%s x, float lo, float hi) {\n#if defined(__AVX512F__)\n%s#else\n"
                "  %s r;\n  for (int l = 0; l < 16; l++) {\n    float v = %s;\n    v = v > lo ? v : lo;\n"
                "    r[l] = (%s)(int32_t)(v < hi ? v : hi);\n  }\n  return r;\n#endif\n}\n",
                vt, name, ft, kfmt(simd, vt), vt, cgc_intrin_scalar(g, INTRIN_round, DT_F32, "x[l]", ""), st));
  sb_printf(g->out, "%s(", name);
  cgc_expr(g, x);
  sb_printf(g->out, ", %.1ff, %.1ff)", lo, hi);
  return true;
}
