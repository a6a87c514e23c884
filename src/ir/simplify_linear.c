/*
 * simplify_linear.c - linear forms and the structural order of expressions.
 *
 * Integer +, -, and * by a constant go through a linear form: a sum of
 * coefficient x atom plus a constant, coefficients held modulo 2^bits
 * (sign view).  Equal atoms combine, zero terms vanish, and lin_expr
 * rebuilds the form in the canonical order simplify.c's essay describes;
 * simp_cmp_expr is the structural order that makes it deterministic.
 */
#include "simplify_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* A deterministic structural order (for canonical term order)         */
/* ------------------------------------------------------------------ */

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int cmp_array(int na, Expr **a, int nb, Expr **b) {
  if (na != nb) return cmp_i64(na, nb);
  for (int i = 0; i < na; i++) {
    int c = simp_cmp_expr(a[i], b[i]);
    if (c) return c;
  }
  return 0;
}

/* Orders by kind, type, then contents; variables by name.  Distinct nodes
 * may compare equal (two variables named alike), which the stable sort
 * resolves by first appearance. */
int simp_cmp_expr(Expr *a, Expr *b) {
  if (a == b) return 0;
  if (!a || !b) return a ? 1 : -1;
  if (a->kind != b->kind) return cmp_i64(a->kind, b->kind);
  int c = cmp_i64(a->dtype.code, b->dtype.code);
  if (!c) c = cmp_i64(a->dtype.bits, b->dtype.bits);
  if (!c) c = cmp_i64(a->dtype.lanes, b->dtype.lanes);
  if (c) return c;
  switch (a->kind) {
  case EK_IntImm:
    return cmp_i64(a->int_value, b->int_value);
  case EK_FloatImm:
    return a->float_value < b->float_value ? -1 : a->float_value > b->float_value;
  case EK_StrImm:
    return strcmp(a->str, b->str);
  case EK_Var:
    return strcmp(a->var.name, b->var.name);
  KILN_EXPR_BINARY_CASES
    c = simp_cmp_expr(a->bin.a, b->bin.a);
    return c ? c : simp_cmp_expr(a->bin.b, b->bin.b);
  case EK_Not:
  case EK_Cast:
    return simp_cmp_expr(a->bin.a, b->bin.a);
  case EK_Select:
    c = simp_cmp_expr(a->select.cond, b->select.cond);
    if (!c) c = simp_cmp_expr(a->select.t, b->select.t);
    return c ? c : simp_cmp_expr(a->select.f, b->select.f);
  case EK_Call:
    c = cmp_i64(a->call.op, b->call.op);
    return c ? c : cmp_array(a->call.nargs, a->call.args, b->call.nargs, b->call.args);
  case EK_Read:
    c = strcmp(ir_tensor_name(a->read.tensor), ir_tensor_name(b->read.tensor));
    return c ? c : cmp_array(a->read.n, a->read.idx, b->read.n, b->read.idx);
  case EK_Load:
    c = simp_cmp_expr(a->load.buf, b->load.buf);
    return c ? c : simp_cmp_expr(a->load.index, b->load.index);
  case EK_Ramp:
    c = simp_cmp_expr(a->ramp.base, b->ramp.base);
    return c ? c : simp_cmp_expr(a->ramp.stride, b->ramp.stride);
  case EK_Broadcast:
    return simp_cmp_expr(a->bcast.value, b->bcast.value);
  case EK_Let:
    c = simp_cmp_expr(a->let.value, b->let.value);
    return c ? c : simp_cmp_expr(a->let.body, b->let.body);
  case EK_Reduce:
    return simp_cmp_expr(a->reduce.source, b->reduce.source);
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ------------------------------------------------------------------ */
/* Linear forms                                                        */
/* ------------------------------------------------------------------ */

void lin_init(Lin *l, DType t) {
  memset(l, 0, sizeof *l);
  l->t = t;
}
void lin_free(Lin *l) {
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

int64_t lin_kmul(int64_t a, int64_t b, DType t) { return sview((uint64_t)a * (uint64_t)b, t); }
int64_t lin_kadd(int64_t a, int64_t b, DType t) { return sview((uint64_t)a + (uint64_t)b, t); }

/* The coefficient arithmetic of lin_term / lin_add: modulo 2^bits, and on
 * int32 or int64 an exact result that does not fit it sets l->wrapped
 * (int8 and int16 wrap: the form is exact modulo 2^bits). */
static void lin_check(Lin *l, bool over, int64_t exact) {
  if (no_wrap(l->t) && (over || exact < dt_int_min(l->t) || exact > dt_int_max(l->t))) l->wrapped = true;
}

static int64_t lin_add_k(Lin *l, int64_t a, int64_t b) {
  int64_t r;
  bool over = __builtin_add_overflow(a, b, &r);
  lin_check(l, over, r);
  return lin_kadd(a, b, l->t);
}

static int64_t lin_mul_k(Lin *l, int64_t a, int64_t b) {
  int64_t r;
  bool over = __builtin_mul_overflow(a, b, &r);
  lin_check(l, over, r);
  return lin_kmul(a, b, l->t);
}

static int64_t lin_neg_k(Lin *l, int64_t k) {
  int64_t r;
  bool over = __builtin_sub_overflow((int64_t)0, k, &r);
  lin_check(l, over, r);
  return sview(-(uint64_t)k, l->t);
}

void lin_term(Lin *l, Expr *atom, int64_t k) {
  k = sview((uint64_t)k, l->t);
  if (!k) return;
  for (int i = 0; i < l->n; i++)
    if (ir_expr_equal(l->v[i].atom, atom)) {
      l->v[i].k = lin_add_k(l, l->v[i].k, k);
      return;
    }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->v = xrealloc(l->v, sizeof(Term) * (size_t)l->cap);
  }
  l->v[l->n].atom = atom;
  l->v[l->n].k = k;
  l->n++;
}

/* l += k * e, descending through +, - and * by a constant. */
void lin_add(Lin *l, Expr *e, int64_t k) {
  int64_t v;
  if (!k) return;
  if (const_int(e, &v)) {
    l->c = lin_add_k(l, l->c, lin_mul_k(l, sview((uint64_t)v, l->t), k));
  } else if (e->kind == EK_Add) {
    lin_add(l, e->bin.a, k);
    lin_add(l, e->bin.b, k);
  } else if (e->kind == EK_Sub) {
    lin_add(l, e->bin.a, k);
    lin_add(l, e->bin.b, lin_neg_k(l, k));
  } else if (e->kind == EK_Mul && const_int(e->bin.b, &v)) {
    lin_add(l, e->bin.a, lin_mul_k(l, k, sview((uint64_t)v, l->t)));
  } else if (e->kind == EK_Mul && const_int(e->bin.a, &v)) {
    lin_add(l, e->bin.b, lin_mul_k(l, k, sview((uint64_t)v, l->t)));
  } else {
    lin_term(l, e, k);
  }
}

void lin_compact(Lin *l) {
  int j = 0;
  for (int i = 0; i < l->n; i++)
    if (l->v[i].k) l->v[j++] = l->v[i];
  l->n = j;
}

/* Canonical order: larger coefficients first (`i*8 + j`), then atoms in
 * structural order.  Insertion sort: stable and the sums are short. */
static bool term_before(const Term *a, const Term *b) {
  if (a->k != b->k) return a->k > b->k;
  return simp_cmp_expr(a->atom, b->atom) < 0;
}

static void lin_sort(Lin *l) {
  for (int i = 1; i < l->n; i++) {
    Term x = l->v[i];
    int j = i - 1;
    while (j >= 0 && term_before(&x, &l->v[j])) {
      l->v[j + 1] = l->v[j];
      j--;
    }
    l->v[j + 1] = x;
  }
}

static Expr *mk_term(Lin *l, Expr *atom, int64_t k) {
  if (k == 1) return atom;
  return ir_mul(atom, mk_int(l->t, k));
}

/* The smallest sign-view value, whose negation is itself. */
int64_t lin_kmin(DType t) { return t.bits >= 64 ? INT64_MIN : -((int64_t)1 << (t.bits - 1)); }

/* Rebuild: positive terms, a positive constant, then negative terms and a
 * negative constant subtracted (TVM's canonical shape). */
Expr *lin_expr(Lin *l) {
  lin_compact(l);
  lin_sort(l);
  DType t = l->t;
  Expr *acc = NULL;
  for (int i = 0; i < l->n; i++) {
    Term *x = &l->v[i];
    if (x->k > 0 || x->k == lin_kmin(t)) {
      Expr *term = mk_term(l, x->atom, x->k);
      acc = acc ? ir_add(acc, term) : term;
    }
  }
  if (l->c > 0 || l->c == lin_kmin(t)) acc = acc ? ir_add(acc, mk_int(t, l->c)) : mk_int(t, l->c);
  for (int i = 0; i < l->n; i++) {
    Term *x = &l->v[i];
    if (x->k < 0 && x->k != lin_kmin(t)) {
      Expr *term = mk_term(l, x->atom, -x->k);
      acc = ir_sub(acc ? acc : mk_int(t, 0), term);
    }
  }
  if (l->c < 0 && l->c != lin_kmin(t)) acc = acc ? ir_sub(acc, mk_int(t, -l->c)) : mk_int(t, l->c);
  return acc ? acc : mk_int(t, 0);
}

void lin_of(Lin *l, Expr *e, DType t) {
  lin_init(l, t);
  lin_add(l, e, 1);
}

/* Range of a linear form (signed types: no wrap-around assumed); a form
 * whose signed coefficients overflowed says nothing. */
Iv lin_bound(Analyzer *an, Lin *l) {
  if (l->wrapped) return iv_full();
  Iv r = iv_make(l->c, l->c);
  for (int i = 0; i < l->n; i++) r = iv_add(r, iv_scale(an_bound(an, l->v[i].atom), l->v[i].k));
  return r;
}

/* l = a - b, both simplified. */
void lin_diff(Lin *l, Expr *a, Expr *b) {
  lin_init(l, a->dtype);
  lin_add(l, a, 1);
  lin_add(l, b, -1);
  lin_compact(l);
}
