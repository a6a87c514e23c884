/*
 * lower.c - the lowering pipeline, one readable list of passes, and the
 * LoweredFunc it produces.
 *
 * Lowering works on a private copy of the schedule (so a schedule can be
 * lowered repeatedly and scheduled further afterwards).  With dump_after
 * set to a pass name (or "all"), the IR after that pass goes to stderr.
 */
#include "lower.h"

#include <stdlib.h>
#include <string.h>

/* The passes, in order: the names dump_after (and --dump-after) take. */
static const char *const pass_names[] = {"schedule_ops", "flatten", "simplify", "vectorize", "unroll",
                                         "simplify2", "remove_noop", "unswitch", "combine_loads", "hoist_divmod",
                                         "small_parallel", "vthread", "split_host_device", NULL};

const char *const *lower_pass_names(void) { return pass_names; }

/* After each pass: the IR's invariants (verify.c) in debug builds and the
 * tests, then the dump. */
typedef struct After {
  const LowerOptions *opt;
  LoweredFunc *f;
  bool verify;
} After;

static int after(After *a, const char *pass, Stmt *s, bool flattened) {
  if (!s) return -1;
  a->f->body = s;
  if (a->verify && ir_verify(a->f, pass, flattened)) return -1;
  const LowerOptions *opt = a->opt;
  if (opt && opt->dump_after && (!strcmp(opt->dump_after, "all") || !strcmp(opt->dump_after, pass)))
    fprintf(stderr, "// after %s in %s\n%s\n", pass, a->f->name, ir_stmt_str(s));
  return 0;
}

static int check_args(Schedule *s, int nargs, Tensor **args) {
  for (int i = 0; i < nargs; i++) {
    if (!args[i] || args[i]->okind != KOBJ_TENSOR) return kiln_set_error("argument %d is not a tensor", i);
    for (int j = 0; j < i; j++)
      if (args[j] == args[i])
        return kiln_set_error("tensor '%s' appears twice in the argument list", args[i]->name);
    if (!lower_stage_of(s, args[i]))
      return kiln_set_error("argument '%s' is not part of the schedule", args[i]->name);
  }
  return 0;
}

LoweredFunc *kiln_lower(Schedule *s, int nargs, Tensor **args, const char *name,
                        const LowerOptions *opt) {
  static const LowerOptions defaults = {0};
  if (!opt) opt = &defaults;
  if (!s || s->okind != KOBJ_SCHEDULE) return kiln_set_error("lower: not a schedule"), NULL;
  if (check_args(s, nargs, args)) return NULL;
  const char *dump_env = getenv("KILN_DUMP_LOWER");
  LowerOptions o = *opt;
  if (!o.dump_after && dump_env && *dump_env) o.dump_after = dump_env;

  Schedule *c = sch_copy(s);
  if (lower_inline(c)) return NULL;
  Bounds b;
  if (lower_infer_bounds(c, nargs, args, &b)) {
    lower_bounds_free(&b);
    return NULL;
  }
  Stmt *body = lower_schedule_ops(c, &b, nargs, args);
  lower_bounds_free(&b);
  if (!body) return NULL;
  LoweredFunc *f = KNEW(LoweredFunc);
  f->okind = KOBJ_FUNC;
  f->name = kstrdup(name ? name : "default_function");
  f->nargs = nargs;
  f->args = kmemdup(args, sizeof(Tensor *) * (size_t)nargs);
  f->arg_bufs = KNEWN(Expr *, nargs > 0 ? nargs : 1);
  for (int i = 0; i < nargs; i++) f->arg_bufs[i] = ir_var(args[i]->name, DT_HANDLE);
  After a = {&o, f, kiln_verify_enabled()};
  if (after(&a, "schedule_ops", body, false)) return NULL;
  if (o.no_vector) body = lower_scalarize(body); /* plain C99: vectorized loops stay loops */
  if (after(&a, "flatten", lower_flatten(body, c, nargs, args, f->arg_bufs), true) ||
      after(&a, "simplify", ir_simplify_stmt(f->body), true) ||
      after(&a, "vectorize", lower_vectorize(f->body, &f->notes), true) ||
      after(&a, "unroll", lower_unroll(f->body, o.auto_unroll_max_step), true) ||
      after(&a, "simplify2", ir_simplify_stmt(f->body), true) ||
      after(&a, "remove_noop", lower_remove_noop(f->body), true))
    return NULL;
  /* a GPU target: virtual threads, then host and kernels with barriers;
   * the CPU: tail guards unswitched, byte loads combined into words, a
   * loop variable's quotients and remainders bound once per iteration,
   * small parallel loops serial when asked */
  bool gpu = o.device_type && o.device_type != kDLCPU;
  if (!gpu && (after(&a, "unswitch", lower_unswitch(f->body), true) ||
               after(&a, "combine_loads", lower_combine_loads(f->body, f), true) ||
               after(&a, "hoist_divmod", lower_hoist_divmod(f->body), true) ||
               (o.serial_small_parallel && after(&a, "small_parallel", lower_small_parallel(f->body), true))))
    return NULL;
  f->device_type = gpu ? o.device_type : kDLCPU;
  f->gpu_arch = o.gpu_arch ? kstrdup(o.gpu_arch) : NULL;
  if (gpu && after(&a, "vthread", lower_inject_virtual_thread(f->body), true)) return NULL;
  if (gpu) {
    /* host and kernels are separate functions from here: dumped, not
     * verified as one */
    a.verify = false;
    if (lower_split_host_device(f, &o) || after(&a, "split_host_device", f->body, true)) return NULL;
  }
  return f;
}

/* A GPU function prints as TVM prints one: the host body, then each
 * kernel's body under its name and launch extents. */
const char *kiln_lowered_str(LoweredFunc *f) {
  if (!f->nkernels) return ir_stmt_str(f->body);
  StrBuf sb = {0};
  sb_puts(&sb, ir_stmt_str(f->body));
  for (int i = 0; i < f->nkernels; i++) {
    DeviceKernel *k = f->kernels[i];
    sb_printf(&sb, "// kernel %s(", k->name);
    for (int p = 0; p < k->nparams; p++)
      sb_printf(&sb, "%s%s: %s%s", p ? ", " : "", k->params[p]->var.name, dt_str(k->ptype[p]),
                dt_is_handle(k->params[p]->dtype) ? "*" : "");
    sb_puts(&sb, ")");
    for (int t = 0; t < TAG__COUNT; t++)
      if (!ir_is_int_value(k->extent[t], 1)) sb_printf(&sb, " %s=%s", lower_thread_tag_names[t], ir_expr_str(k->extent[t]));
    if (k->shared_bytes) sb_printf(&sb, " shared=%lldB", (long long)k->shared_bytes);
    sb_puts(&sb, "\n");
    sb_puts(&sb, ir_stmt_str(k->body));
  }
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}
