/*
 * space.c - knobs, config spaces and config entities, and their JSON.
 *
 * A knob stores every choice explicitly, enumerated in the order AutoTVM's
 * TransformSpace subclasses use, so a config index means the same config
 * in both systems:
 *   split      the candidate factors ascending; for N parts a DFS over
 *              N - 1 factors whose entity is [-1] + reversed(stack), so the
 *              part next to the remainder varies fastest and the innermost
 *              slowest (TVM's SplitSpace._generate_space);
 *   reorder    identity, or itertools.permutations order;
 *   annotate   DFS over the axes, the first axis slowest;
 *   other      the candidate list.
 * The index of a config is mixed radix over the knobs in declaration order,
 * the first knob least significant (ConfigSpace.get).
 *
 * JSON is written in Python's json.dumps style (", " separators) so that
 * records Kiln writes look like AutoTVM's; cJSON reads.
 */
#include "knob.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_code(KnobKind k) {
  switch (k) {
  case KNOB_SPLIT:
    return "sp";
  case KNOB_REORDER:
    return "re";
  case KNOB_ANNOTATE:
    return "an";
  case KNOB_OTHER:
    return "ot";
  }
  KUNREACHABLE();
}

/* ---- spaces ---- */

void space_init(ConfigSpace *cs) { memset(cs, 0, sizeof *cs); }

static Knob *add_knob(ConfigSpace *cs, const char *name, KnobKind kind) {
  if (!name || !*name) return kiln_set_error("config space: a knob needs a name"), NULL;
  if (space_knob(cs, name)) return kiln_set_error("config space: knob '%s' defined twice", name), NULL;
  if (cs->nknobs == cs->cap) {
    int cap = cs->cap ? cs->cap * 2 : 8;
    Knob *nk = KNEWN(Knob, cap);
    if (cs->nknobs) memcpy(nk, cs->knobs, sizeof(Knob) * (size_t)cs->nknobs);
    cs->knobs = nk;
    cs->cap = cap;
  }
  Knob *k = &cs->knobs[cs->nknobs++];
  memset(k, 0, sizeof *k);
  k->name = kstrdup(name);
  k->kind = kind;
  return k;
}

const Knob *space_knob(const ConfigSpace *cs, const char *name) {
  for (int i = 0; i < cs->nknobs; i++)
    if (!strcmp(cs->knobs[i].name, name)) return &cs->knobs[i];
  return NULL;
}

/* A growable list of entities for one knob. */
typedef struct EList {
  KnobEntity *e;
  int64_t n, cap;
} EList;

static KnobEntity *el_push(EList *l) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? l->cap * 2 : 16;
    KnobEntity *ne = KNEWN(KnobEntity, cap);
    if (l->n) memcpy(ne, l->e, sizeof(KnobEntity) * (size_t)l->n);
    l->e = ne;
    l->cap = cap;
  }
  KnobEntity *e = &l->e[l->n++];
  memset(e, 0, sizeof *e);
  return e;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* TVM's get_factors (sorted divisors) and get_pow2s. */
static int get_factors(int64_t n, int64_t *out) {
  int k = 0;
  for (int64_t i = 1; i * i <= n; i++)
    if (n % i == 0) {
      out[k++] = i;
      if (i != n / i) out[k++] = n / i;
    }
  qsort(out, (size_t)k, sizeof(int64_t), cmp_i64);
  return k;
}

static int get_pow2s(int64_t n, int64_t *out) {
  int k = 0;
  for (int64_t p = 1; p <= n; p *= 2) out[k++] = p;
  return k;
}

typedef struct SplitGen {
  const int64_t *factors;
  int nfactors, nparts;
  int64_t extent;
  bool no_tail;
  int64_t *stack;
  EList *out;
  const char *name;
} SplitGen;

static void split_dfs(SplitGen *g, int now) {
  if (now == g->nparts - 1) {
    int64_t prod = 1;
    for (int i = 0; i < now; i++) prod *= g->stack[i];
    if (prod > g->extent) return;
    if (g->extent % prod == 0 || (!g->no_tail && prod < g->extent)) {
      KnobEntity *e = el_push(g->out);
      e->kind = KNOB_SPLIT;
      e->name = g->name;
      e->n = g->nparts;
      e->ints = KNEWN(int64_t, g->nparts);
      e->ints[0] = -1;
      for (int i = 1; i < g->nparts; i++) e->ints[i] = g->stack[g->nparts - 1 - i];
    }
    return;
  }
  for (int f = 0; f < g->nfactors; f++) {
    g->stack[now] = g->factors[f];
    split_dfs(g, now + 1);
  }
}

int space_define_split(ConfigSpace *cs, const char *name, int64_t extent, const SplitOpts *opt) {
  SplitOpts o = opt ? *opt : (SplitOpts){0};
  const char *policy = o.policy ? o.policy : "factors";
  if (o.nparts == 0) o.nparts = 2;
  if (o.nparts < 2 || o.nparts > 8)
    return kiln_set_error("define_split '%s': %d parts (expected 2 to 8)", name, o.nparts);
  if (extent < 1) return kiln_set_error("define_split '%s': extent %lld", name, (long long)extent);
  EList l = {0};
  const char *kname = kstrdup(name);
  if (!strcmp(policy, "candidate")) {
    for (int c = 0; c < o.ncand; c++) {
      KnobEntity *e = el_push(&l);
      e->kind = KNOB_SPLIT;
      e->name = kname;
      e->n = o.nparts;
      e->ints = kmemdup(o.cand + (size_t)c * (size_t)o.nparts, sizeof(int64_t) * (size_t)o.nparts);
      e->ints[0] = -1;
    }
  } else {
    /* room for every divisor (at most 2 sqrt(n)) and every power of two */
    int64_t room = 2 * (int64_t)sqrt((double)extent) + 130;
    if (room > (1 << 20)) return kiln_set_error("define_split '%s': extent %lld is too large", name, (long long)extent);
    int64_t *f1 = KNEWN(int64_t, 2 * room), *f2 = f1 + room;
    int nf = 0;
    if (!strcmp(policy, "factors")) {
      nf = get_factors(extent, f1);
    } else if (!strcmp(policy, "power2")) {
      nf = get_pow2s(extent, f1);
    } else if (!strcmp(policy, "verbose")) {
      int a = get_factors(extent, f1), b = get_pow2s(extent, f2);
      for (int i = 0; i < b; i++) {
        bool dup = false;
        for (int j = 0; j < a; j++) dup |= f1[j] == f2[i];
        if (!dup) f1[a++] = f2[i];
      }
      nf = a;
      qsort(f1, (size_t)nf, sizeof(int64_t), cmp_i64);
    } else {
      return kiln_set_error("define_split '%s': unknown policy '%s' (expected factors, power2, "
                            "verbose or candidate)",
                            name, policy);
    }
    int k = 0;
    for (int i = 0; i < nf; i++)
      if (!o.max_factor || f1[i] <= o.max_factor) f1[k++] = f1[i];
    nf = k;
    bool no_tail = o.tail == SPLIT_TAIL_DEFAULT ? !strcmp(policy, "factors") : o.tail == SPLIT_TAIL_FORBID;
    SplitGen g = {f1, nf, o.nparts, extent, no_tail, KNEWN(int64_t, o.nparts), &l, kname};
    split_dfs(&g, 0);
    /* extra choices after the generated ones, so theirs keep their places */
    int64_t ngen = l.n;
    for (int c = 0; c < o.ncand; c++) {
      const int64_t *cand = o.cand + (size_t)c * (size_t)o.nparts;
      bool dup = false;
      for (int64_t i = 0; i < ngen && !dup; i++)
        dup = !memcmp(l.e[i].ints + 1, cand + 1, sizeof(int64_t) * (size_t)(o.nparts - 1));
      if (dup) continue;
      KnobEntity *e = el_push(&l);
      e->kind = KNOB_SPLIT;
      e->name = kname;
      e->n = o.nparts;
      e->ints = kmemdup(cand, sizeof(int64_t) * (size_t)o.nparts);
      e->ints[0] = -1;
    }
  }
  if (o.filter) {
    int64_t k = 0;
    for (int64_t i = 0; i < l.n; i++)
      if (o.filter(l.e[i].ints, l.e[i].n, o.filter_ud)) l.e[k++] = l.e[i];
    l.n = k;
  }
  if (l.n == 0) return kiln_set_error("define_split '%s': no choice left for extent %lld", name, (long long)extent);
  Knob *kb = add_knob(cs, name, KNOB_SPLIT);
  if (!kb) return -1;
  kb->extent = extent;
  kb->policy = kstrdup(policy);
  kb->nchoices = l.n;
  kb->choices = l.e;
  return 0;
}

static bool next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) {
    t = a[l];
    a[l] = a[r];
    a[r] = t;
  }
  return true;
}

int space_define_reorder(ConfigSpace *cs, const char *name, int naxes, const char *policy,
                         int ncand, const int *cand) {
  if (naxes < 1 || naxes > 10) return kiln_set_error("define_reorder '%s': %d axes", name, naxes);
  EList l = {0};
  const char *kname = kstrdup(name);
  int *perm = KNEWN(int, naxes);
  for (int i = 0; i < naxes; i++) perm[i] = i;
  if (!policy || !strcmp(policy, "identity") || !strcmp(policy, "all")) {
    bool all = policy && !strcmp(policy, "all");
    do {
      KnobEntity *e = el_push(&l);
      e->kind = KNOB_REORDER;
      e->name = kname;
      e->n = naxes;
      e->ints = KNEWN(int64_t, naxes);
      for (int i = 0; i < naxes; i++) e->ints[i] = perm[i];
    } while (all && next_perm(perm, naxes));
  } else if (!strcmp(policy, "candidate")) {
    for (int c = 0; c < ncand; c++) {
      KnobEntity *e = el_push(&l);
      e->kind = KNOB_REORDER;
      e->name = kname;
      e->n = naxes;
      e->ints = KNEWN(int64_t, naxes);
      unsigned seen = 0;
      for (int i = 0; i < naxes; i++) {
        int p = cand[c * naxes + i];
        if (p < 0 || p >= naxes || (seen >> p & 1))
          return kiln_set_error("define_reorder '%s': candidate %d is not a permutation of 0..%d", name, c,
                                naxes - 1);
        seen |= 1u << p;
        e->ints[i] = p;
      }
    }
  } else {
    return kiln_set_error("define_reorder '%s': unknown policy '%s' (expected identity, all or candidate)",
                          name, policy);
  }
  if (l.n == 0) return kiln_set_error("define_reorder '%s': no candidates", name);
  Knob *kb = add_knob(cs, name, KNOB_REORDER);
  if (!kb) return -1;
  kb->policy = kstrdup(policy ? policy : "identity");
  kb->nchoices = l.n;
  kb->choices = l.e;
  return 0;
}

typedef struct AnnGen {
  int naxes;
  const char *const *opts;
  int nopts;
  const char **stack;
  EList *out;
  const char *name;
} AnnGen;

static void ann_dfs(AnnGen *g, int now) {
  if (now == g->naxes) {
    int vec = 0;
    for (int i = 0; i < g->naxes; i++) vec += !strcmp(g->stack[i], "vec");
    if (vec > 1 || (vec == 1 && strcmp(g->stack[g->naxes - 1], "vec"))) return;
    KnobEntity *e = el_push(g->out);
    e->kind = KNOB_ANNOTATE;
    e->name = g->name;
    e->n = g->naxes;
    e->anns = kmemdup(g->stack, sizeof(char *) * (size_t)g->naxes);
    return;
  }
  for (int i = 0; i < g->nopts; i++) {
    g->stack[now] = g->opts[i];
    ann_dfs(g, now + 1);
  }
}

int space_define_annotate(ConfigSpace *cs, const char *name, int naxes, const char *policy,
                          int ncand, const char *const *cand) {
  if (naxes < 1 || naxes > 10) return kiln_set_error("define_annotate '%s': %d axes", name, naxes);
  EList l = {0};
  const char *kname = kstrdup(name);
  static const char *const unroll[] = {"none", "unroll"}, *const unroll_vec[] = {"none", "unroll", "vec"};
  if (policy && (!strcmp(policy, "try_unroll") || !strcmp(policy, "try_unroll_vec"))) {
    bool vec = !strcmp(policy, "try_unroll_vec");
    AnnGen g = {naxes, vec ? unroll_vec : unroll, vec ? 3 : 2, KNEWN(const char *, naxes), &l, kname};
    ann_dfs(&g, 0);
  } else if (policy && !strcmp(policy, "candidate")) {
    for (int c = 0; c < ncand; c++) {
      KnobEntity *e = el_push(&l);
      e->kind = KNOB_ANNOTATE;
      e->name = kname;
      e->n = naxes;
      e->anns = KNEWN(const char *, naxes);
      for (int i = 0; i < naxes; i++) e->anns[i] = kstrdup(cand[c * naxes + i]);
    }
  } else {
    return kiln_set_error("define_annotate '%s': unknown policy '%s' (expected try_unroll, "
                          "try_unroll_vec or candidate)",
                          name, policy ? policy : "(null)");
  }
  if (l.n == 0) return kiln_set_error("define_annotate '%s': no candidates", name);
  Knob *kb = add_knob(cs, name, KNOB_ANNOTATE);
  if (!kb) return -1;
  kb->policy = kstrdup(policy);
  kb->nchoices = l.n;
  kb->choices = l.e;
  return 0;
}

int space_define_knob(ConfigSpace *cs, const char *name, int ncand, const OptVal *cand) {
  if (ncand < 1) return kiln_set_error("define_knob '%s': no candidates", name);
  Knob *kb = add_knob(cs, name, KNOB_OTHER);
  if (!kb) return -1;
  kb->policy = "candidate";
  kb->nchoices = ncand;
  kb->choices = KNEWN(KnobEntity, ncand);
  for (int i = 0; i < ncand; i++) {
    kb->choices[i].name = kb->name;
    kb->choices[i].kind = KNOB_OTHER;
    kb->choices[i].val = cand[i];
    if (cand[i].kind == OPT_STR) kb->choices[i].val.s = kstrdup(cand[i].s);
  }
  return 0;
}

int64_t space_size(const ConfigSpace *cs) {
  int64_t n = 1;
  for (int i = 0; i < cs->nknobs; i++) {
    if (n > INT64_MAX / cs->knobs[i].nchoices) return INT64_MAX;
    n *= cs->knobs[i].nchoices;
  }
  return n;
}

ConfigEntity *space_get(const ConfigSpace *cs, int64_t index) {
  int64_t size = space_size(cs);
  if (index < 0 || index >= size)
    return kiln_set_error("config index %lld is outside the space (size %lld)", (long long)index, (long long)size),
           NULL;
  ConfigEntity *cfg = config_new();
  cfg->index = index;
  int64_t t = index;
  for (int i = 0; i < cs->nknobs; i++) {
    const Knob *k = &cs->knobs[i];
    config_set(cfg, &k->choices[t % k->nchoices]);
    t /= k->nchoices;
  }
  return cfg;
}

static bool ann_equal(const KnobEntity *a, const KnobEntity *b) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->anns[i], b->anns[i])) return false;
  return true;
}

static bool opt_equal(OptVal a, OptVal b) {
  /* a bool and an int of the same value match (TVM's True == 1) */
  if (a.kind == OPT_STR || b.kind == OPT_STR) return a.kind == b.kind && !strcmp(a.s, b.s);
  return a.i == b.i;
}

static const char *entity_text(const KnobEntity *e);

/* Does entity e (from a config) pick choice c of knob k? */
static bool entity_matches(const Knob *k, const KnobEntity *c, const KnobEntity *e) {
  if (e->kind != k->kind || e->n != c->n) return false;
  switch (k->kind) {
  case KNOB_SPLIT:
    for (int i = 1; i < e->n; i++)
      if (e->ints[i] != c->ints[i]) return false;
    return true;
  case KNOB_REORDER:
    for (int i = 0; i < e->n; i++)
      if (e->ints[i] != c->ints[i]) return false;
    return true;
  case KNOB_ANNOTATE:
    return ann_equal(c, e);
  case KNOB_OTHER:
    return opt_equal(c->val, e->val);
  }
  KUNREACHABLE();
}

int64_t space_index_of(const ConfigSpace *cs, const ConfigEntity *cfg) {
  int64_t index = 0, radix = 1;
  for (int i = 0; i < cs->nknobs; i++) {
    const Knob *k = &cs->knobs[i];
    const KnobEntity *e = config_get(cfg, k->name);
    if (!e) return kiln_set_error("config has no value for knob '%s'", k->name), -1;
    if (e->kind != k->kind)
      return kiln_set_error("knob '%s': config gives a '%s' entity, the space a '%s' knob", k->name,
                            kind_code(e->kind), kind_code(k->kind)),
             -1;
    if (k->kind == KNOB_SPLIT && e->n >= 1 && e->ints[0] != -1) {
      int64_t inner = 1;
      for (int j = 1; j < e->n; j++) inner *= e->ints[j] > 0 ? e->ints[j] : 1;
      int64_t want = (k->extent + inner - 1) / inner;
      if (e->ints[0] != want)
        return kiln_set_error("knob '%s': %s does not split extent %lld (the outer part should be %lld "
                              "or -1)",
                              k->name, entity_text(e), (long long)k->extent, (long long)want),
               -1;
    }
    int64_t c = 0;
    while (c < k->nchoices && !entity_matches(k, &k->choices[c], e)) c++;
    if (c == k->nchoices)
      return kiln_set_error("knob '%s': %s is not one of its %lld choices (%s)", k->name, entity_text(e),
                            (long long)k->nchoices, space_knob_desc(k)),
             -1;
    if (radix > 0 && c > (INT64_MAX - index) / radix) return kiln_set_error("config index overflows"), -1;
    index += c * radix;
    if (radix > INT64_MAX / k->nchoices) radix = 0; /* later knobs must all pick 0 */
    else radix *= k->nchoices;
  }
  return index;
}

const char *space_knob_desc(const Knob *k) {
  StrBuf sb = {0};
  switch (k->kind) {
  case KNOB_SPLIT:
    sb_printf(&sb, "split of %lld into %d parts, policy %s", (long long)k->extent, k->choices[0].n, k->policy);
    break;
  case KNOB_REORDER:
    sb_printf(&sb, "reorder of %d axes, policy %s", k->choices[0].n, k->policy);
    break;
  case KNOB_ANNOTATE:
    sb_printf(&sb, "annotation of %d axes, policy %s", k->choices[0].n, k->policy);
    break;
  case KNOB_OTHER:
    sb_puts(&sb, "one of ");
    for (int64_t i = 0; i < k->nchoices && i < 8; i++) sb_printf(&sb, "%s%s", i ? ", " : "", entity_text(&k->choices[i]));
    if (k->nchoices > 8) sb_puts(&sb, ", ...");
    break;
  }
  char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return s;
}

/* ---- configs ---- */

ConfigEntity *config_new(void) {
  ConfigEntity *c = KNEW(ConfigEntity);
  c->index = -1;
  return c;
}

static KnobEntity *slot(ConfigEntity *cfg, const char *name) {
  for (int i = 0; i < cfg->n; i++)
    if (!strcmp(cfg->e[i].name, name)) return &cfg->e[i];
  if (cfg->n == cfg->cap) {
    int cap = cfg->cap ? cfg->cap * 2 : 8;
    KnobEntity *ne = KNEWN(KnobEntity, cap);
    if (cfg->n) memcpy(ne, cfg->e, sizeof(KnobEntity) * (size_t)cfg->n);
    cfg->e = ne;
    cfg->cap = cap;
  }
  KnobEntity *e = &cfg->e[cfg->n++];
  memset(e, 0, sizeof *e);
  e->name = kstrdup(name);
  return e;
}

KnobEntity *config_set(ConfigEntity *cfg, const KnobEntity *src) {
  KnobEntity *e = slot(cfg, src->name);
  const char *name = e->name;
  *e = *src;
  e->name = name;
  if (src->ints) e->ints = kmemdup(src->ints, sizeof(int64_t) * (size_t)src->n);
  if (src->anns) e->anns = kmemdup(src->anns, sizeof(char *) * (size_t)src->n);
  return e;
}

KnobEntity *config_set_split(ConfigEntity *cfg, const char *name, int n, const int64_t *sizes) {
  KnobEntity e = {name, KNOB_SPLIT, n, (int64_t *)sizes, NULL, {0}};
  return config_set(cfg, &e);
}

KnobEntity *config_set_other(ConfigEntity *cfg, const char *name, OptVal v) {
  KnobEntity e = {name, KNOB_OTHER, 0, NULL, NULL, v};
  if (v.kind == OPT_STR) e.val.s = kstrdup(v.s);
  return config_set(cfg, &e);
}

const KnobEntity *config_get(const ConfigEntity *cfg, const char *name) {
  for (int i = 0; cfg && i < cfg->n; i++)
    if (!strcmp(cfg->e[i].name, name)) return &cfg->e[i];
  return NULL;
}

const int64_t *cfg_split(const ConfigEntity *cfg, const char *name, int *nparts) {
  const KnobEntity *e = config_get(cfg, name);
  if (!e) return kiln_set_error("config has no knob '%s'", name), NULL;
  if (e->kind != KNOB_SPLIT) return kiln_set_error("knob '%s' is not a split ('sp')", name), NULL;
  if (nparts) *nparts = e->n;
  return e->ints;
}

int64_t cfg_split_inner(const ConfigEntity *cfg, const char *name) {
  int n;
  const int64_t *s = cfg_split(cfg, name, &n);
  if (!s) return -1;
  if (n < 2 || s[n - 1] < 1) return kiln_set_error("knob '%s': bad split %s", name, entity_text(config_get(cfg, name))), -1;
  return s[n - 1];
}

int64_t cfg_other_int(const ConfigEntity *cfg, const char *name, int64_t def) {
  const KnobEntity *e = config_get(cfg, name);
  if (!e || e->kind != KNOB_OTHER || e->val.kind == OPT_STR) return def;
  return e->val.i;
}

static bool entity_equal(const KnobEntity *a, const KnobEntity *b) {
  if (strcmp(a->name, b->name) || a->kind != b->kind || a->n != b->n) return false;
  switch (a->kind) {
  case KNOB_SPLIT:
  case KNOB_REORDER:
    return !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n);
  case KNOB_ANNOTATE:
    return ann_equal(a, b);
  case KNOB_OTHER:
    return a->val.kind == b->val.kind && opt_equal(a->val, b->val);
  }
  KUNREACHABLE();
}

/* Template keys: NULL and "direct" are the same (a task's first). */
static bool same_template(const char *a, const char *b) {
  if (!a || !strcmp(a, "direct")) a = "";
  if (!b || !strcmp(b, "direct")) b = "";
  return !strcmp(a, b);
}

bool config_equal(const ConfigEntity *a, const ConfigEntity *b) {
  if (a->n != b->n || !same_template(a->template_key, b->template_key)) return false;
  for (int i = 0; i < a->n; i++)
    if (!entity_equal(&a->e[i], &b->e[i])) return false;
  return true;
}

/* ---- JSON ---- */

static void json_str(StrBuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (const char *p = s; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch == '"' || ch == '\\') {
      sb_putc(sb, '\\');
      sb_putc(sb, (char)ch);
    } else if (ch == '\n') {
      sb_puts(sb, "\\n");
    } else if (ch < 0x20) {
      sb_printf(sb, "\\u%04x", ch);
    } else {
      sb_putc(sb, (char)ch);
    }
  }
  sb_putc(sb, '"');
}

static void entity_value_json(StrBuf *sb, const KnobEntity *e) {
  switch (e->kind) {
  case KNOB_SPLIT:
  case KNOB_REORDER:
    sb_putc(sb, '[');
    for (int i = 0; i < e->n; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)e->ints[i]);
    sb_putc(sb, ']');
    return;
  case KNOB_ANNOTATE:
    sb_putc(sb, '[');
    for (int i = 0; i < e->n; i++) {
      if (i) sb_puts(sb, ", ");
      json_str(sb, e->anns[i]);
    }
    sb_putc(sb, ']');
    return;
  case KNOB_OTHER:
    if (e->val.kind == OPT_BOOL) sb_puts(sb, e->val.i ? "true" : "false");
    else if (e->val.kind == OPT_INT) sb_printf(sb, "%lld", (long long)e->val.i);
    else json_str(sb, e->val.s);
    return;
  }
  KUNREACHABLE();
}

static const char *entity_text(const KnobEntity *e) {
  StrBuf sb = {0};
  entity_value_json(&sb, e);
  char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return s;
}

static void entities_json(StrBuf *sb, const ConfigEntity *cfg) {
  sb_putc(sb, '[');
  for (int i = 0; i < cfg->n; i++) {
    const KnobEntity *e = &cfg->e[i];
    if (i) sb_puts(sb, ", ");
    sb_putc(sb, '[');
    json_str(sb, e->name);
    sb_printf(sb, ", \"%s\", ", kind_code(e->kind));
    entity_value_json(sb, e);
    sb_putc(sb, ']');
  }
  sb_putc(sb, ']');
}

static char *finish(StrBuf *sb) {
  char *s = kstrdup(sb->data ? sb->data : "");
  sb_free(sb);
  return s;
}

char *config_entity_json(const ConfigEntity *cfg) {
  StrBuf sb = {0};
  entities_json(&sb, cfg);
  return finish(&sb);
}

char *config_json(const ConfigEntity *cfg) {
  StrBuf sb = {0};
  sb_printf(&sb, "{\"index\": %lld, \"code_hash\": ", (long long)cfg->index);
  if (cfg->code_hash) json_str(&sb, cfg->code_hash);
  else sb_puts(&sb, "null");
  sb_puts(&sb, ", \"entity\": ");
  entities_json(&sb, cfg);
  /* a template other than the task's first ("winograd" of
   * topi_nn_conv2d) is named, so converting a v0.1 log keeps it; AutoTVM
   * >= 0.7 ignores the extra key */
  if (cfg->template_key && *cfg->template_key && strcmp(cfg->template_key, "direct")) {
    sb_puts(&sb, ", \"template_key\": ");
    json_str(&sb, cfg->template_key);
  }
  sb_putc(&sb, '}');
  return finish(&sb);
}

static int parse_entity(const cJSON *item, ConfigEntity *cfg, int pos) {
  if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3)
    return kiln_set_error("config entity %d: expected [name, kind, value]", pos);
  const cJSON *nm = cJSON_GetArrayItem(item, 0), *kd = cJSON_GetArrayItem(item, 1), *v = cJSON_GetArrayItem(item, 2);
  if (!cJSON_IsString(nm) || !cJSON_IsString(kd))
    return kiln_set_error("config entity %d: name and kind must be strings", pos);
  const char *name = nm->valuestring, *k = kd->valuestring;
  if (config_get(cfg, name)) return kiln_set_error("config entity '%s' appears twice", name);
  KnobEntity e = {0};
  e.name = name;
  if (!strcmp(k, "sp") || !strcmp(k, "re")) {
    e.kind = k[0] == 's' ? KNOB_SPLIT : KNOB_REORDER;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1)
      return kiln_set_error("config entity '%s' (%s): expected a list of integers", name, k);
    e.n = cJSON_GetArraySize(v);
    e.ints = KNEWN(int64_t, e.n);
    for (int i = 0; i < e.n; i++) {
      const cJSON *x = cJSON_GetArrayItem(v, i);
      if (!pyjson_int64(x, &e.ints[i]))
        return kiln_set_error("config entity '%s' (%s): element %d is not an integer (of 64 bits)", name, k, i);
      if (e.kind == KNOB_SPLIT && (e.ints[i] == 0 || e.ints[i] < -1 || (e.ints[i] == -1 && i > 0)))
        return kiln_set_error("config entity '%s' (sp): part %d is %lld (parts are positive; -1 only "
                              "first, for the remainder)",
                              name, i, (long long)e.ints[i]);
    }
  } else if (!strcmp(k, "an")) {
    e.kind = KNOB_ANNOTATE;
    if (!cJSON_IsArray(v)) return kiln_set_error("config entity '%s' (an): expected a list of strings", name);
    e.n = cJSON_GetArraySize(v);
    e.anns = KNEWN(const char *, e.n > 0 ? e.n : 1);
    for (int i = 0; i < e.n; i++) {
      const cJSON *x = cJSON_GetArrayItem(v, i);
      if (!cJSON_IsString(x)) return kiln_set_error("config entity '%s' (an): element %d is not a string", name, i);
      e.anns[i] = kstrdup(x->valuestring);
    }
  } else if (!strcmp(k, "ot")) {
    e.kind = KNOB_OTHER;
    int64_t iv;
    if (cJSON_IsBool(v)) e.val = opt_bool(cJSON_IsTrue(v));
    else if (cJSON_IsString(v)) e.val = opt_str(kstrdup(v->valuestring));
    else if (pyjson_int64(v, &iv)) e.val = opt_int(iv);
    else return kiln_set_error("config entity '%s' (ot): expected an integer, a bool or a string", name);
  } else {
    return kiln_set_error("config entity '%s': unknown knob kind '%s' (expected sp, re, an or ot)", name, k);
  }
  config_set(cfg, &e);
  return 0;
}

ConfigEntity *config_entity_from_cjson(const struct cJSON *arr) {
  if (!cJSON_IsArray(arr)) return kiln_set_error("config entities: expected a JSON list"), NULL;
  ConfigEntity *cfg = config_new();
  int n = cJSON_GetArraySize(arr);
  for (int i = 0; i < n; i++)
    if (parse_entity(cJSON_GetArrayItem(arr, i), cfg, i)) return NULL;
  return cfg;
}

ConfigEntity *config_entity_from_json(const char *text) {
  cJSON *j = cJSON_Parse(text ? text : "");
  if (!j) return kiln_set_error("config entities: not valid JSON"), NULL;
  ConfigEntity *c = config_entity_from_cjson(j);
  cJSON_Delete(j);
  return c;
}

ConfigEntity *config_from_cjson(const struct cJSON *obj) {
  if (!cJSON_IsObject(obj)) return kiln_set_error("config: expected a JSON object"), NULL;
  bool v1 = cJSON_GetObjectItemCaseSensitive(obj, "e") != NULL;
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, v1 ? "e" : "entity");
  const cJSON *i = cJSON_GetObjectItemCaseSensitive(obj, v1 ? "i" : "index");
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, v1 ? "c" : "code_hash");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, v1 ? "t" : "template_key");
  if (!e) return kiln_set_error("config: no \"entity\" (or v0.1 \"e\") list"), NULL;
  ConfigEntity *cfg = config_entity_from_cjson(e);
  if (!cfg) return NULL;
  if (cJSON_IsNumber(i) && !pyjson_int64(i, &cfg->index))
    return kiln_set_error("config: the index is not an integer (of 64 bits)"), NULL;
  if (cJSON_IsString(c)) cfg->code_hash = kstrdup(c->valuestring);
  if (cJSON_IsString(t)) cfg->template_key = kstrdup(t->valuestring);
  return cfg;
}

ConfigEntity *config_from_json(const char *text) {
  cJSON *j = cJSON_Parse(text ? text : "");
  if (!j) return kiln_set_error("config: not valid JSON"), NULL;
  ConfigEntity *c = config_from_cjson(j);
  cJSON_Delete(j);
  return c;
}
