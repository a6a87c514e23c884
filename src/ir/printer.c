/*
 * printer.c - the IR as text, in the shape of TVM 0.6's IR printer.
 *
 * Golden tests, --dump-after and error messages all read this text, so it
 * must be stable: every binary node is fully parenthesized (no precedence
 * rules to get wrong), constants print their type unless it is the default
 * (int32, float32 with an "f" suffix), and statements print one per line with
 * nested bodies indented by two spaces.  Scoping statements that TVM prints
 * without braces (Allocate, Attr, LetStmt) print their body at the same
 * indent.  A NULL node prints as "<null>" rather than crashing, because the
 * printer is what one reaches for when debugging a half-built tree.
 */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static void print_int(StrBuf *sb, Expr *e) {
  DType t = e->dtype;
  if (dt_eq(t, DT_I32)) {
    sb_printf(sb, "%lld", (long long)e->int_value);
    return;
  }
  if (dt_is_bool(t)) {
    sb_printf(sb, "(bool)%d", e->int_value != 0);
    return;
  }
  if (t.code == kDLUInt)
    sb_printf(sb, "(%s)%llu", dt_str(t), (unsigned long long)(uint64_t)e->int_value);
  else
    sb_printf(sb, "(%s)%lld", dt_str(t), (long long)e->int_value);
}

/* "%.9g" (float32) or "%.17g" (float64) rounds trip exactly; float64 always
 * shows a '.' or an exponent so it cannot be mistaken for an integer. */
static void print_float(StrBuf *sb, Expr *e) {
  double v = e->float_value;
  bool f64 = e->dtype.bits == 64;
  if (!f64 && e->dtype.bits != 32) sb_printf(sb, "(%s)", dt_str(e->dtype));
  char buf[64];
  if (isnan(v))
    snprintf(buf, sizeof buf, "nan");
  else if (isinf(v))
    snprintf(buf, sizeof buf, "%sinf", v < 0 ? "-" : "");
  else {
    snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", v);
    if (f64 && !strpbrk(buf, ".e")) strcat(buf, ".0");
  }
  sb_puts(sb, buf);
  if (!f64) sb_putc(sb, 'f');
}

static void print_str(StrBuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      sb_printf(sb, "\\%c", *s);
    else if (*s == '\n')
      sb_puts(sb, "\\n");
    else
      sb_putc(sb, *s);
  }
  sb_putc(sb, '"');
}

/* Operators printed infix; the other binary kinds print as calls. */
static const char *const infix_op[EK__COUNT] = {
    [EK_Add] = " + ", [EK_Sub] = " - ", [EK_Mul] = "*",     [EK_Div] = "/",
    [EK_Mod] = " % ", [EK_EQ] = " == ", [EK_NE] = " != ",   [EK_LT] = " < ",
    [EK_LE] = " <= ", [EK_GT] = " > ",  [EK_GE] = " >= ",   [EK_And] = " && ",
    [EK_Or] = " || ",
};

static const char *reduce_name(ReduceKind k) {
  switch (k) {
  case RED_SUM: return "sum";
  case RED_PROD: return "prod";
  case RED_MAX: return "max";
  case RED_MIN: return "min";
  case RED_CUSTOM: return "custom";
  }
  return "?";
}

static void print_args(StrBuf *sb, int n, Expr **a) {
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(sb, ", ");
    ir_print_expr(sb, a[i]);
  }
}

static void print_call2(StrBuf *sb, const char *name, Expr *a, Expr *b) {
  sb_printf(sb, "%s(", name);
  ir_print_expr(sb, a);
  sb_puts(sb, ", ");
  ir_print_expr(sb, b);
  sb_putc(sb, ')');
}

void ir_print_expr(StrBuf *sb, Expr *e) {
  if (!e) {
    sb_puts(sb, "<null>");
    return;
  }
  switch (e->kind) {
  case EK_IntImm:
    print_int(sb, e);
    return;
  case EK_FloatImm:
    print_float(sb, e);
    return;
  case EK_StrImm:
    print_str(sb, e->str);
    return;
  case EK_Var:
    sb_puts(sb, e->var.name);
    return;
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
  case EK_And:
  case EK_Or:
    sb_putc(sb, '(');
    ir_print_expr(sb, e->bin.a);
    sb_puts(sb, infix_op[e->kind]);
    ir_print_expr(sb, e->bin.b);
    sb_putc(sb, ')');
    return;
  case EK_FloorDiv:
    print_call2(sb, "floordiv", e->bin.a, e->bin.b);
    return;
  case EK_FloorMod:
    print_call2(sb, "floormod", e->bin.a, e->bin.b);
    return;
  case EK_Min:
    print_call2(sb, "min", e->bin.a, e->bin.b);
    return;
  case EK_Max:
    print_call2(sb, "max", e->bin.a, e->bin.b);
    return;
  case EK_Not:
    sb_putc(sb, '!');
    ir_print_expr(sb, e->bin.a);
    return;
  case EK_Select:
    sb_puts(sb, "select(");
    ir_print_expr(sb, e->select.cond);
    sb_puts(sb, ", ");
    ir_print_expr(sb, e->select.t);
    sb_puts(sb, ", ");
    ir_print_expr(sb, e->select.f);
    sb_putc(sb, ')');
    return;
  case EK_Cast:
    sb_printf(sb, "%s(", dt_str(e->dtype));
    ir_print_expr(sb, e->bin.a);
    sb_putc(sb, ')');
    return;
  case EK_Call:
    sb_printf(sb, "%s(", intrin_name(e->call.op));
    print_args(sb, e->call.nargs, e->call.args);
    sb_putc(sb, ')');
    return;
  case EK_Read:
    sb_printf(sb, "%s[", ir_tensor_name(e->read.tensor));
    print_args(sb, e->read.n, e->read.idx);
    sb_putc(sb, ']');
    return;
  case EK_Load:
    ir_print_expr(sb, e->load.buf);
    sb_putc(sb, '[');
    ir_print_expr(sb, e->load.index);
    sb_putc(sb, ']');
    return;
  case EK_Ramp:
    sb_puts(sb, "ramp(");
    ir_print_expr(sb, e->ramp.base);
    sb_puts(sb, ", ");
    ir_print_expr(sb, e->ramp.stride);
    sb_printf(sb, ", %d)", e->ramp.lanes);
    return;
  case EK_Broadcast:
    sb_printf(sb, "x%d(", e->bcast.lanes);
    ir_print_expr(sb, e->bcast.value);
    sb_putc(sb, ')');
    return;
  case EK_Let:
    sb_puts(sb, "(let ");
    ir_print_expr(sb, e->let.var);
    sb_puts(sb, " = ");
    ir_print_expr(sb, e->let.value);
    sb_puts(sb, " in ");
    ir_print_expr(sb, e->let.body);
    sb_putc(sb, ')');
    return;
  case EK_Reduce:
    sb_printf(sb, "reduce(%s, ", reduce_name(e->reduce.comb->kind));
    ir_print_expr(sb, e->reduce.source);
    sb_puts(sb, ", axis=[");
    for (int i = 0; i < e->reduce.naxis; i++) {
      if (i) sb_puts(sb, ", ");
      ir_print_expr(sb, e->reduce.axis[i]->var);
    }
    sb_putc(sb, ']');
    if (e->reduce.cond) {
      sb_puts(sb, ", where=");
      ir_print_expr(sb, e->reduce.cond);
    }
    sb_putc(sb, ')');
    return;
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* The node of an Attr: an IterVar, a Var, a Tensor or nothing; all of them
 * start with their KObjKind tag. */
static void print_attr_node(StrBuf *sb, void *node) {
  if (!node) return;
  switch (*(KObjKind *)node) {
  case KOBJ_ITERVAR:
    sb_puts(sb, "iter_var(");
    ir_print_expr(sb, ((IterVar *)node)->var);
    sb_putc(sb, ')');
    return;
  case KOBJ_EXPR:
    ir_print_expr(sb, node);
    return;
  case KOBJ_TENSOR:
    sb_puts(sb, ir_tensor_name(node));
    return;
  case KOBJ_NONE:
  case KOBJ_STMT:
  case KOBJ_STAGE:
  case KOBJ_SCHEDULE:
  case KOBJ_FUNC:
  case KOBJ_REDUCER:
    break;
  }
  sb_puts(sb, "?");
}

static void line_expr(StrBuf *sb, int indent, Expr *e) {
  sb_indent(sb, indent);
  ir_print_expr(sb, e);
  sb_putc(sb, '\n');
}

void ir_print_stmt(StrBuf *sb, Stmt *s, int indent) {
  if (!s) {
    sb_indent(sb, indent);
    sb_puts(sb, "<null>\n");
    return;
  }
  switch (s->kind) {
  case SK_For:
    sb_indent(sb, indent);
    if (s->for_.fkind == FOR_THREAD && s->for_.thread_tag)
      sb_printf(sb, "thread %s (", s->for_.thread_tag);
    else
      sb_printf(sb, "%s (", for_kind_name(s->for_.fkind));
    ir_print_expr(sb, s->for_.var);
    sb_puts(sb, ", ");
    ir_print_expr(sb, s->for_.min);
    sb_puts(sb, ", ");
    ir_print_expr(sb, s->for_.extent);
    sb_puts(sb, ") {\n");
    ir_print_stmt(sb, s->for_.body, indent + 2);
    sb_indent(sb, indent);
    sb_puts(sb, "}\n");
    return;
  case SK_Store:
    sb_indent(sb, indent);
    ir_print_expr(sb, s->store.buf);
    sb_putc(sb, '[');
    ir_print_expr(sb, s->store.index);
    sb_puts(sb, "] = ");
    ir_print_expr(sb, s->store.value);
    sb_putc(sb, '\n');
    return;
  case SK_Provide:
    sb_indent(sb, indent);
    sb_printf(sb, "%s[", ir_tensor_name(s->provide.tensor));
    print_args(sb, s->provide.n, s->provide.idx);
    sb_puts(sb, "] = ");
    ir_print_expr(sb, s->provide.value);
    sb_putc(sb, '\n');
    return;
  case SK_Allocate:
    sb_indent(sb, indent);
    sb_puts(sb, "allocate ");
    ir_print_expr(sb, s->alloc.buf);
    sb_printf(sb, "[%s * ", dt_str(s->alloc.dtype));
    ir_print_expr(sb, s->alloc.size);
    sb_puts(sb, "]\n");
    ir_print_stmt(sb, s->alloc.body, indent);
    return;
  case SK_Realize:
    sb_indent(sb, indent);
    sb_printf(sb, "realize %s(", ir_tensor_name(s->realize.tensor));
    for (int i = 0; i < s->realize.n; i++) {
      sb_puts(sb, i ? ", [" : "[");
      ir_print_expr(sb, s->realize.min[i]);
      sb_puts(sb, ", ");
      ir_print_expr(sb, s->realize.extent[i]);
      sb_putc(sb, ']');
    }
    sb_puts(sb, ") {\n");
    ir_print_stmt(sb, s->realize.body, indent + 2);
    sb_indent(sb, indent);
    sb_puts(sb, "}\n");
    return;
  case SK_IfThenElse:
    sb_indent(sb, indent);
    sb_puts(sb, "if (");
    ir_print_expr(sb, s->if_.cond);
    sb_puts(sb, ") {\n");
    ir_print_stmt(sb, s->if_.then_, indent + 2);
    if (s->if_.else_) {
      sb_indent(sb, indent);
      sb_puts(sb, "} else {\n");
      ir_print_stmt(sb, s->if_.else_, indent + 2);
    }
    sb_indent(sb, indent);
    sb_puts(sb, "}\n");
    return;
  case SK_Seq:
    for (int i = 0; i < s->seq.n; i++) ir_print_stmt(sb, s->seq.s[i], indent);
    return;
  case SK_Evaluate:
    line_expr(sb, indent, s->eval.value);
    return;
  case SK_Attr:
    sb_indent(sb, indent);
    sb_puts(sb, "// attr [");
    print_attr_node(sb, s->attr.node);
    sb_printf(sb, "] %s = ", s->attr.key);
    if (s->attr.value) ir_print_expr(sb, s->attr.value);
    sb_putc(sb, '\n');
    if (!ir_is_nop(s->attr.body)) ir_print_stmt(sb, s->attr.body, indent); /* a marker: a launch, a barrier */
    return;
  case SK_Produce:
    sb_indent(sb, indent);
    sb_printf(sb, "produce %s {\n", ir_tensor_name(s->produce.tensor));
    ir_print_stmt(sb, s->produce.body, indent + 2);
    sb_indent(sb, indent);
    sb_puts(sb, "}\n");
    return;
  case SK_LetStmt:
    sb_indent(sb, indent);
    sb_puts(sb, "let ");
    ir_print_expr(sb, s->let.var);
    sb_puts(sb, " = ");
    ir_print_expr(sb, s->let.value);
    sb_putc(sb, '\n');
    ir_print_stmt(sb, s->let.body, indent);
    return;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

const char *ir_expr_str(Expr *e) {
  StrBuf sb = {0};
  ir_print_expr(&sb, e);
  char *heap = sb_steal(&sb);
  char *r = kstrdup(heap);
  free(heap);
  return r;
}

const char *ir_stmt_str(Stmt *s) {
  StrBuf sb = {0};
  ir_print_stmt(&sb, s, 0);
  char *heap = sb_steal(&sb);
  char *r = kstrdup(heap);
  free(heap);
  return r;
}
