/*
 * split_host_device.c - host/device split for a GPU function, with thread
 * extent inference and the target's limits.
 *
 * After flattening, a GPU function's body is host code around loop nests
 * bound to blockIdx/threadIdx.  Walking the host code, the outermost loop
 * bound to a thread starts a kernel: that loop and everything inside it
 * become the kernel's body, and the host keeps an Attr "device_launch"
 * (value: the kernel's name) in its place.  So serial loops outside the
 * thread loops stay on the host and launch the kernel once per iteration,
 * as TVM's SplitHostDevice does, and global intermediates (Allocates on
 * the host) become device memory the host allocates.
 *
 * Thread extent inference: every loop bound to one tag in a kernel shares
 * that hardware index; the launch extent of a tag is the loops' common
 * extent, or the largest when they are constants that differ (the shorter
 * loops are then guarded by `index < extent`).  Launch extents are host
 * expressions: they may use argument shapes and host loop variables, never
 * a variable of the kernel.  A kernel's parameters are the free variables
 * of its body: buffers (with their element types) first, then scalars.
 *
 * Errors say what to change: a Store outside every kernel is a stage with
 * no thread-bound loop (it would run on the host); a shared or local buffer
 * must have a constant size and live inside a kernel; a global buffer
 * cannot be allocated inside one; threads per block and shared memory per
 * block must fit the target.
 */
#include "lower.h"

#include <string.h>

const char *const lower_thread_tag_names[TAG__COUNT] = {
    "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

int lower_thread_tag(const char *tag) {
  for (int i = 0; tag && i < TAG__COUNT; i++)
    if (!strcmp(tag, lower_thread_tag_names[i])) return i;
  return -1;
}

typedef struct Split {
  LoweredFunc *f;
  const LowerOptions *opt;
  PtrMap elem;       /* buffer Var -> DType * (arguments and host allocations) */
  const char *stage; /* the stage whose code is being walked */
  int failed;
} Split;

static int fail(Split *sp) {
  sp->failed = 1;
  return -1;
}

/* ---- what a kernel uses ---- */

typedef struct KScan {
  PtrMap bound;   /* vars bound inside the kernel */
  PtrMap seen;
  AVec free_vars; /* in first-use order */
  AVec loops[TAG__COUNT]; /* thread-bound For statements, per tag */
  AVec allocs;    /* Allocate statements */
  const char *bad_tag;
} KScan;

static void ks_expr(IRVisitor *v, Expr *e) {
  KScan *k = v->ud;
  if (e->kind == EK_Var) {
    if (!pm_has(&k->bound, e) && !pm_has(&k->seen, e)) {
      pm_put(&k->seen, e, e);
      av_push(&k->free_vars, e);
    }
    return;
  }
  if (e->kind == EK_Let) pm_put(&k->bound, e->let.var, e);
  ir_visit_expr_children(v, e);
}

static void ks_stmt(IRVisitor *v, Stmt *s) {
  KScan *k = v->ud;
  switch (s->kind) {
  case SK_For:
    pm_put(&k->bound, s->for_.var, s);
    if (s->for_.fkind == FOR_THREAD) {
      int t = lower_thread_tag(s->for_.thread_tag);
      if (t < 0)
        k->bad_tag = s->for_.thread_tag ? s->for_.thread_tag : "(none)";
      else
        av_push(&k->loops[t], s);
    }
    break;
  case SK_LetStmt:
    pm_put(&k->bound, s->let.var, s);
    break;
  case SK_Allocate:
    pm_put(&k->bound, s->alloc.buf, s);
    av_push(&k->allocs, s);
    break;
  default:
    break;
  }
  ir_visit_stmt_children(v, s);
}

static bool uses_bound(KScan *k, Expr *e) { return ir_expr_uses_any(e, &k->bound); }

static const char *tag_list(KScan *k, Expr **ext) {
  StrBuf sb = {0};
  for (int t = TAG_THREAD_X; t <= TAG_THREAD_Z; t++)
    if (k->loops[t].len)
      sb_printf(&sb, "%s%s = %s", sb.len ? " x " : "", lower_thread_tag_names[t], ir_expr_str(ext[t]));
  const char *r = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return r;
}

/* A buffer's position among f's arguments (nargs for any other var). */
static int arg_rank(LoweredFunc *f, const Expr *v) {
  for (int i = 0; i < f->nargs; i++)
    if (f->arg_bufs[i] == v) return i;
  return f->nargs;
}

static Stmt *make_kernel(Split *sp, Stmt *loop) {
  LoweredFunc *f = sp->f;
  const char *kname = kfmt("%s_kernel%d", f->name, f->nkernels);
  KScan k;
  memset(&k, 0, sizeof k);
  IRVisitor vis = {ks_expr, ks_stmt, &k};
  ir_visit_stmt(&vis, loop);
  if (k.bad_tag) {
    kiln_set_error("kernel '%s' (stage '%s'): unknown thread tag '%s'", kname, sp->stage, k.bad_tag);
    fail(sp);
    return NULL;
  }
  DeviceKernel *dk = KNEW(DeviceKernel);
  dk->name = kname;
  dk->body = loop;
  /* launch extents */
  for (int t = 0; t < TAG__COUNT; t++) {
    dk->extent[t] = ir_i32(1);
    if (!k.loops[t].len) continue;
    Expr *ext = NULL;
    int64_t best = -1;
    bool all_const = true, all_same = true;
    for (int i = 0; i < k.loops[t].len; i++) {
      Stmt *l = k.loops[t].data[i];
      Expr *e = ir_simplify(l->for_.extent);
      int64_t c;
      if (!ir_is_int_value(l->for_.min, 0)) {
        kiln_set_error("kernel '%s': loop '%s' bound to %s does not start at 0", kname,
                       l->for_.var->var.name, lower_thread_tag_names[t]);
        fail(sp);
        return NULL;
      }
      if (uses_bound(&k, e)) {
        kiln_set_error("kernel '%s' (stage '%s'): the extent of %s (%s) depends on a loop inside "
                       "the kernel; bind loops whose extents are fixed before the kernel starts",
                       kname, sp->stage, lower_thread_tag_names[t], ir_expr_str(e));
        fail(sp);
        return NULL;
      }
      if (ir_is_const_int(e, &c)) {
        if (c > best) best = c;
      } else {
        all_const = false;
      }
      if (!ext)
        ext = e;
      else if (!ir_expr_equal(ext, e))
        all_same = false;
    }
    if (!all_same && !all_const) {
      kiln_set_error("kernel '%s': loops bound to %s have different extents (%s and others) that "
                     "are not constants; bind loops of one extent to each thread tag",
                     kname, lower_thread_tag_names[t], ir_expr_str(ext));
      fail(sp);
      return NULL;
    }
    dk->extent[t] = all_same ? ext : ir_i32(best);
  }
  /* threads per block */
  int64_t limit = sp->opt->max_threads_per_block > 0 ? sp->opt->max_threads_per_block : 1024;
  int64_t threads = 1;
  bool known = true;
  for (int t = TAG_THREAD_X; t <= TAG_THREAD_Z; t++) {
    int64_t c;
    if (ir_is_const_int(dk->extent[t], &c))
      threads *= c;
    else
      known = false;
  }
  if (known && threads > limit) {
    kiln_set_error("kernel '%s' (stage '%s'): %lld threads per block (%s) exceed the target's "
                   "limit of %lld (max_threads_per_block); bind smaller split factors to "
                   "threadIdx",
                   kname, sp->stage, (long long)threads, tag_list(&k, dk->extent), (long long)limit);
    fail(sp);
    return NULL;
  }
  /* buffers of the kernel */
  for (int i = 0; i < k.allocs.len; i++) {
    Stmt *a = k.allocs.data[i];
    const char *scope = a->alloc.scope ? a->alloc.scope : "global";
    int64_t n;
    if (!strcmp(scope, "global")) {
      kiln_set_error("kernel '%s': buffer '%s' is in global scope but computed inside the "
                     "kernel's thread loops; give it scope \"shared\" or \"local\" (cache_read, "
                     "cache_write or set_scope) or compute it at the root with its own binding",
                     kname, a->alloc.buf->var.name);
      fail(sp);
      return NULL;
    }
    if (!ir_is_const_int(ir_simplify(a->alloc.size), &n)) {
      kiln_set_error("kernel '%s': %s buffer '%s' has a size that is not a constant (%s); a GPU "
                     "kernel's shared and local buffers need constant sizes",
                     kname, scope, a->alloc.buf->var.name, ir_expr_str(a->alloc.size));
      fail(sp);
      return NULL;
    }
    if (!strcmp(scope, "shared"))
      dk->shared_bytes += n * (dt_is_bool(a->alloc.dtype) ? 1 : dt_bytes(a->alloc.dtype));
  }
  int64_t smax = sp->opt->max_shared_bytes > 0 ? sp->opt->max_shared_bytes : 48 * 1024;
  if (dk->shared_bytes > smax) {
    kiln_set_error("kernel '%s' (stage '%s'): %lld bytes of shared memory per block exceed the "
                   "target's %lld (max_shared_memory_per_block); make the tiles cached in "
                   "shared memory smaller",
                   kname, sp->stage, (long long)dk->shared_bytes, (long long)smax);
    fail(sp);
    return NULL;
  }
  /* parameters: buffers in the function's argument order (then host
   * buffers in order of use), then scalars */
  for (int i = 1; i < k.free_vars.len; i++)
    for (int j = i; j > 0 && arg_rank(f, k.free_vars.data[j]) < arg_rank(f, k.free_vars.data[j - 1]); j--) {
      void *t = k.free_vars.data[j];
      k.free_vars.data[j] = k.free_vars.data[j - 1];
      k.free_vars.data[j - 1] = t;
    }
  dk->params = KNEWN(Expr *, k.free_vars.len + 1);
  dk->ptype = KNEWN(DType, k.free_vars.len + 1);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < k.free_vars.len; i++) {
      Expr *v = k.free_vars.data[i];
      if (dt_is_handle(v->dtype) != (pass == 0)) continue;
      DType t = v->dtype;
      if (pass == 0) {
        DType *et = pm_get(&sp->elem, v);
        if (!et) {
          kiln_set_error("kernel '%s': buffer '%s' has no known element type", kname, v->var.name);
          fail(sp);
          return NULL;
        }
        t = *et;
      }
      dk->params[dk->nparams] = v;
      dk->ptype[dk->nparams++] = t;
    }
  pm_free(&k.bound);
  pm_free(&k.seen);
  if (lower_thread_sync(dk)) {
    fail(sp);
    return NULL;
  }
  DeviceKernel **ks = KNEWN(DeviceKernel *, f->nkernels + 1);
  if (f->nkernels) memcpy(ks, f->kernels, sizeof(DeviceKernel *) * (size_t)f->nkernels);
  ks[f->nkernels++] = dk;
  f->kernels = ks;
  return ir_attr("device_launch", NULL, ir_str(kname), ir_nop());
}

/* ---- the host walk ---- */

static Stmt *host(Split *sp, Stmt *s);

static Stmt *host_stmt(IRMutator *m, Stmt *s) {
  Split *sp = m->ud;
  if (sp->failed) return s;
  switch (s->kind) {
  case SK_For:
    if (s->for_.fkind == FOR_THREAD) return make_kernel(sp, s);
    return ir_mutate_stmt_children(m, s);
  case SK_Store:
    kiln_set_error("stage '%s' has no loop bound to a GPU thread, so it would run on the host; "
                   "bind its outer loops, e.g. s[%s].bind(xo, te.thread_axis(\"blockIdx.x\")) and "
                   "s[%s].bind(xi, te.thread_axis(\"threadIdx.x\"))",
                   sp->stage, sp->stage, sp->stage);
    fail(sp);
    return s;
  case SK_Allocate: {
    const char *scope = s->alloc.scope ? s->alloc.scope : "global";
    if (strcmp(scope, "global")) {
      kiln_set_error("buffer '%s' in %s scope is allocated outside every kernel (its stage is "
                     "computed at the root); compute it at a loop inside the thread-bound loops "
                     "of its consumer (compute_at)",
                     s->alloc.buf->var.name, scope);
      fail(sp);
      return s;
    }
    DType *et = KNEW(DType);
    *et = s->alloc.dtype;
    pm_put(&sp->elem, s->alloc.buf, et);
    return ir_mutate_stmt_children(m, s);
  }
  case SK_Produce: {
    const char *saved = sp->stage;
    sp->stage = s->produce.tensor->name;
    Stmt *r = ir_mutate_stmt_children(m, s);
    sp->stage = saved;
    return r;
  }
  case SK_Provide:
  case SK_Realize:
  case SK_IfThenElse:
  case SK_Seq:
  case SK_Evaluate:
  case SK_Attr:
  case SK_LetStmt:
    return ir_mutate_stmt_children(m, s);
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

static Stmt *host(Split *sp, Stmt *s) {
  IRMutator m = {NULL, host_stmt, sp};
  return ir_mutate_stmt(&m, s);
}

int lower_split_host_device(LoweredFunc *f, const LowerOptions *opt) {
  Split sp;
  memset(&sp, 0, sizeof sp);
  sp.f = f;
  sp.opt = opt;
  sp.stage = f->name;
  for (int i = 0; i < f->nargs; i++) {
    DType *et = KNEW(DType);
    *et = f->args[i]->dtype;
    pm_put(&sp.elem, f->arg_bufs[i], et);
  }
  Stmt *body = host(&sp, f->body);
  pm_free(&sp.elem);
  if (sp.failed || !body) return -1;
  f->body = body;
  return 0;
}

bool lower_thread_loop_full(const DeviceKernel *k, const Stmt *loop) {
  int t = lower_thread_tag(loop->for_.thread_tag);
  return t >= 0 && ir_expr_equal(ir_simplify(loop->for_.extent), k->extent[t]);
}
