/*
 * codegen_c_expr.c - expressions of the C code generator.
 *
 * cgc_expr prints one IR expression as C into g->out.  Scalars are plain C;
 * vectors use GCC/Clang vector extensions, with small inline helpers for
 * what C does not define on vectors (select, min/max, floor division,
 * gathers, permuted loads, ramps, broadcasts), each emitted once per
 * unit.  A boolean vector is an int32 lane mask (-1/0), whatever width its
 * operands had.
 */
#include "codegen_c_internal.h"
#include "codegen_print.h"

#include <math.h>
#include <string.h>

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
  sb_printf(sb, "((%s)%lld)", cgc_scalar_ctype(t), (long long)v);
}

static void print_float(StrBuf *sb, double v, DType t, bool freestanding) {
  const char *suffix = t.bits == 32 ? "f" : "";
  if (freestanding && (isnan(v) || isinf(v))) { /* no math.h: NAN and INFINITY come from the math file */
    sb_printf(sb, "((%s)%skiln_%s())", cgc_scalar_ctype(t), isinf(v) && v < 0 ? "-" : "", isnan(v) ? "nanf" : "inff");
    return;
  }
  if (isnan(v)) {
    sb_printf(sb, "((%s)NAN)", cgc_scalar_ctype(t));
    return;
  }
  if (isinf(v)) {
    sb_printf(sb, "((%s)%sINFINITY)", cgc_scalar_ctype(t), v < 0 ? "-" : "");
    return;
  }
  char buf[64];
  cgp_float_digits(buf, v, t.bits == 32);
  if (t.bits == 16)
    sb_printf(sb, "((_Float16)%s)", buf);
  else
    sb_printf(sb, "%s%s", buf, suffix);
}

static void sub_expr(void *g, Expr *e) { cgc_expr(g, e); }

static ExprPrinter printer(CG *g) { return (ExprPrinter){g->out, sub_expr, g}; }

static void binary(CG *g, const char *op, Expr *a, Expr *b) { cgp_binary(printer(g), op, a, b); }

/* +, -, *, /, %: a scalar 8- or 16-bit result cast back to its type */
static void arith(CG *g, Expr *e) { cgp_arith(printer(g), e, cgc_scalar_ctype(e->dtype), "uint32_t"); }

static void call_helper(CG *g, const char *name, int n, Expr **args) { cgp_call(printer(g), name, n, args); }

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
  sb_printf(g->out, ", %s)", cgc_ctype(g, rt));
}

static void emit_minmax(CG *g, Expr *e, bool is_min) {
  DType t = e->dtype;
  const char *cmp = is_min ? "<" : ">";
  if (t.lanes == 1) {
    const char *tn = cgc_ctype(g, t);
    const char *name = kfmt("kiln_%s_%s", is_min ? "min" : "max", cgc_short_name(t));
    cgc_need(g, name, cgp_minmax_def("static inline", tn, name, is_min));
    Expr *args[2] = {e->bin.a, e->bin.b};
    call_helper(g, name, 2, args);
    return;
  }
  const char *vt = cgc_ctype(g, t), *mt = cgc_mask_of(g, t);
  const char *name = kfmt("kiln_%s_%s", is_min ? "min" : "max", vt + 3);
  /* float32 on 16 lanes: VMINPS/VMAXPS, which return the second operand
   * unless the first compares less (greater): `a < b ? a : b` exactly,
   * NaNs and signed zeros included (GCC keeps the mask form below as a
   * compare and a blend, two instructions for one: a clip is four) */
  bool f16l = dt_is_float(t) && t.bits == 32 && t.lanes == 16;
  if (f16l) cgc_need(g, "kiln_immintrin", "#if defined(__AVX512F__)\n#include <immintrin.h>\n#endif\n");
  cgc_need(g, name,
       kfmt("static inline %s %s(%s a, %s b) {\n%s  %s m = (%s)(a %s b);\n"
            "  return (%s)(((%s)a & m) | ((%s)b & ~m));\n%s}\n",
            vt, name, vt, vt,
            f16l ? kfmt("#if defined(__AVX512F__)\n  return (%s)_mm512_%s_ps((__m512)a, (__m512)b);\n#else\n", vt,
                        is_min ? "min" : "max")
                 : "",
            mt, mt, cmp, vt, mt, mt, f16l ? "#endif\n" : ""));
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
      const char *n = cgc_lane_helper(g, is_mod ? "floormod" : "floordiv", t, 2, at,
                                  is_mod ? kfmt("a[l] - floor%s(a[l] / b[l]) * b[l]", s)
                                         : kfmt("floor%s(a[l] / b[l])", s));
      Expr *args[2] = {a, b};
      call_helper(g, n, 2, args);
      return;
    }
    if (is_mod) {
      const char *name = kfmt("kiln_fmodf_floor%s", s);
      cgc_need(g, name, cgp_float_floormod_def("static inline", cgc_scalar_ctype(t), name, kfmt("floor%s", s)));
      Expr *args[2] = {a, b};
      call_helper(g, name, 2, args);
    } else {
      sb_printf(g->out, "floor%s(", s);
      binary(g, "/", a, b);
      sb_putc(g->out, ')');
    }
    return;
  }
  if (t.lanes == 1 && cgp_floordiv_is_plain(g->an, e)) {
    binary(g, is_mod ? "%" : "/", a, b);
    return;
  }
  if (t.lanes > 1) {
    DType at[2] = {t, t};
    const char *n = cgc_lane_helper(
        g, is_mod ? "floormod" : "floordiv", t, 2, at,
        is_mod ? "((a[l] % b[l]) != 0 && ((a[l] < 0) != (b[l] < 0)) ? a[l] % b[l] + b[l] : a[l] % b[l])"
               : "(a[l] / b[l] - (((a[l] % b[l]) != 0) && ((a[l] < 0) != (b[l] < 0))))");
    Expr *args[2] = {a, b};
    call_helper(g, n, 2, args);
    return;
  }
  const char *tn = cgc_scalar_ctype(t);
  const char *name = kfmt("kiln_%s_%s", is_mod ? "floormod" : "floordiv", cgc_short_name(t));
  cgc_need(g, name, cgp_int_floordiv_def("static inline", tn, name, is_mod));
  Expr *args[2] = {a, b};
  call_helper(g, name, 2, args);
}

static void need_bcast(CG *g, DType vt);

bool cgc_is_contiguous_ramp(Expr *idx) {
  return idx->kind == EK_Ramp && ir_is_int_value(idx->ramp.stride, 1);
}

/* A reinterpreting load (ir.h): each lane the r = bits / elem bits
 * consecutive elements from its index on, little-endian.  A scalar goes
 * through a helper that assembles the value from a pointer (C compilers
 * merge that into one load), a contiguous vector (ramp stride r) is one
 * unaligned vector load, any other index a gather of such values. */
static void emit_reinterpret_load(CG *g, Expr *e, DType et) {
  const char *buf = cgc_vname(g, e->load.buf);
  Expr *idx = e->load.index;
  DType st = dt_scalar(e->dtype);
  int r = st.bits / et.bits;
  const char *sc = cgc_scalar_ctype(st), *ec = cgc_scalar_ctype(et);
  const char *one = kfmt("kiln_ldle_%s_%s", cgc_short_name(st), cgc_short_name(et));
  StrBuf sb = {0};
  sb_printf(&sb, "static inline %s %s(const %s *p) {\n  return ", sc, one, ec);
  for (int j = 0; j < r; j++) sb_printf(&sb, "%s((%s)p[%d] << %d)", j ? " | " : "", sc, j, j * et.bits);
  sb_puts(&sb, ";\n}\n");
  cgc_need(g, one, sb.data);
  sb_free(&sb);
  if (e->dtype.lanes == 1) {
    sb_printf(g->out, "%s(%s + ", one, buf);
    cgc_expr(g, idx);
    sb_putc(g->out, ')');
    return;
  }
  const char *vt = cgc_ctype(g, e->dtype);
  if (idx->kind == EK_Ramp && ir_is_int_value(idx->ramp.stride, r)) {
    sb_printf(g->out, "((%s)*(%su *)(%s + ", vt, vt, buf);
    cgc_expr(g, idx->ramp.base);
    sb_puts(g->out, "))");
    return;
  }
  const char *it = cgc_ctype(g, idx->dtype);
  const char *name = kfmt("kiln_gatherle_%s_%s", vt + 3, it + 3);
  cgc_need(g, name,
           kfmt("static inline %s %s(const %s *p, %s i) {\n  %s r;\n  for (int l = 0; l < %d; l++) r[l] = %s(p + "
                "i[l]);\n  return r;\n}\n",
                vt, name, ec, it, vt, e->dtype.lanes, one));
  sb_printf(g->out, "%s(%s, ", name, buf);
  cgc_expr(g, idx);
  sb_putc(g->out, ')');
}

/* A vector index as one scalar base plus a constant offset per lane:
 * Broadcast, Ramp with a constant stride, and +, - and * by a constant over
 * those; /, %, floor division and floor modulo where both sides are
 * constants (lane l of floordiv(ramp(0, 1, 16), 4) is l / 4).  *base is
 * NULL for a base of 0.  False for any other form or an undefined lane. */
static bool lane_offsets(Expr *e, Expr **base, int64_t *off) {
  int L = e->dtype.lanes;
  int64_t v;
  switch (e->kind) {
  case EK_Broadcast:
  case EK_Ramp: {
    Expr *b = e->kind == EK_Ramp ? e->ramp.base : e->bcast.value;
    int64_t st = 0;
    if (b->dtype.lanes != 1 || (e->kind == EK_Ramp && !ir_is_const_int(e->ramp.stride, &st))) return false;
    bool cb = ir_is_const_int(b, &v);
    *base = cb ? NULL : b;
    for (int l = 0; l < L; l++) off[l] = (cb ? v : 0) + l * st;
    return true;
  }
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod: {
    Expr *ba, *bb;
    int64_t ob[64];
    if (L > 64 || !lane_offsets(e->bin.a, &ba, off) || !lane_offsets(e->bin.b, &bb, ob)) return false;
    if (e->kind == EK_Add || e->kind == EK_Sub) {
      for (int l = 0; l < L; l++) off[l] = e->kind == EK_Add ? off[l] + ob[l] : off[l] - ob[l];
      *base = !bb ? ba : !ba ? (e->kind == EK_Add ? bb : ir_neg(bb)) : ir_binary(e->kind, ba, bb);
      return true;
    }
    if (e->kind == EK_Mul && (!ba || !bb)) { /* constants, or a symbolic side times one constant */
      int64_t *c = ba ? ob : off, *x = ba ? off : ob;
      Expr *sym = ba ? ba : bb;
      for (int l = 1; sym && l < L; l++)
        if (c[l] != c[0]) return false;
      for (int l = 0; l < L; l++) off[l] = x[l] * c[sym ? 0 : l];
      *base = sym ? ir_mul(sym, ir_const((double)c[0], sym->dtype)) : NULL;
      return true;
    }
    if (ba || bb) return false;
    DType st = dt_scalar(e->dtype);
    for (int l = 0; l < L; l++)
      if (ir_scalar_int_div(e->kind, off[l], ob[l], st, &off[l])) return false;
    *base = NULL;
    return true;
  }
  default:
    return false;
  }
}

/* A permuted load: lanes that read constant offsets from one base, all
 * within fewer elements than the vector has lanes (a per-group broadcast
 * such as lane l reading base + (l / 4) 4 + c, a reversal).  On AVX-512 one
 * masked load of the elements read (never past them, so no fault) and a
 * constant lane shuffle, which the C compiler turns into VPERMILPS,
 * VSHUFPS or VPERMPS; elsewhere one lane at a time.  The helper is named
 * by its pattern.  False (nothing printed) where the index has no such
 * form: the caller gathers. */
static bool emit_permuted_load(CG *g, Expr *e, const char *ect) {
  DType t = e->dtype;
  int L = t.lanes;
  int64_t off[64];
  Expr *base;
  if (L > 64 || !lane_offsets(e->load.index, &base, off)) return false;
  int64_t lo = off[0], hi = off[0];
  for (int l = 1; l < L; l++) lo = off[l] < lo ? off[l] : lo, hi = off[l] > hi ? off[l] : hi;
  if (hi - lo >= L) return false;
  const char *vt = cgc_ctype(g, t);
  StrBuf nm = {0}, lanes = {0}, idx = {0};
  sb_printf(&nm, "kiln_permld_%s_", vt + 3);
  uint64_t mask = 0;
  for (int l = 0; l < L; l++) {
    int k = (int)(off[l] - lo);
    sb_printf(&nm, L > 16 ? "%02x" : "%x", k);
    sb_printf(&lanes, "  r[%d] = p[%d];\n", l, k);
    sb_printf(&idx, ", %d", k);
    mask |= 1ull << k;
  }
  /* the AVX-512 masked loads of 32- and 64-bit lanes */
  int bytes = t.bits / 8 * L, bits = t.bits;
  const char *isa = bytes == 64 ? "defined(__AVX512F__)" : "defined(__AVX512F__) && defined(__AVX512VL__)";
  const char *ld = NULL;
  if ((bits == 32 || bits == 64) && !dt_is_bool(t) && (bytes == 16 || bytes == 32 || bytes == 64))
    ld = kfmt("_mm%s_maskz_loadu_%s", bytes == 16 ? "" : kfmt("%d", bytes * 8),
              dt_is_float(t) ? (bits == 32 ? "ps" : "pd") : (bits == 32 ? "epi32" : "epi64"));
  StrBuf body = {0};
  sb_printf(&body, "static inline %s %s(const %s *p) {\n", vt, nm.data, ect);
  if (ld) {
    cgc_need(g, "kiln_immintrin", "#if defined(__AVX512F__)\n#include <immintrin.h>\n#endif\n");
    sb_printf(&body,
              "#if %s && (defined(__clang__) || __GNUC__ >= 12)\n  %s v = (%s)%s((uint%d_t)0x%llxu, p);\n"
              "  return __builtin_shufflevector(v, v%s);\n#else\n",
              isa, vt, vt, ld, L < 8 ? 8 : L, (unsigned long long)mask, idx.data);
  }
  sb_printf(&body, "  %s r;\n%s  return r;\n", vt, lanes.data);
  if (ld) sb_puts(&body, "#endif\n");
  sb_puts(&body, "}\n");
  cgc_need(g, nm.data, body.data);
  sb_printf(g->out, "%s(%s + ", nm.data, cgc_vname(g, e->load.buf));
  Expr *at = base && lo ? ir_simplify(ir_add(base, ir_const((double)lo, base->dtype))) : base ? base : ir_i32(lo);
  cgc_expr(g, at);
  sb_putc(g->out, ')');
  sb_free(&nm), sb_free(&lanes), sb_free(&idx), sb_free(&body);
  return true;
}

static void emit_load(CG *g, Expr *e) {
  const char *buf = cgc_vname(g, e->load.buf);
  Expr *idx = e->load.index;
  DType *et = pm_get(&g->buftype, e->load.buf);
  if (et && !dt_is_bool(*et) && dt_is_intlike(*et) && dt_is_intlike(e->dtype) && et->bits < e->dtype.bits) {
    emit_reinterpret_load(g, e, *et);
    return;
  }
  if (e->dtype.lanes == 1) {
    sb_printf(g->out, "%s[", buf);
    cgc_expr(g, idx);
    sb_putc(g->out, ']');
    return;
  }
  bool boolbuf = et && dt_is_bool(*et);
  if (cgc_is_contiguous_ramp(idx) && !boolbuf) {
    /* read through the unaligned twin type, then view as the plain one */
    const char *vt = cgc_ctype(g, e->dtype);
    sb_printf(g->out, "((%s)*(%su *)(%s + ", vt, vt, buf);
    cgc_expr(g, idx->ramp.base);
    sb_puts(g->out, "))");
    return;
  }
  if (idx->kind == EK_Broadcast) {
    need_bcast(g, e->dtype);
    sb_printf(g->out, "kiln_bcast_%s(", cgc_ctype(g, e->dtype) + 3);
    sb_printf(g->out, "%s[", buf);
    cgc_expr(g, idx->bcast.value);
    sb_puts(g->out, "])");
    return;
  }
  const char *ect = et ? cgc_scalar_ctype(*et) : cgc_scalar_ctype(dt_scalar(e->dtype));
  /* the permuted form reads the buffer's elements as the lanes, so only
   * where the two types agree (the lane copy and the gather convert) */
  if (!boolbuf && (!et || dt_eq(*et, dt_scalar(e->dtype))) && emit_permuted_load(g, e, ect)) return;
  /* a gather, one lane at a time */
  const char *vt = cgc_ctype(g, e->dtype), *it = cgc_ctype(g, idx->dtype);
  const char *name = kfmt("kiln_gather_%s_%s", vt + 3, it + 3);
  cgc_need(g, name,
       kfmt("static inline %s %s(const %s *p, %s i) {\n  %s r;\n  for (int l = 0; l < %d; l++) r[l] = "
            "%sp[i[l]];\n  return r;\n}\n",
            vt, name, ect, it, vt, e->dtype.lanes, boolbuf ? "-(int32_t)" : ""));
  sb_printf(g->out, "%s(%s, ", name, buf);
  cgc_expr(g, idx);
  sb_putc(g->out, ')');
}

/* bf16_pack2 of the even and the odd elements of 2 x lanes consecutive
 * float32: a stride-2 load at B and one at B + 1 of the same float32
 * buffer (conv2d_NCHWc_bf16's input stage pairs neighbouring channels of
 * a block).  One contiguous vector load, kiln_bf16_round's rounding on
 * the vector, then each rounded value narrowed to its 16 bits: their
 * little-endian pairs are the words (low half the even element), the bits
 * of kiln_bf16_pack2 lane by lane without two gathers.  False (nothing
 * emitted) for any other operands. */
static bool emit_bf16_pack_pairs(CG *g, Expr *e) {
  Expr *a = e->call.args[0], *b = e->call.args[1];
  if (a->kind != EK_Load || b->kind != EK_Load || !ir_expr_equal(a->load.buf, b->load.buf)) return false;
  Expr *ia = a->load.index, *ib = b->load.index;
  if (ia->kind != EK_Ramp || ib->kind != EK_Ramp || !ir_is_int_value(ia->ramp.stride, 2) ||
      !ir_is_int_value(ib->ramp.stride, 2))
    return false;
  if (!ir_is_int_value(ir_simplify(ir_sub(ib->ramp.base, ia->ramp.base)), 1)) return false;
  DType *et = pm_get(&g->buftype, a->load.buf);
  if ((et && !dt_eq(*et, DT_F32)) || !dt_eq(dt_scalar(a->dtype), DT_F32)) return false;
  int lanes = e->dtype.lanes;
  const char *wt = cgc_ctype(g, e->dtype), *ut = cgc_ctype(g, dt_make(kDLUInt, 32, 2 * lanes)),
             *ht = cgc_ctype(g, dt_make(kDLUInt, 16, 2 * lanes));
  const char *name = kfmt("kiln_bf16_pack_pairs_%s", wt + 3);
  cgc_need(g, name,
           kfmt("static inline %s %s(const float *p) {\n"
                "  %s u = *(const %su *)p;\n"
                "  %s nan = (%s)((u & 0x7fffffffu) > 0x7f800000u);\n"
                "  %s r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n"
                "  r = (nan & ((u >> 16) | 0x40u)) | (~nan & r);\n"
                "  union { %s h; %s w; } c = {__builtin_convertvector(r, %s)};\n"
                "  return c.w;\n"
                "}\n",
                wt, name, ut, ut, ut, ut, ut, ht, wt, ht));
  sb_printf(g->out, "%s(%s + ", name, cgc_vname(g, a->load.buf));
  cgc_expr(g, ia->ramp.base);
  sb_putc(g->out, ')');
  return true;
}

static void need_bcast(CG *g, DType vt) {
  const char *v = cgc_ctype(g, vt);
  const char *name = kfmt("kiln_bcast_%s", v + 3);
  StrBuf sb = {0};
  sb_printf(&sb, "static inline %s %s(%s x) { return (%s){", v, name,
            dt_is_bool(dt_scalar(vt)) ? "int32_t" : cgc_scalar_ctype(dt_scalar(vt)), v);
  for (int l = 0; l < vt.lanes; l++) sb_printf(&sb, "%sx", l ? ", " : "");
  sb_puts(&sb, "}; }\n");
  cgc_need(g, name, sb.data);
  sb_free(&sb);
}

/* A vector cast between int32 and an 8- or 16-bit integer type (either
 * way): on 16 lanes an AVX-512 conversion intrinsic behind a helper (the
 * truncation VPMOVDB/VPMOVDW; zero or sign extension VPMOVZX/VPMOVSX), a
 * convertvector elsewhere. */
static void emit_narrow_cvt(CG *g, Expr *a, DType t) {
  DType at = a->dtype;
  bool narrowing = at.bits == 32;
  DType n = narrowing ? t : at; /* the narrow side */
  if (t.lanes != 16 || !(n.bits == 8 || n.bits == 16)) {
    sb_puts(g->out, "__builtin_convertvector(");
    cgc_expr(g, a);
    sb_printf(g->out, ", %s)", cgc_ctype(g, t));
    return;
  }
  const char *vt = cgc_ctype(g, t), *va = cgc_ctype(g, at);
  const char *name = kfmt("kiln_cvt_%s_%s", va + 3, vt + 3);
  const char *intr = narrowing ? kfmt("_mm512_cvtepi32_epi%d((__m512i)a)", n.bits)
                               : kfmt("_mm512_cvtep%s%d_epi32((__m%di)a)", dt_is_int(n) ? "i" : "u", n.bits,
                                      n.bits * 16);
  cgc_need(g, "kiln_immintrin", "#if defined(__AVX512F__)\n#include <immintrin.h>\n#endif\n");
  cgc_need(g, name,
           kfmt("static inline %s %s(%s a) {\n#if defined(__AVX512F__)\n  return (%s)%s;\n#else\n"
                "  return __builtin_convertvector(a, %s);\n#endif\n}\n",
                vt, name, va, vt, intr, vt));
  sb_printf(g->out, "%s(", name);
  cgc_expr(g, a);
  sb_putc(g->out, ')');
}

void cgc_expr(CG *g, Expr *e) {
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
    sb_puts(o, cgc_vname(g, e));
    return;
  case EK_Add:
    if (vec && cgc_emit_dot_acc(g, e)) return;
    arith(g, e);
    return;
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
    arith(g, e);
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
    const char *op = cgp_binary_op(e->kind);
    if (vec)
      vcompare(g, op, e->bin.a, e->bin.b, t);
    else
      binary(g, op, e->bin.a, e->bin.b);
    return;
  }
  case EK_And:
  case EK_Or:
    binary(g, !vec ? cgp_binary_op(e->kind) : e->kind == EK_And ? "&" : "|", e->bin.a, e->bin.b);
    return;
  case EK_Not:
    sb_puts(o, vec ? "(~" : "(!");
    cgc_expr(g, e->bin.a);
    sb_putc(o, ')');
    return;
  case EK_Select: {
    Expr *c = e->select.cond;
    if (c->dtype.lanes == 1) {
      /* vector branches are cast to one type: a contiguous load has the
       * unaligned twin type, which ?: would not match with the other */
      const char *cast = t.lanes > 1 ? kfmt("(%s)", cgc_ctype(g, t)) : "";
      sb_putc(o, '(');
      cgc_expr(g, c);
      sb_printf(o, " ? %s(", cast);
      cgc_expr(g, e->select.t);
      sb_printf(o, ") : %s(", cast);
      cgc_expr(g, e->select.f);
      sb_puts(o, "))");
      return;
    }
    const char *vt = cgc_ctype(g, t), *mt = cgc_mask_of(g, t);
    const char *name = kfmt("kiln_select_%s", vt + 3);
    const char *cm = cgc_ctype(g, c->dtype);
    cgc_need(g, name,
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
        cgc_expr(g, a);
        sb_puts(o, ") != 0)");
      } else {
        Expr *z = ir_bcast(ir_const(0, dt_scalar(a->dtype)), a->dtype.lanes);
        vcompare(g, "!=", a, z, t);
      }
      return;
    }
    if (!vec) {
      sb_printf(o, "((%s)(", cgc_ctype(g, t));
      cgc_expr(g, a);
      sb_puts(o, "))");
      return;
    }
    /* between floats and 8- or 16-bit integers through int32 lanes: GCC
     * converts such vectors lane by lane in scalar code (a uint8 <-> float32
     * requantize epilogue was ~4 scalar instructions per lane), the two
     * steps are one instruction each (vcvttps2dq + vpmovdb, vpmovzxbd +
     * vcvtdq2ps).  Equal wherever the C conversion is defined.  On 16
     * lanes the int32 <-> narrow step is an AVX-512 intrinsic
     * (emit_narrow_cvt): GCC folds a narrowing convertvector followed by a
     * widening one (a requantize, then the next layer's dequantize in the
     * same kernel) back into a lane loop. */
    if (cgc_emit_requant(g, e)) return;
    DType at = a->dtype;
    if ((dt_is_float(t) && dt_is_intlike(at) && !dt_is_bool(at) && at.bits < 32) ||
        (dt_is_float(at) && dt_is_intlike(t) && t.bits < 32)) {
      DType i32 = dt_with_lanes(DT_I32, t.lanes);
      if (dt_is_float(t)) { /* narrow int -> int32 -> float */
        sb_puts(o, "__builtin_convertvector(");
        emit_narrow_cvt(g, a, i32);
        sb_printf(o, ", %s)", cgc_ctype(g, t));
      } else { /* float -> int32 -> narrow int */
        Expr *ia = ir_cast(i32, a);
        emit_narrow_cvt(g, ia, t);
      }
      return;
    }
    sb_puts(o, "__builtin_convertvector(");
    if (dt_is_bool(a->dtype)) { /* masks are -1/0: take the low bit */
      sb_putc(o, '(');
      cgc_expr(g, a);
      sb_puts(o, " & 1)");
    } else
      cgc_expr(g, a);
    sb_printf(o, ", %s)", cgc_ctype(g, t));
    return;
  }
  case EK_Call: {
    Intrinsic op = e->call.op;
    if (g->dialect && g->dialect->freestanding && !cgc_freestanding_has(op, dt_scalar(e->call.args[0]->dtype))) {
      cgc_fail(g, "--freestanding: this model needs %s, which Kiln's own math files do not provide (they have float32 "
              "exp, log, sqrt, tanh, erf, sigmoid, pow and rounding); export without --freestanding",
           kfmt("%s on %s", intrin_name(op), dt_str(e->call.args[0]->dtype)));
      sb_puts(o, "0");
      return;
    }
    if (cgc_intrin_uses_vmath(op, dt_scalar(e->call.args[0]->dtype))) {
      cgc_need(g, "kiln_vmath", codegen_vmath_source);
      g->vmath_calls++;
    }
    if (op == INTRIN_bf16_pack2 || op == INTRIN_bf16_dot2 || op == INTRIN_bf16_half) {
      cgc_need(g, "kiln_bf16", cgc_bf16_source);
      g->bf16_calls++;
    }
    if (op == INTRIN_u8s8_dot4) cgc_need(g, "kiln_int8", cgc_int8_source);
    if (!vec) {
      StrBuf *saved = g->out;
      StrBuf a = {0}, b = {0};
      g->out = &a;
      cgc_expr(g, e->call.args[0]);
      if (e->call.nargs > 1) {
        g->out = &b;
        cgc_expr(g, e->call.args[1]);
      }
      g->out = saved;
      DType at = e->call.args[0]->dtype;
      const char *r = cgc_intrin_scalar(g, op, at, a.data, b.data ? b.data : "");
      if (cgp_intrin_wraps(op, t)) r = kfmt("((%s)%s)", cgc_scalar_ctype(t), r); /* computed in int */
      sb_puts(o, r);
      sb_free(&a);
      sb_free(&b);
      return;
    }
    if (op == INTRIN_likely) {
      cgc_expr(g, e->call.args[0]);
      return;
    }
    if (op == INTRIN_bf16_pack2 && emit_bf16_pack_pairs(g, e)) return;
    if (op == INTRIN_bf16_half) { /* bit operations on the vector: a shift (and a mask), then a bit cast */
      const char *ut = cgc_ctype(g, e->call.args[0]->dtype);
      sb_printf(o, "((%s)((((%s)", cgc_ctype(g, t), ut);
      cgc_expr(g, e->call.args[0]);
      sb_printf(o, ") >> ((((%s)", ut);
      cgc_expr(g, e->call.args[1]);
      sb_puts(o, ") & 1u) * 16u)) << 16u))");
      return;
    }
    DType at[2] = {e->call.args[0]->dtype, e->call.nargs > 1 ? e->call.args[1]->dtype : t};
    DType st = dt_scalar(at[0]);
    const char *le = cgc_intrin_scalar(g, op, st, "a[l]", "b[l]");
    if ((op == INTRIN_isnan || op == INTRIN_isinf)) le = kfmt("-(int32_t)%s", le);
    const char *n = cgc_lane_helper(g, intrin_name(op), t, e->call.nargs, at, le);
    call_helper(g, n, e->call.nargs, e->call.args);
    return;
  }
  case EK_Load:
    emit_load(g, e);
    return;
  case EK_Ramp: {
    const char *vt = cgc_ctype(g, t);
    const char *name = kfmt("kiln_ramp_%s", vt + 3);
    const char *st = cgc_scalar_ctype(dt_scalar(t));
    StrBuf sb = {0};
    sb_printf(&sb, "static inline %s %s(%s b, %s s) { return (%s){", vt, name, st, st, vt);
    for (int l = 0; l < t.lanes; l++) sb_printf(&sb, "%sb + %d * s", l ? ", " : "", l);
    sb_puts(&sb, "}; }\n");
    cgc_need(g, name, sb.data);
    sb_free(&sb);
    Expr *args[2] = {e->ramp.base, e->ramp.stride};
    call_helper(g, name, 2, args);
    return;
  }
  case EK_Broadcast: {
    need_bcast(g, t);
    sb_printf(o, "kiln_bcast_%s(", cgc_ctype(g, t) + 3);
    cgc_expr(g, e->bcast.value);
    sb_putc(o, ')');
    return;
  }
  case EK_Let: {
    if (g->dialect) { /* plain kernels: no statement expressions (not C99); substitute */
      cgc_expr(g, ir_substitute1(e->let.body, e->let.var, e->let.value));
      return;
    }
    sb_printf(o, "({ %s %s = ", cgc_ctype(g, e->let.var->dtype), cgc_vname(g, e->let.var));
    cgc_expr(g, e->let.value);
    sb_puts(o, "; ");
    cgc_expr(g, e->let.body);
    sb_puts(o, "; })");
    return;
  }
  case EK_Read:
  case EK_Reduce:
    cgc_fail(g, "codegen: %s node reached code generation (lowering is incomplete)", expr_kind_name(e->kind));
    sb_puts(o, "0");
    return;
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}
