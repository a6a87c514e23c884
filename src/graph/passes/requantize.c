/*
 * requantize.c - the requantize epilogues of the int8 layers, once
 * fake_quantization_to_integer has them reading uint8 (docs/int8.md,
 * "The requantize epilogue").
 *
 * An int8 layer's value (nn.contrib_conv2d_int8, nn.contrib_dense_vnni:
 * (acc - comp) * scale) goes through the model's own float32 ops: the bias
 * add, QuantizeLinear's divide/round/add/clip/cast, and before a residual
 * add a DequantizeLinear straight after.  All of it fuses into the layer's
 * kernel and runs once per output, so it costs as much as the
 * multiply-adds of a layer with few input channels.  The rules:
 *
 *  1. round(divide(x, s)) -> round(multiply(x, 1 / s)) for a constant
 *     scale s > 0, as ONNX Runtime's own requantization multiplies.  Not
 *     bit for bit the division (the product is within an ulp of the
 *     quotient), so an output moves by one quantization step where the
 *     quotient lies that close to a rounding boundary.  (Folding 1 / s
 *     into the layer's scale and bias as well, one multiply less, moved
 *     ResNet-50's output from 2.13e-2 to 2.24e-2 off float32, past ONNX
 *     Runtime's 2.15e-2, and measured no faster: not done.)
 *  2. cast(cast(clip(y, lo, hi), T), float32) -> clip(y, lo, hi) for y
 *     integral (round(x), or that plus an integer constant), T an 8-bit
 *     integer type holding lo..hi, when only that dequantization reads the
 *     8-bit tensor: clip's value is an integer of T's range (a NaN clips
 *     to lo), so the casts change nothing.
 *  3. with rule 2, subtract(clip(add(round(x), z), lo, hi), z) ->
 *     clip(round(x), lo - z, hi - z) (the zero point added and taken
 *     away; exact: every value clip returns is a small integer); and
 *     clip(add(round(x), 0), lo, hi) -> clip(round(x), lo, hi) (the same
 *     values, up to the sign of a zero).
 *  4. cast(clip(round(multiply(multiply(subtract(cast(X), z), s), 1 / s))
 *     + z, lo, hi), T) -> X: a QuantizeLinear straight after a
 *     DequantizeLinear of the same type T, scale and zero point (ResNet's
 *     stem max pool, which the int8 rewrite moves onto the uint8 tensor)
 *     where lo..hi covers T; kept only if every value of T comes back
 *     unchanged in float32 arithmetic (checked for all 256).
 *  5. subtract(x, +0) -> x for float32 x: a DequantizeLinear whose zero
 *     point is 0 (a ReLU's output, read again as a residual) keeps its
 *     `cast(q) - 0` in the kernel that adds it.  Exact: x - (+0) is x for
 *     every float, -0 and NaN included.
 *
 * Each node decides from the old graph's uses, so rules 1-3 leave no dead
 * nodes behind; rule 4 leaves the chain it bypasses, which a copy of the
 * graph drops.
 */
#include <math.h>
#include <stdlib.h>

#include "passes.h"

typedef struct Uses {
  int *n;              /* uses of each node (by id) */
  const GNode **user;  /* a node's user, when it has one */
} Uses;

static bool is_call(const GNode *n, OpId id) { return n && n->kind == GN_CALL && n->op->id == id; }

/* the single user of n, or NULL */
static const GNode *only_user(const Uses *u, const GNode *n) { return u->n[n->id] == 1 ? u->user[n->id] : NULL; }

/* 1 / s of a QuantizeLinear's divide by a constant s > 0 whose only user is
 * a round, or 0 */
static float quantize_reciprocal(const Uses *u, const GNode *d) {
  float s;
  if (!is_call(d, OP_DIVIDE) || !is_call(only_user(u, d), OP_ROUND) || !graph_scalar_f32(d->args[1], &s) || !(s > 0) ||
      !isnormal(1.0f / s) || !dt_eq(d->args[0]->type.dtype, DT_F32))
    return 0;
  return 1.0f / s;
}

/* A float32 value that holds an integer: round(x), or round(x) plus an
 * integer constant; *z the constant (0 without one), *r the round. */
static bool integral_f32(const GNode *y, float *z, int *ri) {
  *z = 0, *ri = -1;
  if (!dt_eq(y->type.dtype, DT_F32)) return false;
  if (is_call(y, OP_ROUND)) return true;
  if (!is_call(y, OP_ADD)) return false;
  for (int i = 0; i < 2; i++)
    if (is_call(y->args[i], OP_ROUND) && graph_scalar_f32(y->args[1 - i], z) && *z == nearbyintf(*z)) {
      *ri = i;
      return true;
    }
  return false;
}

/* Rule 2: the 8-bit cast of this clip and its float32 cast back go.  The
 * clip's only user is the cast to T, whose only user is the cast back. */
static bool round_trip(const Uses *u, const GNode *clip) {
  float z;
  int ri;
  if (!is_call(clip, OP_CLIP) || !integral_f32(clip->args[0], &z, &ri)) return false;
  const GNode *c8 = only_user(u, clip), *f = c8 ? only_user(u, c8) : NULL;
  if (!is_call(c8, OP_CAST) || !is_call(f, OP_CAST) || !dt_eq(f->type.dtype, DT_F32)) return false;
  DType t = c8->type.dtype;
  double lo = gattr_float(&clip->attrs, "a_min", NAN), hi = gattr_float(&clip->attrs, "a_max", NAN);
  return t.bits == 8 && t.lanes == 1 && (t.code == kDLUInt || t.code == kDLInt) && lo == floor(lo) &&
         hi == floor(hi) && lo >= (double)dt_int_min(t) && hi <= (double)dt_int_max(t) && lo <= hi;
}

/* Rule 3: the round-trip clip of add(round, z) whose float32 value only
 * subtract(., z) reads (and nothing else reads the add): z, else NAN. */
static float zero_fold(const Uses *u, const GNode *clip) {
  float z, zs;
  int ri;
  if (!round_trip(u, clip) || !integral_f32(clip->args[0], &z, &ri) || ri < 0 || u->n[clip->args[0]->id] != 1)
    return NAN;
  const GNode *s = only_user(u, only_user(u, only_user(u, clip)));
  if (!is_call(s, OP_SUBTRACT) || !graph_scalar_f32(s->args[1], &zs) || zs != z) return NAN;
  return z;
}

/* Rule 4: a QuantizeLinear of a DequantizeLinear with the same type,
 * scale and zero point (ResNet's stem max pool between its two int8
 * layers) is X itself: n (the new cast's argument) is
 * clip(round(multiply(multiply(subtract(cast<float32>(X), z), s), 1 / s)) + z, lo, hi)
 * (or the divide by s where rule 1 did not apply; z 0 without the subtract
 * and the add) with X of the cast's type t and lo..hi covering t.  Checked
 * for every value of t in float32 arithmetic, as the kernel would compute
 * it (two roundings of the products), so the rule is exact: X, else NULL. */
static GNode *requantized_identity(GNode *n, DType t) {
  if (!is_call(n, OP_CLIP) || t.bits != 8 || t.lanes != 1 || (t.code != kDLUInt && t.code != kDLInt)) return NULL;
  double lo = gattr_float(&n->attrs, "a_min", NAN), hi = gattr_float(&n->attrs, "a_max", NAN);
  float zq, zd = 0, s, q;
  int ri;
  if (!(lo <= (double)dt_int_min(t) && hi >= (double)dt_int_max(t)) || !integral_f32(n->args[0], &zq, &ri)) return NULL;
  GNode *r = ri < 0 ? n->args[0] : n->args[0]->args[ri], *m = r->args[0];
  bool div = is_call(m, OP_DIVIDE);
  if (!(div || is_call(m, OP_MULTIPLY)) || !graph_scalar_f32(m->args[1], &q)) return NULL;
  GNode *d = m->args[0];
  int si = is_call(d, OP_MULTIPLY) && graph_scalar_f32(d->args[1], &s) ? 1 : 0;
  if (!is_call(d, OP_MULTIPLY) || (!si && !graph_scalar_f32(d->args[0], &s))) return NULL;
  GNode *c = d->args[1 - si];
  if (is_call(c, OP_SUBTRACT)) {
    if (!graph_scalar_f32(c->args[1], &zd)) return NULL;
    c = c->args[0];
  }
  if (!is_call(c, OP_CAST) || !dt_eq(c->type.dtype, DT_F32) || !dt_eq(c->args[0]->type.dtype, t) || zd != zq)
    return NULL;
  for (int64_t x = dt_int_min(t); x <= dt_int_max(t); x++) {
    float k = (float)x - zd, v = k * s;
    v = div ? v / q : v * q;
    if (nearbyintf(v) + zq != (float)x) return NULL;
  }
  return c->args[0];
}

static GNode *scaled(Graph *ng, GNode *x, float r) {
  GNode *c = graph_scalar(ng, (double)r, DT_F32);
  return c ? graph_call(ng, "multiply", 2, (GNode *[]){x, c}, gattrs_new(), NULL) : NULL;
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  const Uses *u = ud;
  float r;
  if (is_call(old, OP_DIVIDE) && (r = quantize_reciprocal(u, old))) return scaled(ng, args[0], r);
  if (is_call(old, OP_ADD) && is_call(only_user(u, old), OP_CLIP)) {
    int ri;
    float z;
    /* the round: the zero point moves into the clip's bounds, or is 0 */
    if (integral_f32(old, &z, &ri) && ri >= 0 && (z == 0 || !isnan(zero_fold(u, only_user(u, old))))) return args[ri];
  }
  if (is_call(old, OP_CLIP) && !isnan(r = zero_fold(u, old))) {
    GAttrs a = gattrs_new();
    ga_float(&a, "a_min", gattr_float(&old->attrs, "a_min", NAN) - r);
    ga_float(&a, "a_max", gattr_float(&old->attrs, "a_max", NAN) - r);
    return graph_call(ng, "clip", 1, args, a, old->name);
  }
  if (is_call(old, OP_CAST) && is_call(old->args[0], OP_CLIP) && !round_trip(u, old->args[0])) {
    GNode *x = requantized_identity(args[0], old->type.dtype);
    if (x) return x;
  }
  if (is_call(old, OP_CAST) && is_call(old->args[0], OP_CLIP) && round_trip(u, old->args[0])) return args[0];
  if (is_call(old, OP_CAST) && is_call(old->args[0], OP_CAST) && round_trip(u, old->args[0]->args[0])) return args[0];
  if (is_call(old, OP_SUBTRACT) && dt_eq(old->type.dtype, DT_F32) && graph_scalar_f32(old->args[1], &r) && r == 0 &&
      !signbit(r) && ttype_eq(&old->args[0]->type, &old->type))
    return args[0];
  if (is_call(old, OP_SUBTRACT) && is_call(old->args[0], OP_CAST) && is_call(old->args[0]->args[0], OP_CAST) &&
      !isnan(zero_fold(u, old->args[0]->args[0]->args[0])))
    return args[0];
  return GRAPH_KEEP;
}

Graph *graph_simplify_requantize(Graph *g) {
  Uses u = {graph_use_counts(g), calloc((size_t)g->nodes.len + 1, sizeof(GNode *))};
  Graph *r = NULL;
  if (u.n && u.user) {
    for (int i = 0; i < g->nodes.len; i++) {
      const GNode *n = g->nodes.data[i];
      for (int a = 0; a < n->nargs; a++) u.user[n->args[a]->id] = n;
    }
    r = graph_rewrite(g, rewrite, &u);
  }
  if (r) { /* without what rule 4 bypassed */
    Graph *c = graph_rewrite(r, NULL, NULL);
    graph_free(r);
    r = c;
  }
  free(u.n);
  free(u.user);
  return r;
}
