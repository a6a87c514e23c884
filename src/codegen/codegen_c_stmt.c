/*
 * codegen_c_stmt.c - statements of the C code generator.
 *
 * cgc_stmt prints one IR statement as C at g->indent.  Loops keep their
 * variables' names; a parallel loop is outlined into a static function
 * over a closure struct of its free variables and launched on the
 * runtime's thread pool (plain kernels: serial, OpenMP or pthreads);
 * allocations live on the stack, in the runtime's workspace, in a plain
 * kernel's scratch area, or in device memory for a GPU function's host
 * code, which also launches the device kernels.
 */
#include "codegen_c_internal.h"
#include "codegen_print.h"

#include <string.h>

void cgc_line(CG *g) { sb_indent(g->out, g->indent); }

/* The statement printer codegen_print.c's shared statements use. */
static void sub_stmt(void *g, Stmt *s) { cgc_stmt(g, s); }
static void sub_expr(void *g, Expr *e) { cgc_expr(g, e); }
static const char *var_type(void *g, DType t) { return cgc_ctype(g, t); }
static const char *var_name(void *g, Expr *v) { return cgc_vname(g, v); }

static StmtPrinter stmt_printer(CG *g) {
  return (StmtPrinter){{g->out, sub_expr, g}, &g->indent, sub_stmt, var_type, var_name};
}

void cgc_fv_expr(IRVisitor *v, Expr *e) {
  FreeVars *f = v->ud;
  if (e->kind == EK_Var) {
    if (!pm_has(&f->bound, e) && !pm_has(&f->seen, e)) {
      pm_put(&f->seen, e, e);
      av_push(&f->uses, e);
    }
    return;
  }
  if (e->kind == EK_Let) pm_put(&f->bound, e->let.var, e);
  ir_visit_expr_children(v, e);
}

void cgc_fv_stmt(IRVisitor *v, Stmt *s) {
  FreeVars *f = v->ud;
  if (s->kind == SK_For) pm_put(&f->bound, s->for_.var, s);
  if (s->kind == SK_LetStmt) pm_put(&f->bound, s->let.var, s);
  if (s->kind == SK_Allocate) pm_put(&f->bound, s->alloc.buf, s);
  ir_visit_stmt_children(v, s);
}

static const char *buf_ctype(CG *g, Expr *buf) {
  DType *t = pm_get(&g->buftype, buf);
  return t ? cgc_scalar_ctype(*t) : "void";
}

/* Outline a parallel loop into a closure function and launch it. */
static void parallel_for(CG *g, Stmt *s) {
  FreeVars fv = {{0}, {0}, {0}};
  IRVisitor v = {cgc_fv_expr, cgc_fv_stmt, &fv};
  ir_visit_stmt(&v, s);
  const char *fn = kfmt("%s_parallel_%d", g->fname, g->npar++);
  /* closure struct and function */
  StrBuf *saved = g->out;
  int saved_indent = g->indent;
  StrBuf body = {0};
  g->out = &body;
  sb_printf(&body, "typedef struct {\n");
  for (int i = 0; i < fv.uses.len; i++) {
    Expr *x = fv.uses.data[i];
    if (dt_is_handle(x->dtype))
      sb_printf(&body, "  %s *%s;\n", buf_ctype(g, x), cgc_vname(g, x));
    else
      sb_printf(&body, "  %s %s;\n", cgc_ctype(g, x->dtype), cgc_vname(g, x));
  }
  if (!fv.uses.len) sb_puts(&body, "  int unused;\n");
  sb_printf(&body, "} %s_closure;\n\n", fn);
  size_t sig_at = body.len;
  int outer_vmath = g->vmath_calls, outer_bf16 = g->bf16_calls;
  g->vmath_calls = g->bf16_calls = 0;
  sb_printf(&body, "static int %s(int kiln_task, int kiln_ntask, void *kiln_cdata) {\n", fn);
  sb_printf(&body, "  %s_closure *kiln_cl = (%s_closure *)kiln_cdata;\n", fn, fn);
  for (int i = 0; i < fv.uses.len; i++) {
    Expr *x = fv.uses.data[i];
    if (dt_is_handle(x->dtype))
      sb_printf(&body, "  %s *%s%s = kiln_cl->%s;\n", buf_ctype(g, x), g->restrict_, cgc_vname(g, x), cgc_vname(g, x));
    else
      sb_printf(&body, "  %s %s = kiln_cl->%s;\n", cgc_ctype(g, x->dtype), cgc_vname(g, x), cgc_vname(g, x));
  }
  if (!fv.uses.len) sb_puts(&body, "  (void)kiln_cl;\n");
  const char *lv = cgc_vname(g, s->for_.var);
  sb_puts(&body, "  int64_t kiln_n = ");
  cgc_expr(g, s->for_.extent);
  /* task k of m covers [k*n/m, (k+1)*n/m): shares differ by at most one */
  sb_puts(&body, ";\n  int64_t kiln_begin = kiln_n * kiln_task / kiln_ntask;\n"
                 "  int64_t kiln_end = kiln_n * (kiln_task + 1) / kiln_ntask;\n");
  sb_printf(&body, "  for (int32_t %s = (int32_t)kiln_begin; %s < (int32_t)kiln_end; ++%s) {\n", lv, lv, lv);
  g->indent = 4;
  /* the loop variable is offset by min */
  Stmt *inner = s->for_.body;
  if (!ir_is_int_value(s->for_.min, 0)) {
    Expr *nv = ir_var(s->for_.var->var.name, s->for_.var->dtype);
    inner = ir_substitute_stmt1(inner, s->for_.var, ir_add(nv, s->for_.min));
    inner = ir_let_stmt(nv, s->for_.var, inner);
  }
  analyzer_bind_range(g->an, s->for_.var, ir_i32(0), s->for_.extent);
  g->par_depth++;
  cgc_stmt(g, inner);
  g->par_depth--;
  sb_puts(&body, "  }\n  return 0;\n}\n\n");
  cgc_put_function(&g->outlined, body.data, sig_at, g);
  g->vmath_calls = outer_vmath;
  g->bf16_calls = outer_bf16;
  sb_free(&body);
  g->out = saved;
  g->indent = saved_indent;
  /* the launch */
  cgc_line(g);
  sb_printf(g->out, "{ /* parallel loop over %s */\n", s->for_.var->var.name);
  g->indent += 2;
  cgc_line(g);
  sb_printf(g->out, "%s_closure kiln_cl = {", fn);
  for (int i = 0; i < fv.uses.len; i++)
    sb_printf(g->out, "%s%s", i ? ", " : "", cgc_vname(g, fv.uses.data[i]));
  if (!fv.uses.len) sb_puts(g->out, "0");
  sb_puts(g->out, "};\n");
  cgc_line(g);
  sb_printf(g->out, "if (kiln_parallel(%s, &kiln_cl)) return -1;\n", fn);
  g->indent -= 2;
  cgc_line(g);
  sb_puts(g->out, "}\n");
  pm_free(&fv.bound);
  pm_free(&fv.seen);
}

#define STACK_ALLOC_LIMIT (64 * 1024)
#define PARALLEL_STACK_LIMIT (256 * 1024) /* plain kernels: a task's own buffer on a thread's stack */

/* Plain kernels: an allocation of up to dialect->stack_bytes lives on the
 * stack; a larger one is a slice of the kernel's scratch area (the
 * caller's workspace), free again when its scope ends, so the kernel's
 * scratch need is the deepest nesting of slices.  Inside a parallel loop
 * run by several threads every task needs a buffer of its own, so there
 * the stack is the only place (up to PARALLEL_STACK_LIMIT). */
static void plain_alloc(CG *g, Stmt *s, const char *b, const char *ct, int esz) {
  StrBuf *o = g->out;
  int64_t n;
  const char *what = s->alloc.buf->var.name;
  if (!ir_is_const_int(s->alloc.size, &n)) {
    cgc_fail(g, "standalone C: the size of buffer '%s' is not a constant (every shape must be static)", what);
    return;
  }
  if (n < 1) n = 1;
  int64_t bytes = n * esz;
  bool per_task = g->par_depth > 0 && g->dialect->threads != CTHREADS_NONE;
  if (bytes <= g->dialect->stack_bytes || per_task) {
    if (bytes > PARALLEL_STACK_LIMIT) {
      cgc_fail(g, "standalone C: buffer '%s' is allocated inside a parallel loop and is too large for a thread's "
              "stack; export with --threads none",
           what);
      return;
    }
    sb_printf(o, "%s %s[%lld] KILN_ALIGN64;\n", ct, b, (long long)n);
    return;
  }
  int64_t off = (g->scratch_off + 63) & ~(int64_t)63;
  sb_printf(o, "%s *restrict %s = (%s *)(void *)(kiln_scratch + %lld); /* %lld bytes of scratch */\n", ct, b, ct,
            (long long)off, (long long)bytes);
  g->scratch_off = off + bytes;
  if (g->scratch_off > g->scratch_max) g->scratch_max = g->scratch_off;
}

/* Plain kernels: a parallel loop without threads is a serial loop; with
 * OpenMP it is a serial loop under `omp parallel for`; with pthreads it is
 * outlined as for the module ABI (false: the caller does that). */
static bool plain_parallel(CG *g, Stmt *s) {
  if (!g->dialect || g->dialect->threads == CTHREADS_PTHREADS) return false;
  Stmt *serial = ir_for(s->for_.var, s->for_.min, s->for_.extent, FOR_SERIAL, s->for_.body);
  /* OpenMP wants its canonical loop form: constant bounds here (else the
   * loop runs serially, still correct) */
  bool canonical = ir_is_const_int(s->for_.min, NULL) && ir_is_const_int(s->for_.extent, NULL);
  if (g->dialect->threads == CTHREADS_OPENMP && g->par_depth == 0 && canonical) {
    cgc_line(g);
    sb_puts(g->out, "#pragma omp parallel for schedule(static)\n");
  }
  g->par_depth++;
  cgc_stmt(g, serial);
  g->par_depth--;
  return true;
}

/* A GPU function's host code: launch kernel `name` (Attr "device_launch")
 * with its parameters and launch extents through the runtime's pointer. */
static void device_launch(CG *g, Stmt *s) {
  StrBuf *o = g->out;
  const char *name = s->attr.value->str;
  DeviceKernel *k = NULL;
  int index = 0;
  for (int i = 0; g->f && i < g->f->nkernels; i++)
    if (!strcmp(g->f->kernels[i]->name, name)) {
      k = g->f->kernels[i];
      index = g->kernel_base + i;
    }
  if (!k) {
    cgc_fail(g, "codegen: launch of unknown kernel '%s'", name);
    return;
  }
  cgc_line(g);
  sb_printf(o, "{ /* launch %s */\n", name);
  g->indent += 2;
  cgc_line(g);
  sb_printf(o, "KilnValue kargs[%d];\n", k->nparams > 0 ? k->nparams : 1);
  for (int p = 0; p < k->nparams; p++) {
    Expr *v = k->params[p];
    cgc_line(g);
    if (dt_is_handle(v->dtype))
      sb_printf(o, "kargs[%d].v_handle = (void *)%s;\n", p, cgc_vname(g, v));
    else if (dt_is_float(v->dtype))
      sb_printf(o, "kargs[%d].v_float64 = (double)%s;\n", p, cgc_vname(g, v));
    else
      sb_printf(o, "kargs[%d].v_int64 = (int64_t)%s;\n", p, cgc_vname(g, v));
  }
  cgc_line(g);
  sb_puts(o, "const int64_t kext[6] = {");
  for (int t = 0; t < TAG__COUNT; t++) {
    if (t) sb_puts(o, ", ");
    sb_puts(o, "(int64_t)(");
    cgc_expr(g, k->extent[t]);
    sb_putc(o, ')');
  }
  sb_puts(o, "};\n");
  cgc_line(g);
  sb_printf(o, "if (kiln_device_launch(kiln_dev_id, %d, kext, kargs, %d)) return -1;\n", index, k->nparams);
  g->indent -= 2;
  cgc_line(g);
  sb_puts(o, "}\n");
}

/* A global buffer of a GPU function (between two kernels): device memory
 * for the duration of the body. */
static void device_alloc(CG *g, Stmt *s) {
  StrBuf *o = g->out;
  const char *b = cgc_vname(g, s->alloc.buf);
  DType *et = KNEW(DType);
  *et = s->alloc.dtype;
  pm_put(&g->buftype, s->alloc.buf, et);
  int esz = dt_is_bool(*et) ? 1 : dt_bytes(*et);
  int label = g->ndev++;
  cgc_line(g);
  sb_printf(o, "{ /* allocate %s (device) */\n", s->alloc.buf->var.name);
  g->indent += 2;
  cgc_line(g);
  sb_printf(o, "void *%s = kiln_device_alloc(kiln_dev_id, (uint64_t)(", b);
  cgc_expr(g, s->alloc.size);
  sb_printf(o, ") * %d);\n", esz);
  cgc_line(g);
  sb_printf(o, "if (!%s) return -1;\n", b);
  cgc_line(g);
  sb_printf(o, "int kiln_rc_%d = 0;\n", label);
  /* a failing launch inside jumps to the free, so the buffer never leaks */
  StrBuf inner = {0};
  StrBuf *saved = g->out;
  g->out = &inner;
  cgc_stmt(g, s->alloc.body);
  g->out = saved;
  const char *text = inner.data ? inner.data : "";
  for (const char *p = text; *p;) {
    const char *hit = strstr(p, "return -1;");
    if (!hit) {
      sb_puts(o, p);
      break;
    }
    sb_putn(o, p, (size_t)(hit - p));
    sb_printf(o, "{ kiln_rc_%d = -1; goto kiln_free_%d; }", label, label);
    p = hit + strlen("return -1;");
  }
  sb_free(&inner);
  sb_printf(o, "kiln_free_%d:\n", label);
  cgc_line(g);
  sb_printf(o, "kiln_device_free(kiln_dev_id, %s);\n", b);
  cgc_line(g);
  sb_printf(o, "if (kiln_rc_%d) return -1;\n", label);
  g->indent -= 2;
  cgc_line(g);
  sb_puts(o, "}\n");
}

void cgc_stmt(CG *g, Stmt *s) {
  StrBuf *o = g->out;
  switch (s->kind) {
  case SK_For: {
    if (s->for_.fkind == FOR_THREAD) {
      cgc_fail(g, "loop '%s' is bound to a GPU thread axis; thread-bound loops need a GPU target",
           s->for_.var->var.name);
      return;
    }
    if (s->for_.fkind == FOR_PARALLEL && plain_parallel(g, s)) return;
    if (s->for_.fkind == FOR_PARALLEL) {
      parallel_for(g, s);
      return;
    }
    const char *v = cgc_vname(g, s->for_.var);
    analyzer_bind_range(g->an, s->for_.var, s->for_.min, s->for_.extent);
    if (s->for_.fkind == FOR_UNROLLED) {
      int64_t n = 0;
      ir_is_const_int(s->for_.extent, &n);
      cgc_line(g);
      if (g->dialect)
        sb_printf(o, "KILN_UNROLL(%lld)\n", (long long)(n > 0 ? n : 8));
      else
        sb_printf(o, "#pragma GCC unroll %lld\n", (long long)(n > 0 ? n : 8));
    }
    cgc_line(g);
    int64_t mn, ex;
    if (ir_is_const_int(s->for_.min, &mn) && ir_is_const_int(s->for_.extent, &ex)) {
      sb_printf(o, "for (int32_t %s = %lld; %s < %lld; ++%s) {\n", v, (long long)mn, v, (long long)(mn + ex), v);
    } else {
      const char *end = cgc_unique_name(g, kfmt("%s_end", v));
      sb_printf(o, "for (int32_t %s = ", v);
      cgc_expr(g, s->for_.min);
      sb_printf(o, ", %s = %s + ", end, v);
      cgc_expr(g, s->for_.extent);
      sb_printf(o, "; %s < %s; ++%s) {\n", v, end, v);
    }
    g->indent += 2;
    cgc_stmt(g, s->for_.body);
    g->indent -= 2;
    cgc_line(g);
    sb_puts(o, "}\n");
    return;
  }
  case SK_Store: {
    const char *buf = cgc_vname(g, s->store.buf);
    Expr *idx = s->store.index, *val = s->store.value;
    DType *et = pm_get(&g->buftype, s->store.buf);
    cgc_line(g);
    /* a reinterpreting store (ir.h): a vector of words of r elements each */
    bool words = et && !dt_is_bool(*et) && dt_is_intlike(*et) && dt_is_intlike(val->dtype) && et->bits < val->dtype.bits;
    int r = words ? val->dtype.bits / et->bits : 1;
    if (words && (val->dtype.lanes == 1 || idx->kind != EK_Ramp || !ir_is_int_value(idx->ramp.stride, r))) {
      cgc_fail(g, "a reinterpreting store (%s) needs a vector value and a ramp index of its word's stride",
               dt_str(val->dtype));
      return;
    }
    if (val->dtype.lanes == 1) {
      sb_printf(o, "%s[", buf);
      cgc_expr(g, idx);
      sb_puts(o, "] = ");
      cgc_expr(g, val);
      sb_puts(o, ";\n");
      return;
    }
    bool boolbuf = et && dt_is_bool(*et);
    if (words || (cgc_is_contiguous_ramp(idx) && !boolbuf)) {
      sb_printf(o, "*(%su *)(%s + ", cgc_ctype(g, val->dtype), buf);
      cgc_expr(g, idx->ramp.base);
      sb_puts(o, ") = ");
      cgc_expr(g, val);
      sb_puts(o, ";\n");
      return;
    }
    /* a scatter, one lane at a time */
    const char *vt = cgc_ctype(g, val->dtype), *it = cgc_ctype(g, idx->dtype);
    const char *ect = et ? cgc_scalar_ctype(*et) : cgc_scalar_ctype(dt_scalar(val->dtype));
    const char *name = kfmt("kiln_scatter_%s_%s", vt + 3, it + 3);
    cgc_need(g, name,
         kfmt("static inline void %s(%s *p, %s i, %s v) {\n  for (int l = 0; l < %d; l++) p[i[l]] = "
              "(%s)%s;\n}\n",
              name, ect, it, vt, val->dtype.lanes, ect, boolbuf ? "(v[l] & 1)" : "v[l]"));
    sb_printf(o, "%s(%s, ", name, buf);
    cgc_expr(g, idx);
    sb_puts(o, ", ");
    cgc_expr(g, val);
    sb_puts(o, ");\n");
    return;
  }
  case SK_Allocate: {
    if (g->f && g->f->device_type != kDLCPU) {
      device_alloc(g, s);
      return;
    }
    const char *b = cgc_vname(g, s->alloc.buf);
    DType *et = KNEW(DType);
    *et = s->alloc.dtype;
    pm_put(&g->buftype, s->alloc.buf, et);
    const char *ct = cgc_scalar_ctype(dt_scalar(s->alloc.dtype));
    int64_t n;
    int esz = dt_is_bool(*et) ? 1 : et->bits / 8;
    cgc_line(g);
    sb_printf(o, "{ /* allocate %s (%s) */\n", s->alloc.buf->var.name, s->alloc.scope);
    g->indent += 2;
    cgc_line(g);
    if (g->dialect) {
      plain_alloc(g, s, b, ct, esz);
    } else if (ir_is_const_int(s->alloc.size, &n) && n * esz <= STACK_ALLOC_LIMIT) {
      sb_printf(o, "%s %s[%lld] __attribute__((aligned(64)));\n", ct, b, (long long)(n > 0 ? n : 1));
    } else {
      sb_printf(o, "%s *%s __attribute__((cleanup(kiln_free_ptr))) = (%s *)kiln_alloc((size_t)(", ct, b, ct);
      cgc_expr(g, s->alloc.size);
      sb_printf(o, ") * %d);\n", esz);
      cgc_line(g);
      sb_printf(o, "if (!%s) { kiln_error(\"%s: out of memory allocating %s\"); return -1; }\n", b, g->fname,
                s->alloc.buf->var.name);
    }
    int64_t scratch_saved = g->scratch_off; /* the slice is free again after the scope */
    cgc_stmt(g, s->alloc.body);
    g->scratch_off = scratch_saved;
    g->indent -= 2;
    cgc_line(g);
    sb_puts(o, "}\n");
    return;
  }
  CGP_STMT_CASES:
    if (s->kind == SK_LetStmt) { /* the bound of a let's value holds for its variable (a hoisted f / c) */
      int64_t lo, hi;
      if (dt_is_int(s->let.var->dtype) && s->let.var->dtype.lanes == 1 && analyzer_const_bound(g->an, s->let.value, &lo, &hi))
        analyzer_bind_const(g->an, s->let.var, lo, hi);
    }
    cgp_stmt(stmt_printer(g), s);
    return;
  case SK_Attr:
    if (!strcmp(s->attr.key, "device_launch")) {
      device_launch(g, s);
      return;
    }
    if (!strncmp(s->attr.key, "pragma_", 7)) {
      cgc_line(g);
      sb_printf(o, "/* %s */\n", s->attr.key);
    }
    cgc_stmt(g, s->attr.body);
    return;
  case SK_Provide:
  case SK_Realize:
    cgc_fail(g, "codegen: %s reached code generation (storage was not flattened)", stmt_kind_name(s->kind));
    return;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}
