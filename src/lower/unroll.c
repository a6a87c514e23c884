/*
 * unroll.c - unroll loops: every loop marked unrolled, and, under a
 * pragma_auto_unroll_max_step attribute, every inner loop with a constant
 * extent whose total number of steps (iterations of the statements inside)
 * is at most the pragma's value.  Unrolling substitutes the loop variable
 * by each value in turn; the simplifier then folds the indices.  Under
 * pragma_unroll_explicit = 0 (TVM's knob of its CUDA templates) a loop to
 * unroll is only marked unrolled, and the GPU printer writes `#pragma
 * unroll` before it, leaving the unrolling to the device compiler.
 */
#include "lower.h"

#include <string.h>

/* Number of leaf statements executed by s, or -1 if not constant. */
static int64_t steps(Stmt *s) {
  switch (s->kind) {
  case SK_For: {
    int64_t e, b = steps(s->for_.body);
    if (!ir_is_const_int(s->for_.extent, &e) || b < 0) return -1;
    return e * b;
  }
  case SK_Seq: {
    int64_t t = 0;
    for (int i = 0; i < s->seq.n; i++) {
      int64_t x = steps(s->seq.s[i]);
      if (x < 0) return -1;
      t += x;
    }
    return t;
  }
  case SK_IfThenElse: {
    int64_t a = steps(s->if_.then_), b = s->if_.else_ ? steps(s->if_.else_) : 0;
    return a < 0 || b < 0 ? -1 : a + b;
  }
  case SK_Allocate:
    return steps(s->alloc.body);
  case SK_Attr:
    return steps(s->attr.body);
  case SK_Produce:
    return steps(s->produce.body);
  case SK_LetStmt:
    return steps(s->let.body);
  case SK_Store:
  case SK_Provide:
  case SK_Evaluate:
  case SK_Realize:
    return 1;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

static Stmt *unroll_for(Stmt *f) {
  int64_t n;
  KASSERT(ir_is_const_int(f->for_.extent, &n));
  Stmt **v = KNEWN(Stmt *, n > 0 ? n : 1);
  for (int64_t i = 0; i < n; i++)
    v[i] = ir_substitute_stmt1(f->for_.body, f->for_.var, ir_simplify(ir_add(f->for_.min, ir_int(i, f->for_.var->dtype))));
  return ir_seq((int)n, v);
}

typedef struct {
  int64_t auto_max; /* current auto-unroll limit (0: off) */
  bool keep;        /* under unroll_explicit = 0: mark, do not unroll */
} Unroll;

static Stmt *do_unroll(Unroll *u, Stmt *f) {
  if (!u->keep) return unroll_for(f);
  return ir_for(f->for_.var, f->for_.min, f->for_.extent, FOR_UNROLLED, f->for_.body);
}

static Stmt *unroll_stmt(IRMutator *m, Stmt *s) {
  Unroll *u = m->ud;
  if (s->kind == SK_Attr && !strcmp(s->attr.key, "pragma_auto_unroll_max_step")) {
    int64_t saved = u->auto_max, v = 0;
    if (s->attr.value && ir_is_const_int(s->attr.value, &v)) u->auto_max = v;
    Stmt *b = ir_mutate_stmt(m, s->attr.body);
    u->auto_max = saved;
    return b;
  }
  if (s->kind == SK_Attr && !strcmp(s->attr.key, "pragma_unroll_explicit")) {
    bool saved = u->keep;
    int64_t v = 1;
    if (s->attr.value && ir_is_const_int(s->attr.value, &v)) u->keep = v == 0;
    Stmt *b = ir_mutate_stmt(m, s->attr.body);
    u->keep = saved;
    return b;
  }
  Stmt *r = ir_mutate_stmt_children(m, s);
  if (!r || r->kind != SK_For) return r;
  int64_t n;
  if (!ir_is_const_int(r->for_.extent, &n)) return r;
  if (r->for_.fkind == FOR_UNROLLED) return do_unroll(u, r);
  if (r->for_.fkind == FOR_SERIAL && u->auto_max > 0) {
    int64_t st = steps(r);
    if (st >= 0 && st <= u->auto_max) return do_unroll(u, r);
  }
  return r;
}

Stmt *lower_unroll(Stmt *body, int auto_max_step) {
  Unroll u = {auto_max_step, false};
  IRMutator m = {NULL, unroll_stmt, &u};
  return ir_mutate_stmt(&m, body);
}
