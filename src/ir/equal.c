/*
 * equal.c - structural equality and hashing of expressions and statements.
 *
 * Two trees are equal when they have the same node kinds, types, constants
 * and children.  Variables need care: a free variable is the same variable
 * only if it is the same node, but a variable a tree binds itself (a For
 * loop's var, a Let / LetStmt var, a Reduce axis, an Allocate's buffer, a
 * custom reducer's lhs/rhs) is a placeholder, so `for (i ..) A[i]` equals
 * `for (j ..) A[j]` (alpha-equivalence).  The comparison keeps a stack of
 * (var in a, var in b) pairs for the binders it is inside; a variable use
 * looks for the innermost pair that mentions either side, and the two uses
 * match only if that pair binds exactly them.  This also handles shadowing.
 *
 * The hash follows the same rule so that equal trees hash equally: a bound
 * variable hashes as its binding depth (position on the binder stack), a
 * free one by its address.  Free-variable hashes therefore differ from run
 * to run; do not use them to order output (the simplifier orders terms by a
 * name-based comparison instead).
 *
 * Floats compare by bit pattern, so a NaN constant equals itself.
 */
#include "ir.h"

#include <string.h>


/* ---- equality ---- */

typedef struct EqCtx {
  PtrVec a, b; /* binder stacks, pushed and popped together */
} EqCtx;

static bool eq_expr(EqCtx *c, Expr *x, Expr *y);
static bool eq_stmt(EqCtx *c, Stmt *x, Stmt *y);

static bool str_eq(const char *x, const char *y) {
  if (!x || !y) return x == y;
  return strcmp(x, y) == 0;
}

static bool var_eq(EqCtx *c, Expr *x, Expr *y) {
  for (int i = c->a.len - 1; i >= 0; i--)
    if (c->a.data[i] == x || c->b.data[i] == y) return c->a.data[i] == x && c->b.data[i] == y;
  return x == y;
}

/* Bind x (in a) to y (in b); false if they cannot be bound to each other. */
static bool bind(EqCtx *c, Expr *x, Expr *y) {
  if (!x || !y) return x == y;
  if (x->kind != EK_Var || y->kind != EK_Var || !dt_eq(x->dtype, y->dtype)) return false;
  pv_push(&c->a, x);
  pv_push(&c->b, y);
  return true;
}

static void unbind(EqCtx *c, int n) {
  for (int i = 0; i < n; i++) {
    pv_pop(&c->a);
    pv_pop(&c->b);
  }
}

static bool eq_array(EqCtx *c, int n, Expr **x, Expr **y) {
  for (int i = 0; i < n; i++)
    if (!eq_expr(c, x[i], y[i])) return false;
  return true;
}

static bool eq_reducer(EqCtx *c, Reducer *x, Reducer *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind) return false;
  if (x->kind != RED_CUSTOM) return eq_expr(c, x->identity, y->identity);
  if (!eq_expr(c, x->identity, y->identity)) return false;
  if (!bind(c, x->lhs, y->lhs)) return false;
  if (!bind(c, x->rhs, y->rhs)) {
    unbind(c, 1);
    return false;
  }
  bool r = eq_expr(c, x->result, y->result);
  unbind(c, 2);
  return r;
}

static bool eq_reduce(EqCtx *c, Expr *x, Expr *y) {
  if (x->reduce.naxis != y->reduce.naxis) return false;
  if (!eq_reducer(c, x->reduce.comb, y->reduce.comb)) return false;
  int n = x->reduce.naxis;
  for (int i = 0; i < n; i++) {
    IterVar *u = x->reduce.axis[i], *v = y->reduce.axis[i];
    if (u->kind != v->kind || !eq_expr(c, u->min, v->min) || !eq_expr(c, u->extent, v->extent))
      return false;
  }
  int bound = 0;
  bool r = true;
  for (int i = 0; i < n && r; i++) {
    r = bind(c, x->reduce.axis[i]->var, y->reduce.axis[i]->var);
    if (r) bound++;
  }
  r = r && eq_expr(c, x->reduce.source, y->reduce.source) &&
      eq_expr(c, x->reduce.cond, y->reduce.cond);
  unbind(c, bound);
  return r;
}

static bool eq_expr(EqCtx *c, Expr *x, Expr *y) {
  if (!x || !y) return x == y;
  if (x == y && c->a.len == 0) return true; /* no binders: identity is equality */
  if (x->kind != y->kind || !dt_eq(x->dtype, y->dtype)) return false;
  switch (x->kind) {
  case EK_IntImm:
    return x->int_value == y->int_value;
  case EK_FloatImm:
    return memcmp(&x->float_value, &y->float_value, sizeof(double)) == 0;
  case EK_StrImm:
    return str_eq(x->str, y->str);
  case EK_Var:
    return var_eq(c, x, y);
  KILN_EXPR_BINARY_CASES
    return eq_expr(c, x->bin.a, y->bin.a) && eq_expr(c, x->bin.b, y->bin.b);
  case EK_Not:
  case EK_Cast:
    return eq_expr(c, x->bin.a, y->bin.a);
  case EK_Select:
    return eq_expr(c, x->select.cond, y->select.cond) && eq_expr(c, x->select.t, y->select.t) &&
           eq_expr(c, x->select.f, y->select.f);
  case EK_Call:
    return x->call.op == y->call.op && x->call.nargs == y->call.nargs &&
           eq_array(c, x->call.nargs, x->call.args, y->call.args);
  case EK_Read:
    return x->read.tensor == y->read.tensor && x->read.n == y->read.n &&
           eq_array(c, x->read.n, x->read.idx, y->read.idx);
  case EK_Load:
    return eq_expr(c, x->load.buf, y->load.buf) && eq_expr(c, x->load.index, y->load.index);
  case EK_Ramp:
    return x->ramp.lanes == y->ramp.lanes && eq_expr(c, x->ramp.base, y->ramp.base) &&
           eq_expr(c, x->ramp.stride, y->ramp.stride);
  case EK_Broadcast:
    return x->bcast.lanes == y->bcast.lanes && eq_expr(c, x->bcast.value, y->bcast.value);
  case EK_Let: {
    if (!eq_expr(c, x->let.value, y->let.value)) return false;
    if (!bind(c, x->let.var, y->let.var)) return false;
    bool r = eq_expr(c, x->let.body, y->let.body);
    unbind(c, 1);
    return r;
  }
  case EK_Reduce:
    return eq_reduce(c, x, y);
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* An Attr's node: IterVars and Vars compare as variables (they may be bound
 * by an enclosing loop), anything else by identity. */
static bool eq_node(EqCtx *c, void *x, void *y) {
  if (!x || !y) return x == y;
  KObjKind kx = *(KObjKind *)x, ky = *(KObjKind *)y;
  if (kx != ky) return false;
  switch (kx) {
  case KOBJ_ITERVAR:
    return var_eq(c, ((IterVar *)x)->var, ((IterVar *)y)->var);
  case KOBJ_EXPR:
    return eq_expr(c, x, y);
  case KOBJ_NONE:
  case KOBJ_STMT:
  case KOBJ_TENSOR:
  case KOBJ_STAGE:
  case KOBJ_SCHEDULE:
  case KOBJ_FUNC:
  case KOBJ_REDUCER:
    break;
  }
  return x == y;
}

static bool eq_stmt(EqCtx *c, Stmt *x, Stmt *y) {
  if (!x || !y) return x == y;
  if (x == y && c->a.len == 0) return true;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
  case SK_For: {
    if (x->for_.fkind != y->for_.fkind || !str_eq(x->for_.thread_tag, y->for_.thread_tag) ||
        !eq_expr(c, x->for_.min, y->for_.min) || !eq_expr(c, x->for_.extent, y->for_.extent))
      return false;
    if (!bind(c, x->for_.var, y->for_.var)) return false;
    bool r = eq_stmt(c, x->for_.body, y->for_.body);
    unbind(c, 1);
    return r;
  }
  case SK_Store:
    return eq_expr(c, x->store.buf, y->store.buf) && eq_expr(c, x->store.index, y->store.index) &&
           eq_expr(c, x->store.value, y->store.value);
  case SK_Provide:
    return x->provide.tensor == y->provide.tensor && x->provide.n == y->provide.n &&
           eq_array(c, x->provide.n, x->provide.idx, y->provide.idx) &&
           eq_expr(c, x->provide.value, y->provide.value);
  case SK_Allocate: {
    if (!dt_eq(x->alloc.dtype, y->alloc.dtype) || !str_eq(x->alloc.scope, y->alloc.scope) ||
        !eq_expr(c, x->alloc.size, y->alloc.size))
      return false;
    if (!bind(c, x->alloc.buf, y->alloc.buf)) return false;
    bool r = eq_stmt(c, x->alloc.body, y->alloc.body);
    unbind(c, 1);
    return r;
  }
  case SK_Realize:
    return x->realize.tensor == y->realize.tensor && x->realize.n == y->realize.n &&
           str_eq(x->realize.scope, y->realize.scope) &&
           eq_array(c, x->realize.n, x->realize.min, y->realize.min) &&
           eq_array(c, x->realize.n, x->realize.extent, y->realize.extent) &&
           eq_stmt(c, x->realize.body, y->realize.body);
  case SK_IfThenElse:
    return eq_expr(c, x->if_.cond, y->if_.cond) && eq_stmt(c, x->if_.then_, y->if_.then_) &&
           eq_stmt(c, x->if_.else_, y->if_.else_);
  case SK_Seq:
    if (x->seq.n != y->seq.n) return false;
    for (int i = 0; i < x->seq.n; i++)
      if (!eq_stmt(c, x->seq.s[i], y->seq.s[i])) return false;
    return true;
  case SK_Evaluate:
    return eq_expr(c, x->eval.value, y->eval.value);
  case SK_Attr:
    return str_eq(x->attr.key, y->attr.key) && eq_node(c, x->attr.node, y->attr.node) &&
           eq_expr(c, x->attr.value, y->attr.value) && eq_stmt(c, x->attr.body, y->attr.body);
  case SK_Produce:
    return x->produce.tensor == y->produce.tensor && eq_stmt(c, x->produce.body, y->produce.body);
  case SK_LetStmt: {
    if (!eq_expr(c, x->let.value, y->let.value)) return false;
    if (!bind(c, x->let.var, y->let.var)) return false;
    bool r = eq_stmt(c, x->let.body, y->let.body);
    unbind(c, 1);
    return r;
  }
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

bool ir_expr_equal(Expr *a, Expr *b) {
  EqCtx c = {{0}, {0}};
  bool r = eq_expr(&c, a, b);
  pv_free(&c.a);
  pv_free(&c.b);
  return r;
}

bool ir_stmt_equal(Stmt *a, Stmt *b) {
  EqCtx c = {{0}, {0}};
  bool r = eq_stmt(&c, a, b);
  pv_free(&c.a);
  pv_free(&c.b);
  return r;
}

/* ---- hash ---- */

typedef struct HashCtx {
  PtrVec bound; /* binder stack, as in EqCtx */
} HashCtx;

static uint64_t h_expr(HashCtx *c, Expr *e);
static uint64_t h_stmt(HashCtx *c, Stmt *s);

static uint64_t h_u64(uint64_t h, uint64_t v) { return hash_combine(h, hash_bytes(&v, sizeof v, 0)); }

static uint64_t h_str(uint64_t h, const char *s) {
  return hash_combine(h, s ? hash_bytes(s, strlen(s), 7) : 0x5bd1e995u);
}

static uint64_t h_dtype(uint64_t h, DType t) {
  return h_u64(h, (uint64_t)t.code << 24 | (uint64_t)t.bits << 16 | t.lanes);
}

static uint64_t h_var(HashCtx *c, Expr *v) {
  for (int i = c->bound.len - 1; i >= 0; i--)
    if (c->bound.data[i] == v) return h_u64(0xb0b0, (uint64_t)i);
  return h_u64(0xf4ee, (uint64_t)(uintptr_t)v);
}

static uint64_t h_array(HashCtx *c, uint64_t h, int n, Expr **a) {
  for (int i = 0; i < n; i++) h = hash_combine(h, h_expr(c, a[i]));
  return h;
}

static uint64_t h_reducer(HashCtx *c, uint64_t h, Reducer *r) {
  if (!r) return h;
  h = h_u64(h, (uint64_t)r->kind);
  h = hash_combine(h, h_expr(c, r->identity));
  if (r->kind == RED_CUSTOM) {
    pv_push(&c->bound, r->lhs);
    pv_push(&c->bound, r->rhs);
    h = hash_combine(h, h_expr(c, r->result));
    pv_pop(&c->bound);
    pv_pop(&c->bound);
  }
  return h;
}

static uint64_t h_expr(HashCtx *c, Expr *e) {
  if (!e) return 0x0ddba11u;
  uint64_t h = h_dtype(h_u64(0x1e, (uint64_t)e->kind), e->dtype);
  switch (e->kind) {
  case EK_IntImm:
    return h_u64(h, (uint64_t)e->int_value);
  case EK_FloatImm: {
    uint64_t bits;
    memcpy(&bits, &e->float_value, sizeof bits);
    return h_u64(h, bits);
  }
  case EK_StrImm:
    return h_str(h, e->str);
  case EK_Var:
    return hash_combine(h, h_var(c, e));
  KILN_EXPR_BINARY_CASES
    h = hash_combine(h, h_expr(c, e->bin.a));
    return hash_combine(h, h_expr(c, e->bin.b));
  case EK_Not:
  case EK_Cast:
    return hash_combine(h, h_expr(c, e->bin.a));
  case EK_Select:
    h = hash_combine(h, h_expr(c, e->select.cond));
    h = hash_combine(h, h_expr(c, e->select.t));
    return hash_combine(h, h_expr(c, e->select.f));
  case EK_Call:
    h = h_u64(h, (uint64_t)e->call.op);
    return h_array(c, h, e->call.nargs, e->call.args);
  case EK_Read:
    h = h_u64(h, (uint64_t)(uintptr_t)e->read.tensor);
    return h_array(c, h, e->read.n, e->read.idx);
  case EK_Load:
    h = hash_combine(h, h_expr(c, e->load.buf));
    return hash_combine(h, h_expr(c, e->load.index));
  case EK_Ramp:
    h = h_u64(h, (uint64_t)e->ramp.lanes);
    h = hash_combine(h, h_expr(c, e->ramp.base));
    return hash_combine(h, h_expr(c, e->ramp.stride));
  case EK_Broadcast:
    h = h_u64(h, (uint64_t)e->bcast.lanes);
    return hash_combine(h, h_expr(c, e->bcast.value));
  case EK_Let:
    h = hash_combine(h, h_expr(c, e->let.value));
    pv_push(&c->bound, e->let.var);
    h = hash_combine(h, h_expr(c, e->let.body));
    pv_pop(&c->bound);
    return h;
  case EK_Reduce: {
    h = h_reducer(c, h, e->reduce.comb);
    int n = e->reduce.naxis;
    for (int i = 0; i < n; i++) {
      IterVar *iv = e->reduce.axis[i];
      h = h_u64(h, (uint64_t)iv->kind);
      h = hash_combine(h, h_expr(c, iv->min));
      h = hash_combine(h, h_expr(c, iv->extent));
    }
    for (int i = 0; i < n; i++) pv_push(&c->bound, e->reduce.axis[i]->var);
    h = hash_combine(h, h_expr(c, e->reduce.source));
    h = hash_combine(h, h_expr(c, e->reduce.cond));
    for (int i = 0; i < n; i++) pv_pop(&c->bound);
    return h;
  }
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

static uint64_t h_node(HashCtx *c, void *node) {
  if (!node) return 0x6e6f6e65u;
  switch (*(KObjKind *)node) {
  case KOBJ_ITERVAR:
    return h_var(c, ((IterVar *)node)->var);
  case KOBJ_EXPR:
    return h_expr(c, node);
  case KOBJ_NONE:
  case KOBJ_STMT:
  case KOBJ_TENSOR:
  case KOBJ_STAGE:
  case KOBJ_SCHEDULE:
  case KOBJ_FUNC:
  case KOBJ_REDUCER:
    break;
  }
  return h_u64(0x0b1, (uint64_t)(uintptr_t)node);
}

static uint64_t h_stmt(HashCtx *c, Stmt *s) {
  if (!s) return 0x5747u;
  uint64_t h = h_u64(0x57, (uint64_t)s->kind);
  switch (s->kind) {
  case SK_For:
    h = h_u64(h, (uint64_t)s->for_.fkind);
    h = h_str(h, s->for_.thread_tag);
    h = hash_combine(h, h_expr(c, s->for_.min));
    h = hash_combine(h, h_expr(c, s->for_.extent));
    h = h_dtype(h, s->for_.var->dtype);
    pv_push(&c->bound, s->for_.var);
    h = hash_combine(h, h_stmt(c, s->for_.body));
    pv_pop(&c->bound);
    return h;
  case SK_Store:
    h = hash_combine(h, h_expr(c, s->store.buf));
    h = hash_combine(h, h_expr(c, s->store.index));
    return hash_combine(h, h_expr(c, s->store.value));
  case SK_Provide:
    h = h_u64(h, (uint64_t)(uintptr_t)s->provide.tensor);
    h = h_array(c, h, s->provide.n, s->provide.idx);
    return hash_combine(h, h_expr(c, s->provide.value));
  case SK_Allocate:
    h = h_dtype(h, s->alloc.dtype);
    h = h_str(h, s->alloc.scope);
    h = hash_combine(h, h_expr(c, s->alloc.size));
    pv_push(&c->bound, s->alloc.buf);
    h = hash_combine(h, h_stmt(c, s->alloc.body));
    pv_pop(&c->bound);
    return h;
  case SK_Realize:
    h = h_u64(h, (uint64_t)(uintptr_t)s->realize.tensor);
    h = h_str(h, s->realize.scope);
    h = h_array(c, h, s->realize.n, s->realize.min);
    h = h_array(c, h, s->realize.n, s->realize.extent);
    return hash_combine(h, h_stmt(c, s->realize.body));
  case SK_IfThenElse:
    h = hash_combine(h, h_expr(c, s->if_.cond));
    h = hash_combine(h, h_stmt(c, s->if_.then_));
    return hash_combine(h, h_stmt(c, s->if_.else_));
  case SK_Seq:
    for (int i = 0; i < s->seq.n; i++) h = hash_combine(h, h_stmt(c, s->seq.s[i]));
    return h;
  case SK_Evaluate:
    return hash_combine(h, h_expr(c, s->eval.value));
  case SK_Attr:
    h = h_str(h, s->attr.key);
    h = hash_combine(h, h_node(c, s->attr.node));
    h = hash_combine(h, h_expr(c, s->attr.value));
    return hash_combine(h, h_stmt(c, s->attr.body));
  case SK_Produce:
    h = h_u64(h, (uint64_t)(uintptr_t)s->produce.tensor);
    return hash_combine(h, h_stmt(c, s->produce.body));
  case SK_LetStmt:
    h = hash_combine(h, h_expr(c, s->let.value));
    pv_push(&c->bound, s->let.var);
    h = hash_combine(h, h_stmt(c, s->let.body));
    pv_pop(&c->bound);
    return h;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

uint64_t ir_expr_hash(Expr *e) {
  HashCtx c = {{0}};
  uint64_t h = h_expr(&c, e);
  pv_free(&c.bound);
  return h;
}

uint64_t ir_stmt_hash(Stmt *s) {
  HashCtx c = {{0}};
  uint64_t h = h_stmt(&c, s);
  pv_free(&c.bound);
  return h;
}
