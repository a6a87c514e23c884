/* stmt.c - statement builders. */
#include "ir.h"

#include <string.h>

static const char *stmt_names[] = {
#define X(n) #n,
    KILN_STMT_KINDS(X)
#undef X
};
const char *stmt_kind_name(StmtKind k) { return stmt_names[k]; }

static const char *for_names[] = {
#define X(n, s) s,
    KILN_FOR_KINDS(X)
#undef X
};
const char *for_kind_name(ForKind k) { return for_names[k]; }

static Stmt *mk(StmtKind k) {
  Stmt *s = KNEW(Stmt);
  s->okind = KOBJ_STMT;
  s->kind = k;
  return s;
}

Stmt *ir_for(Expr *var, Expr *min, Expr *extent, ForKind k, Stmt *body) {
  if (!var || !min || !extent || !body) return NULL;
  KASSERT(var->kind == EK_Var);
  Stmt *s = mk(SK_For);
  s->for_.var = var;
  s->for_.min = min;
  s->for_.extent = extent;
  s->for_.fkind = k;
  s->for_.body = body;
  return s;
}

Stmt *ir_store(Expr *buf, Expr *value, Expr *index) {
  if (!buf || !value || !index) return NULL;
  KASSERT(buf->kind == EK_Var);
  Stmt *s = mk(SK_Store);
  s->store.buf = buf;
  s->store.value = value;
  s->store.index = index;
  return s;
}

Stmt *ir_provide(Tensor *t, Expr *value, int n, Expr **idx) {
  if (!t || !value) return NULL;
  for (int i = 0; i < n; i++)
    if (!idx[i]) return NULL;
  Stmt *s = mk(SK_Provide);
  s->provide.tensor = t;
  s->provide.value = value;
  s->provide.n = n;
  s->provide.idx = kmemdup(idx, sizeof(Expr *) * (size_t)n);
  return s;
}

Stmt *ir_allocate(Expr *buf, DType t, Expr *size, const char *scope, Stmt *body) {
  if (!buf || !size || !body) return NULL;
  Stmt *s = mk(SK_Allocate);
  s->alloc.buf = buf;
  s->alloc.dtype = t;
  s->alloc.size = size;
  s->alloc.scope = scope ? scope : "global";
  s->alloc.body = body;
  return s;
}

Stmt *ir_realize(Tensor *t, int n, Expr **min, Expr **extent, const char *scope, Stmt *body) {
  if (!t || !body) return NULL;
  Stmt *s = mk(SK_Realize);
  s->realize.tensor = t;
  s->realize.n = n;
  s->realize.min = kmemdup(min, sizeof(Expr *) * (size_t)n);
  s->realize.extent = kmemdup(extent, sizeof(Expr *) * (size_t)n);
  s->realize.scope = scope ? scope : "global";
  s->realize.body = body;
  return s;
}

Stmt *ir_if(Expr *cond, Stmt *then_, Stmt *else_) {
  if (!cond || !then_) return NULL;
  Stmt *s = mk(SK_IfThenElse);
  s->if_.cond = cond;
  s->if_.then_ = then_;
  s->if_.else_ = else_;
  return s;
}

Stmt *ir_nop(void) { return ir_evaluate(ir_i32(0)); }

bool ir_is_nop(const Stmt *s) {
  if (!s) return true;
  if (s->kind == SK_Evaluate) return ir_is_const(s->eval.value);
  if (s->kind == SK_Seq) return s->seq.n == 0;
  return false;
}

Stmt *ir_seq(int n, Stmt **v) {
  PtrVec flat = {0};
  for (int i = 0; i < n; i++) {
    Stmt *s = v[i];
    if (!s || ir_is_nop(s)) continue;
    if (s->kind == SK_Seq)
      for (int j = 0; j < s->seq.n; j++) pv_push(&flat, s->seq.s[j]);
    else
      pv_push(&flat, s);
  }
  Stmt *r;
  if (flat.len == 0)
    r = ir_nop();
  else if (flat.len == 1)
    r = flat.data[0];
  else {
    r = mk(SK_Seq);
    r->seq.n = flat.len;
    r->seq.s = (Stmt **)pv_to_arena(&flat);
  }
  pv_free(&flat);
  return r;
}

Stmt *ir_seq2(Stmt *a, Stmt *b) {
  Stmt *v[2] = {a, b};
  return ir_seq(2, v);
}

Stmt *ir_evaluate(Expr *e) {
  if (!e) return NULL;
  Stmt *s = mk(SK_Evaluate);
  s->eval.value = e;
  return s;
}

Stmt *ir_attr(const char *key, void *node, Expr *value, Stmt *body) {
  if (!body) return NULL;
  Stmt *s = mk(SK_Attr);
  s->attr.key = kstrdup(key);
  s->attr.node = node;
  s->attr.value = value;
  s->attr.body = body;
  return s;
}

Stmt *ir_produce(Tensor *t, Stmt *body) {
  if (!t || !body) return NULL;
  Stmt *s = mk(SK_Produce);
  s->produce.tensor = t;
  s->produce.body = body;
  return s;
}

Stmt *ir_let_stmt(Expr *var, Expr *value, Stmt *body) {
  if (!var || !value || !body) return NULL;
  Stmt *s = mk(SK_LetStmt);
  s->let.var = var;
  s->let.value = value;
  s->let.body = body;
  return s;
}
