/*
 * combine_loads.c - byte loads that assemble a wider word become one load,
 * byte stores that write one become one store.
 *
 * A stage that packs bytes into words (the int8 convolution's input
 * quadruples, topi/x86/conv2d_int8.c) reads
 *
 *     (uint32)B[i] | (uint32)B[i + 1] << 8 | (uint32)B[i + 2] << 16 | (uint32)B[i + 3] << 24
 *
 * from a uint8 buffer B: the four bytes at i, little-endian, which is what
 * a 32-bit load at byte i reads.  The C compiler does not merge the four
 * loads when the indices are 32-bit expressions (each is sign-extended on
 * its own), so the word is assembled byte by byte.  This pass rewrites the
 * pattern into one reinterpreting load (ir.h): Load(uint32, B, i), a load
 * whose type is wider than its buffer's elements, reading the consecutive
 * elements from i on as one little-endian value.  Vectorized, each lane's
 * bytes are at ramp(i + j, s, L) for byte j: the result is
 * Load(uint32xL, B, ramp(i, s, L)), one contiguous vector load where s is
 * the word's width in bytes (the C generator reads it as such; another s
 * is a gather of words).
 *
 * The match: an or-tree of exactly bits/8 terms (uint16, uint32 or uint64,
 * scalar or vector), term j a zero-extending cast of a load from a uint8
 * buffer shifted left by 8 j (byte 0 unshifted), all from the same buffer,
 * term j's index that of byte 0 plus j.  Anything else is left as it is.
 * The buffer's element type comes from the function's arguments and the
 * Allocates around the load, never from the load alone.  The pass runs on
 * CPU functions only (the GPU printers read loads of the buffer's type).
 *
 * Stores the same way: a stage that writes bytes of words (the model
 * input's quantize into NCHW4c, its four channels unrolled inside a
 * vector of 16 pixels) stores byte j of 16 words with a stride of 4 bytes,
 * a scatter the C code writes lane by lane (16 VPEXTRB and byte stores).
 * k = 2, 4 or 8 consecutive statements Store(B, v_j, ramp(i + j, k, L)) for
 * j = 0 .. k-1, v_j uint8xL reading nothing of B, become one
 * reinterpreting store (ir.h) of the words v_0 | v_1 << 8 | ...: one
 * contiguous vector write.  A v_j that narrows a float32 or 32-bit value
 * enters its word as that value's low byte (what the vector C's
 * conversion through int32 keeps), not through a byte vector (GCC widens
 * a narrowed vector lane by lane).  The input quantize of ResNet-18 int8
 * (224 x 224 x 3 into [1, 1, 224, 224, 4]), one thread, per-kernel minima
 * of 10 alternating in-model profiles (load 2.3): 37.3 -> 18.1 us.
 */
#include "lower.h"

typedef struct Combine {
  PtrMap u8; /* handle Var -> (void *)1: buffers of uint8 elements */
} Combine;

/* The terms of an or-tree of type t (stops at any other node). */
static void or_terms(Expr *e, DType t, Expr **terms, int *n, int cap) {
  if (e->kind == EK_Call && e->call.op == INTRIN_bitwise_or && dt_eq(e->dtype, t)) {
    or_terms(e->call.args[0], t, terms, n, cap);
    or_terms(e->call.args[1], t, terms, n, cap);
    return;
  }
  if (*n < cap) terms[*n] = e;
  ++*n;
}

static bool const_value(Expr *e, int64_t *v) {
  if (e->kind == EK_Broadcast) e = e->bcast.value;
  if (e->kind == EK_Cast) e = e->bin.a;
  return ir_is_const_int(e, v);
}

/* term = [shift_left(] cast(t, load uint8) [, 8 j)]: the load and j */
static Expr *byte_term(Combine *c, Expr *e, DType t, int64_t *byte) {
  *byte = 0;
  if (e->kind == EK_Call && e->call.op == INTRIN_shift_left) {
    int64_t s;
    if (!const_value(e->call.args[1], &s) || s <= 0 || s % 8) return NULL;
    *byte = s / 8;
    e = e->call.args[0];
  }
  if (e->kind != EK_Cast || !dt_eq(e->dtype, t)) return NULL;
  Expr *l = e->bin.a;
  if (l->kind != EK_Load || !dt_eq(l->dtype, dt_with_lanes(DT_U8, t.lanes)) || !pm_get(&c->u8, l->load.buf)) return NULL;
  return l;
}

/* index b is index a plus k, lane by lane */
static bool offset_by(Expr *a, Expr *b, int64_t k) {
  if (a->dtype.lanes != b->dtype.lanes) return false;
  if (a->kind == EK_Ramp) {
    if (b->kind != EK_Ramp || !ir_expr_equal(a->ramp.stride, b->ramp.stride)) return false;
    a = a->ramp.base, b = b->ramp.base;
  } else if (a->dtype.lanes > 1) {
    return false;
  }
  return ir_is_int_value(ir_simplify(ir_sub(b, a)), k);
}

static Expr *combine(Combine *c, Expr *e) {
  DType t = e->dtype, st = dt_scalar(t);
  if (!(dt_is_uint(st) && (st.bits == 16 || st.bits == 32 || st.bits == 64))) return e;
  enum { MAXB = 8 };
  Expr *terms[MAXB], *loads[MAXB] = {0};
  int n = 0, nb = st.bits / 8;
  or_terms(e, t, terms, &n, MAXB);
  if (n != nb) return e;
  for (int i = 0; i < n; i++) {
    int64_t j;
    Expr *l = byte_term(c, terms[i], t, &j);
    if (!l || j >= nb || loads[j]) return e;
    loads[j] = l;
  }
  for (int j = 1; j < nb; j++)
    if (loads[j]->load.buf != loads[0]->load.buf || !offset_by(loads[0]->load.index, loads[j]->load.index, j)) return e;
  return ir_load(t, loads[0]->load.buf, loads[0]->load.index);
}

static Expr *combine_expr(IRMutator *m, Expr *e) {
  Expr *r = ir_mutate_expr_children(m, e);
  if (r && r->kind == EK_Call && r->call.op == INTRIN_bitwise_or) return combine(m->ud, r);
  return r;
}

/* ---- stores: a word's bytes written by k vector stores ---- */

/* s[0 .. k-1] store byte j of the words of a uint8 buffer: Store(B,
 * v_j uint8xL, ramp(i + j, k, L)), the values reading nothing of B (B's
 * variable appears in none: a Load names its buffer) */
static bool word_stores(Combine *c, Stmt **s, int k) {
  Expr *b = s[0]->store.buf;
  for (int j = 0; j < k; j++) {
    if (s[j]->kind != SK_Store || s[j]->store.buf != b || !pm_get(&c->u8, b)) return false;
    Expr *v = s[j]->store.value, *idx = s[j]->store.index;
    if (!dt_eq(dt_scalar(v->dtype), DT_U8) || v->dtype.lanes < 2 || idx->kind != EK_Ramp ||
        !ir_is_int_value(idx->ramp.stride, k) || !offset_by(s[0]->store.index, idx, j) || ir_expr_uses_var(v, b))
      return false;
  }
  return true;
}

/* byte v (uint8xL) in the low bits of a word of type t: a narrowing cast
 * from float32 or a 32-bit integer (the vector C converts float32 through
 * int32, then keeps the low byte) is taken from its 32-bit value masked to
 * the byte, without the round trip through bytes (GCC converts a narrowing
 * vector cast followed by a widening one lane by lane) */
static Expr *byte_in_word(Expr *v, DType t) {
  int lanes = t.lanes;
  if (v->kind == EK_Cast && v->bin.a->dtype.bits == 32 && t.bits == 32) {
    Expr *a = v->bin.a;
    if (dt_is_float(a->dtype)) a = ir_cast(dt_with_lanes(DT_I32, lanes), a);
    if (dt_is_intlike(a->dtype) && !dt_is_bool(a->dtype))
      return ir_call2(INTRIN_bitwise_and, ir_cast(t, a), ir_bcast(ir_const(0xff, dt_scalar(t)), lanes));
  }
  return ir_cast(t, v);
}

/* the k stores as one reinterpreting store of the words (ir.h) */
static Stmt *word_store(Stmt **s, int k) {
  int lanes = s[0]->store.value->dtype.lanes;
  DType t = dt_with_lanes((DType){kDLUInt, (uint8_t)(8 * k), 1}, lanes);
  Expr *w = NULL;
  for (int j = 0; j < k; j++) {
    Expr *b = byte_in_word(s[j]->store.value, t);
    if (j) b = ir_call2(INTRIN_shift_left, b, ir_bcast(ir_const(8 * j, dt_scalar(t)), lanes));
    w = w ? ir_call2(INTRIN_bitwise_or, w, b) : b;
  }
  return ir_store(s[0]->store.buf, w, s[0]->store.index);
}

static Stmt *combine_seq(Combine *c, Stmt *s) {
  AVec out = {0};
  bool changed = false;
  for (int i = 0; i < s->seq.n;) {
    int k = 0;
    for (int w = 8; w >= 2 && !k; w /= 2)
      if (i + w <= s->seq.n && word_stores(c, s->seq.s + i, w)) k = w;
    av_push(&out, k ? word_store(s->seq.s + i, k) : s->seq.s[i]);
    changed |= k > 0;
    i += k ? k : 1;
  }
  return changed ? ir_seq(out.len, (Stmt **)out.data) : s;
}

static Stmt *combine_stmt(IRMutator *m, Stmt *s) {
  Combine *c = m->ud;
  if (s->kind == SK_Allocate && dt_eq(s->alloc.dtype, DT_U8)) pm_put(&c->u8, s->alloc.buf, (void *)1);
  Stmt *r = ir_mutate_stmt_children(m, s);
  return r->kind == SK_Seq ? combine_seq(c, r) : r;
}

Stmt *lower_combine_loads(Stmt *body, const LoweredFunc *f) {
  Combine c = {0};
  for (int i = 0; i < f->nargs; i++)
    if (dt_eq(f->args[i]->dtype, DT_U8)) pm_put(&c.u8, f->arg_bufs[i], (void *)1);
  IRMutator m = {combine_expr, combine_stmt, &c};
  Stmt *r = ir_mutate_stmt(&m, body);
  pm_free(&c.u8);
  return r;
}
