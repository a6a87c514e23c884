/*
 * codegen_print.c - expression and statement printing shared by the C and
 * the GPU printers (codegen_print.h).
 */
#include "codegen_print.h"

#include <stdio.h>
#include <string.h>

void cgp_binary(ExprPrinter p, const char *op, Expr *a, Expr *b) {
  sb_putc(p.out, '(');
  p.expr(p.state, a);
  sb_printf(p.out, " %s ", op);
  p.expr(p.state, b);
  sb_putc(p.out, ')');
}

bool cgp_narrow_int(DType t) { return t.lanes == 1 && (t.code == kDLInt || t.code == kDLUInt) && t.bits >= 8 && t.bits < 32; }

bool cgp_intrin_wraps(Intrinsic op, DType t) {
  /* a signed << converts back itself (cgp_shift_left) */
  return cgp_narrow_int(t) &&
         ((op == INTRIN_shift_left && t.code == kDLUInt) || op == INTRIN_bitwise_not || op == INTRIN_fabs);
}

const char *cgp_shift_left(DType t, const char *a, const char *b, const char *(*type)(void *state, DType t),
                           void *state) {
  if (t.code != kDLInt) return kfmt("(%s << %s)", a, b);
  return kfmt("((%s)((%s)%s << %s))", type(state, t), type(state, dt_make(kDLUInt, t.bits > 32 ? 64 : 32, 1)), a, b);
}

void cgp_arith(ExprPrinter p, Expr *e, const char *ctype, const char *u32) {
  DType t = e->dtype;
  const char *op = cgp_binary_op(e->kind);
  if (!cgp_narrow_int(t)) {
    cgp_binary(p, op, e->bin.a, e->bin.b);
    return;
  }
  sb_printf(p.out, "((%s)", ctype);
  if (e->kind == EK_Mul && t.code == kDLUInt && t.bits == 16) {
    sb_printf(p.out, "((%s)", u32);
    p.expr(p.state, e->bin.a);
    sb_puts(p.out, " * ");
    p.expr(p.state, e->bin.b);
    sb_putc(p.out, ')');
  } else {
    cgp_binary(p, op, e->bin.a, e->bin.b);
  }
  sb_putc(p.out, ')');
}

void cgp_call(ExprPrinter p, const char *fn, int n, Expr **args) {
  sb_printf(p.out, "%s(", fn);
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(p.out, ", ");
    p.expr(p.state, args[i]);
  }
  sb_putc(p.out, ')');
}

static const char *const binary_ops[EK__COUNT] = {
    [EK_Add] = "+", [EK_Sub] = "-", [EK_Mul] = "*", [EK_Div] = "/",  [EK_Mod] = "%",  [EK_EQ] = "==", [EK_NE] = "!=",
    [EK_LT] = "<",  [EK_LE] = "<=", [EK_GT] = ">",  [EK_GE] = ">=", [EK_And] = "&&", [EK_Or] = "||",
};

const char *cgp_binary_op(ExprKind k) { return k >= 0 && k < EK__COUNT ? binary_ops[k] : NULL; }

bool cgp_floordiv_is_plain(Analyzer *an, Expr *e) {
  int64_t c, lo, hi;
  if (e->dtype.code == kDLUInt) return true;
  return ir_is_const_int(e->bin.b, &c) && c > 0 && analyzer_const_bound(an, e->bin.a, &lo, &hi) && lo >= 0;
}

void cgp_float_digits(char buf[64], double v, bool f32) {
  snprintf(buf, 64, f32 ? "%.9g" : "%.17g", v);
  if (!strpbrk(buf, ".e")) strcat(buf, ".0");
}

const char *cgp_int_floordiv_def(const char *qual, const char *tn, const char *name, bool is_mod) {
  if (is_mod)
    return kfmt("%s %s %s(%s a, %s b) { %s r = a %% b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n", qual,
                tn, name, tn, tn, tn);
  return kfmt("%s %s %s(%s a, %s b) { %s q = a / b; return ((a %% b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n",
              qual, tn, name, tn, tn, tn);
}

const char *cgp_float_floormod_def(const char *qual, const char *tn, const char *name, const char *floor_fn) {
  return kfmt("%s %s %s(%s a, %s b) { return a - %s(a / b) * b; }\n", qual, tn, name, tn, tn, floor_fn);
}

const char *cgp_minmax_def(const char *qual, const char *tn, const char *name, bool is_min) {
  return kfmt("%s %s %s(%s a, %s b) { return a %s b ? a : b; }\n", qual, tn, name, tn, tn, is_min ? "<" : ">");
}

/* Start a line at the printer's indentation and write text. */
static void line(StmtPrinter p, const char *text) {
  sb_indent(p.e.out, *p.indent);
  sb_puts(p.e.out, text);
}

static void nested(StmtPrinter p, Stmt *s) {
  *p.indent += 2;
  p.stmt(p.e.state, s);
  *p.indent -= 2;
}

bool cgp_stmt(StmtPrinter p, Stmt *s) {
  StrBuf *o = p.e.out;
  if (s->kind == SK_IfThenElse) {
    line(p, "if (");
    p.e.expr(p.e.state, s->if_.cond);
    sb_puts(o, ") {\n");
    nested(p, s->if_.then_);
    if (s->if_.else_ && !ir_is_nop(s->if_.else_)) {
      line(p, "} else {\n");
      nested(p, s->if_.else_);
    }
    line(p, "}\n");
  } else if (s->kind == SK_Seq) {
    for (int i = 0; i < s->seq.n; i++) p.stmt(p.e.state, s->seq.s[i]);
  } else if (s->kind == SK_Evaluate) {
    if (ir_is_const(s->eval.value)) return true;
    line(p, "(void)");
    p.e.expr(p.e.state, s->eval.value);
    sb_puts(o, ";\n");
  } else if (s->kind == SK_Produce) {
    line(p, "");
    sb_printf(o, "/* produce %s */\n", s->produce.tensor->name);
    p.stmt(p.e.state, s->produce.body);
  } else if (s->kind == SK_LetStmt) {
    line(p, "{\n");
    *p.indent += 2;
    line(p, "");
    sb_printf(o, "%s %s = ", p.type(p.e.state, s->let.var->dtype), p.name(p.e.state, s->let.var));
    p.e.expr(p.e.state, s->let.value);
    sb_puts(o, ";\n");
    p.stmt(p.e.state, s->let.body);
    *p.indent -= 2;
    line(p, "}\n");
  } else {
    return false;
  }
  return true;
}
