/*
 * simplify_stmt.c - ir_simplify_stmt: the simplifier over statements.
 *
 * One analyzer walks the statement: a loop's variable is bound to the
 * loop's range inside its body, an `if` narrows simple `var OP const`
 * facts inside its branches, and a thread_extent attribute bounds its
 * thread variable.
 */
#include "simplify_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

/* Facts bound for a scope, undone in reverse order when it ends. */
typedef struct Saved {
  PtrVec vars, olds;
} Saved;

static void save_set(Analyzer *an, Saved *sv, Expr *var, Iv iv) {
  pv_push(&sv->vars, var);
  pv_push(&sv->olds, an_set(an, var, iv));
}

static void save_restore(Analyzer *an, Saved *sv) {
  for (int i = sv->vars.len - 1; i >= 0; i--) an_restore(an, sv->vars.data[i], sv->olds.data[i]);
  pv_free(&sv->vars);
  pv_free(&sv->olds);
}

/* Learn from `cond == truth` the simple facts `var OP const` (through
 * &&, ||, ! and likely()), narrowing the variables' ranges. */
static void assume(Analyzer *an, Saved *sv, Expr *cond, bool truth) {
  if (cond->kind == EK_Call && cond->call.op == INTRIN_likely) {
    assume(an, sv, cond->call.args[0], truth);
    return;
  }
  if (cond->kind == EK_Not) {
    assume(an, sv, cond->bin.a, !truth);
    return;
  }
  if ((cond->kind == EK_And && truth) || (cond->kind == EK_Or && !truth)) {
    assume(an, sv, cond->bin.a, truth);
    assume(an, sv, cond->bin.b, truth);
    return;
  }
  if (!ir_is_compare(cond->kind) || !is_index(cond->bin.a->dtype)) return;
  ExprKind k = cond->kind;
  Expr *v = cond->bin.a, *c = cond->bin.b;
  int64_t x;
  if (v->kind != EK_Var) { /* `c OP var`: mirror it */
    static const ExprKind mirror[] = {[EK_EQ] = EK_EQ, [EK_NE] = EK_NE, [EK_LT] = EK_GT,
                                      [EK_LE] = EK_GE, [EK_GT] = EK_LT, [EK_GE] = EK_LE};
    v = cond->bin.b;
    c = cond->bin.a;
    k = mirror[k];
  }
  if (v->kind != EK_Var || !const_int(c, &x) || !is_signed(v->dtype)) return;
  if (!truth) {
    static const ExprKind negate[] = {[EK_EQ] = EK_NE, [EK_NE] = EK_EQ, [EK_LT] = EK_GE,
                                      [EK_LE] = EK_GT, [EK_GT] = EK_LE, [EK_GE] = EK_LT};
    k = negate[k];
  }
  Iv r = an_var_iv(an, v);
  if (k == EK_EQ) r = iv_make(max64(r.lo, x), min64(r.hi, x));
  else if (k == EK_LT && x != NEG_INF) r.hi = min64(r.hi, x - 1);
  else if (k == EK_LE) r.hi = min64(r.hi, x);
  else if (k == EK_GT && x != POS_INF) r.lo = max64(r.lo, x + 1);
  else if (k == EK_GE) r.lo = max64(r.lo, x);
  else return;
  if (r.lo > r.hi) return; /* contradictory: the branch is dead; learn nothing */
  save_set(an, sv, v, r);
}

static Stmt *simp_stmt(Analyzer *an, Stmt *s);

static Stmt *simp_for(Analyzer *an, Stmt *s) {
  Expr *mn = an_simp(an, s->for_.min), *ex = an_simp(an, s->for_.extent);
  if (!mn || !ex) return NULL;
  int64_t n;
  if (const_int(ex, &n) && n <= 0) return ir_nop();
  if (const_int(ex, &n) && n == 1 && s->for_.fkind != FOR_THREAD)
    return simp_stmt(an, ir_substitute_stmt1(s->for_.body, s->for_.var, mn));
  Saved sv = {{0}, {0}};
  save_set(an, &sv, s->for_.var, an_loop_iv(an, mn, ex));
  Stmt *b = simp_stmt(an, s->for_.body);
  save_restore(an, &sv);
  if (!b) return NULL;
  if (ir_is_nop(b)) return ir_nop();
  if (mn == s->for_.min && ex == s->for_.extent && b == s->for_.body) return s;
  Stmt *c = KNEW(Stmt);
  *c = *s;
  c->for_.min = mn;
  c->for_.extent = ex;
  c->for_.body = b;
  return c;
}

static Expr **simp_array(Analyzer *an, int n, Expr **a, bool *changed, bool *failed) {
  Expr **r = KNEWN(Expr *, n ? n : 1);
  for (int i = 0; i < n; i++) {
    r[i] = an_simp(an, a[i]);
    if (!r[i]) *failed = true;
    if (r[i] != a[i]) *changed = true;
  }
  return r;
}

static Stmt *simp_stmt(Analyzer *an, Stmt *s) {
  if (!s) return NULL;
  switch (s->kind) {
  case SK_For:
    return simp_for(an, s);
  case SK_Store: {
    Expr *v = an_simp(an, s->store.value), *i = an_simp(an, s->store.index);
    if (v == s->store.value && i == s->store.index) return s;
    return ir_store(s->store.buf, v, i);
  }
  case SK_Provide: {
    bool ch = false, bad = false;
    Expr *v = an_simp(an, s->provide.value);
    Expr **idx = simp_array(an, s->provide.n, s->provide.idx, &ch, &bad);
    if (!v || bad) return NULL;
    if (!ch && v == s->provide.value) return s;
    return ir_provide(s->provide.tensor, v, s->provide.n, idx);
  }
  case SK_Allocate: {
    Expr *sz = an_simp(an, s->alloc.size);
    Stmt *b = simp_stmt(an, s->alloc.body);
    if (!sz || !b) return NULL;
    if (ir_is_nop(b)) return b;
    if (sz == s->alloc.size && b == s->alloc.body) return s;
    return ir_allocate(s->alloc.buf, s->alloc.dtype, sz, s->alloc.scope, b);
  }
  case SK_Realize: {
    bool ch = false, bad = false;
    Expr **mn = simp_array(an, s->realize.n, s->realize.min, &ch, &bad);
    Expr **ex = simp_array(an, s->realize.n, s->realize.extent, &ch, &bad);
    Stmt *b = simp_stmt(an, s->realize.body);
    if (bad || !b) return NULL;
    if (!ch && b == s->realize.body) return s;
    return ir_realize(s->realize.tensor, s->realize.n, mn, ex, s->realize.scope, b);
  }
  case SK_IfThenElse: {
    Expr *c = an_simp(an, s->if_.cond);
    if (!c) return NULL;
    if (c->kind == EK_IntImm) {
      if (c->int_value) return simp_stmt(an, s->if_.then_);
      return s->if_.else_ ? simp_stmt(an, s->if_.else_) : ir_nop();
    }
    Saved sv = {{0}, {0}};
    assume(an, &sv, c, true);
    Stmt *t = simp_stmt(an, s->if_.then_);
    save_restore(an, &sv);
    Stmt *e = NULL;
    if (s->if_.else_) {
      assume(an, &sv, c, false);
      e = simp_stmt(an, s->if_.else_);
      save_restore(an, &sv);
      if (!e) return NULL;
      if (ir_is_nop(e)) e = NULL;
    }
    if (!t) return NULL;
    if (ir_is_nop(t) && !e) return ir_nop();
    if (c == s->if_.cond && t == s->if_.then_ && e == s->if_.else_) return s;
    return ir_if(c, t, e);
  }
  case SK_Seq: {
    Stmt **v = KNEWN(Stmt *, s->seq.n);
    bool ch = false;
    for (int i = 0; i < s->seq.n; i++) {
      v[i] = simp_stmt(an, s->seq.s[i]);
      if (!v[i]) return NULL;
      ch |= v[i] != s->seq.s[i];
    }
    return ch ? ir_seq(s->seq.n, v) : s;
  }
  case SK_Evaluate: {
    Expr *v = an_simp(an, s->eval.value);
    if (!v) return NULL;
    return v == s->eval.value ? s : ir_evaluate(v);
  }
  case SK_Attr: {
    Expr *v = an_simp(an, s->attr.value);
    if (s->attr.value && !v) return NULL;
    Saved sv = {{0}, {0}};
    void *node = s->attr.node;
    Expr *var = NULL;
    if (node && *(KObjKind *)node == KOBJ_ITERVAR) var = ((IterVar *)node)->var;
    if (node && *(KObjKind *)node == KOBJ_EXPR && ((Expr *)node)->kind == EK_Var) var = node;
    /* A thread or virtual-thread extent ranges its variable over [0, n). */
    if (var && v && (!strcmp(s->attr.key, "thread_extent") || !strcmp(s->attr.key, "virtual_thread"))) {
      Iv x = an_bound(an, v);
      save_set(an, &sv, var, iv_make(0, max64(0, end_add(x.hi, -1, POS_INF))));
    }
    Stmt *b = simp_stmt(an, s->attr.body);
    save_restore(an, &sv);
    if (!b) return NULL;
    if (v == s->attr.value && b == s->attr.body) return s;
    Stmt *c = KNEW(Stmt);
    *c = *s;
    c->attr.value = v;
    c->attr.body = b;
    return c;
  }
  case SK_Produce: {
    Stmt *b = simp_stmt(an, s->produce.body);
    if (!b) return NULL;
    return b == s->produce.body ? s : ir_produce(s->produce.tensor, b);
  }
  case SK_LetStmt: {
    Expr *v = an_simp(an, s->let.value);
    if (!v) return NULL;
    if (v->kind == EK_IntImm || v->kind == EK_FloatImm || v->kind == EK_Var)
      return simp_stmt(an, ir_substitute_stmt1(s->let.body, s->let.var, v));
    Saved sv = {{0}, {0}};
    if (is_intlike1(v->dtype)) save_set(an, &sv, s->let.var, an_bound(an, v));
    Stmt *b = simp_stmt(an, s->let.body);
    save_restore(an, &sv);
    if (!b) return NULL;
    if (!ir_stmt_uses_var(b, s->let.var)) return b;
    if (v == s->let.value && b == s->let.body) return s;
    return ir_let_stmt(s->let.var, v, b);
  }
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

Stmt *ir_simplify_stmt(Stmt *s) {
  if (!s) return NULL;
  Analyzer *an = analyzer_new();
  Stmt *r = simp_stmt(an, s);
  analyzer_free(an);
  return r;
}
