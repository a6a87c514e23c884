/*
 * tuner_xgb.c - the cost-model tuner (AutoTVM's XGBTuner): gradient
 * boosted trees (XGBoost's C API) learn to rank configs from their
 * features (feature.c: knob values and loop-nest features), and simulated
 * annealing over the space picks the configs the model ranks highest.
 *
 *   - Until PLAN_SIZE configs are measured, and for an EPS share of every
 *     batch after that, configs are drawn at random (exploration).
 *   - Every PLAN_SIZE new measurements the model is trained afresh on all
 *     of them (objective rank:pairwise, one query group; labels are the
 *     scores divided by the best, failures 0), then annealing runs:
 *     PARALLEL walkers start from random configs (or where the last run
 *     left them), each step moves every walker to a neighbour (one knob
 *     changed), accepts a worse one with probability exp(delta / T), T
 *     cooling from 1 to 0 over N_ITER steps, and stops early when the best
 *     list has not changed for EARLY_STOP steps.  The PLAN_SIZE best
 *     unmeasured configs seen become the plan the next batches take from.
 *   - Features are computed once per config and cached.
 *
 * Built without XGBoost (no libxgboost-dev), the tuner says so when asked
 * for.
 */
#include "autotune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef KILN_HAVE_XGBOOST
#include <xgboost/c_api.h>

#define PLAN_SIZE 32
#define EPS 0.05
#define PARALLEL 64
#define N_ITER 150
#define EARLY_STOP 40
#define ROUNDS 100

typedef struct FEntry {
  int64_t idx; /* -1: empty */
  float *f;
} FEntry;

typedef struct XGB {
  int F;               /* feature length */
  FEntry *cache;       /* open addressing, cap a power of two */
  int64_t ccap, clen;
  int64_t *xs;         /* measured indices */
  double *ys;          /* their scores */
  int n, cap, trained_at;
  int64_t *plan;       /* best predicted, unmeasured */
  int plan_n, plan_pos;
  int64_t walkers[PARALLEL];
  int nwalkers;
  BoosterHandle booster;
  float *scratch;      /* PARALLEL * F */
  int64_t *genes;
} XGB;

static uint64_t mix(int64_t k) {
  uint64_t x = (uint64_t)k * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

static const float *features(Tuner *t, XGB *x, int64_t idx) {
  if (x->ccap) {
    for (uint64_t h = mix(idx) & (uint64_t)(x->ccap - 1);; h = (h + 1) & (uint64_t)(x->ccap - 1)) {
      if (x->cache[h].idx == idx) return x->cache[h].f;
      if (x->cache[h].idx == -1) break;
    }
  }
  if ((x->clen + 1) * 2 > x->ccap) {
    int64_t ocap = x->ccap;
    FEntry *old = x->cache;
    x->ccap = ocap ? ocap * 2 : 256;
    x->cache = xmalloc(sizeof(FEntry) * (size_t)x->ccap);
    for (int64_t i = 0; i < x->ccap; i++) x->cache[i].idx = -1;
    for (int64_t i = 0; i < ocap; i++) {
      if (old[i].idx < 0) continue;
      uint64_t h = mix(old[i].idx) & (uint64_t)(x->ccap - 1);
      while (x->cache[h].idx != -1) h = (h + 1) & (uint64_t)(x->ccap - 1);
      x->cache[h] = old[i];
    }
    free(old);
  }
  float *f = xcalloc((size_t)x->F, sizeof(float));
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  ConfigEntity *cfg = space_get(t->space, idx);
  if (cfg) feature_extract(t->tm, t->target, t->wl, t->space, cfg, f);
  kiln_clear_error();
  kiln_arena_pop();
  kiln_arena_free(a);
  uint64_t h = mix(idx) & (uint64_t)(x->ccap - 1);
  while (x->cache[h].idx != -1) h = (h + 1) & (uint64_t)(x->ccap - 1);
  x->cache[h].idx = idx;
  x->cache[h].f = f;
  x->clen++;
  return f;
}

static int xgb_init(Tuner *t) {
  XGB *x = xcalloc(1, sizeof *x);
  x->F = feature_len(t->space);
  x->scratch = xmalloc(sizeof(float) * (size_t)PARALLEL * (size_t)x->F);
  x->plan = xmalloc(sizeof(int64_t) * PLAN_SIZE);
  x->genes = xcalloc((size_t)(t->space->nknobs + 1), sizeof(int64_t));
  t->state = x;
  return 0;
}

static void xgb_destroy(Tuner *t) {
  XGB *x = t->state;
  if (!x) return;
  for (int64_t i = 0; i < x->ccap; i++)
    if (x->cache[i].idx >= 0) free(x->cache[i].f);
  free(x->cache);
  free(x->xs);
  free(x->ys);
  free(x->plan);
  free(x->scratch);
  free(x->genes);
  if (x->booster) XGBoosterFree(x->booster);
  free(x);
}

/* Predict n configs' scores. */
static int predict(Tuner *t, XGB *x, int n, const int64_t *idx, float *out) {
  for (int i = 0; i < n; i++) memcpy(x->scratch + (size_t)i * (size_t)x->F, features(t, x, idx[i]), sizeof(float) * (size_t)x->F);
  DMatrixHandle dm;
  if (XGDMatrixCreateFromMat(x->scratch, (bst_ulong)n, (bst_ulong)x->F, NAN, &dm)) return -1;
  bst_ulong len = 0;
  const float *res = NULL;
  int rc = XGBoosterPredict(x->booster, dm, 0, 0, 0, &len, &res);
  if (!rc && len == (bst_ulong)n) memcpy(out, res, sizeof(float) * (size_t)n);
  XGDMatrixFree(dm);
  return rc || len != (bst_ulong)n ? -1 : 0;
}

static int train(Tuner *t, XGB *x) {
  int n = x->n;
  float *X = xmalloc(sizeof(float) * (size_t)n * (size_t)x->F), *y = xmalloc(sizeof(float) * (size_t)n);
  double best = 1e-9;
  for (int i = 0; i < n; i++) best = x->ys[i] > best ? x->ys[i] : best;
  for (int i = 0; i < n; i++) {
    memcpy(X + (size_t)i * (size_t)x->F, features(t, x, x->xs[i]), sizeof(float) * (size_t)x->F);
    y[i] = (float)(x->ys[i] / best);
  }
  DMatrixHandle dm;
  int rc = XGDMatrixCreateFromMat(X, (bst_ulong)n, (bst_ulong)x->F, NAN, &dm);
  if (!rc) {
    unsigned group = (unsigned)n;
    rc = XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)n) || XGDMatrixSetUIntInfo(dm, "group", &group, 1);
    if (x->booster) XGBoosterFree(x->booster);
    x->booster = NULL;
    if (!rc) rc = XGBoosterCreate(&dm, 1, &x->booster);
    static const char *params[][2] = {{"objective", "rank:pairwise"}, {"max_depth", "3"}, {"gamma", "0.0001"},
                                      {"min_child_weight", "1"},      {"subsample", "1.0"}, {"eta", "0.3"},
                                      {"lambda", "1.0"},              {"alpha", "0"},      {"nthread", "1"},
                                      {"verbosity", "0"}};
    for (size_t i = 0; !rc && i < sizeof params / sizeof params[0]; i++)
      rc = XGBoosterSetParam(x->booster, params[i][0], params[i][1]);
    if (!rc) rc = XGBoosterSetParam(x->booster, "seed", kfmt("%u", (unsigned)(t->rng & 0x7fffffff)));
    for (int it = 0; !rc && it < ROUNDS; it++) rc = XGBoosterUpdateOneIter(x->booster, it, dm);
    XGDMatrixFree(dm);
  }
  free(X);
  free(y);
  if (rc && x->booster) {
    XGBoosterFree(x->booster);
    x->booster = NULL;
  }
  return rc ? -1 : 0;
}

/* A neighbour: one knob moved to another choice. */
static int64_t neighbour(Tuner *t, XGB *x, int64_t idx) {
  const ConfigSpace *cs = t->space;
  if (cs->nknobs == 0) return idx;
  tuner_index_to_genes(cs, idx, x->genes);
  for (int tries = 0; tries < 8; tries++) {
    int j = (int)(tuner_rand(t) % (uint64_t)cs->nknobs);
    int64_t n = cs->knobs[j].nchoices;
    if (n < 2) continue;
    int64_t v = (int64_t)(tuner_rand(t) % (uint64_t)(n - 1));
    x->genes[j] = v >= x->genes[j] ? v + 1 : v;
    return tuner_genes_to_index(cs, x->genes);
  }
  return (int64_t)(tuner_rand(t) % (uint64_t)t->size);
}

/* The best-predicted list: up to PLAN_SIZE (score, index), unmeasured. */
typedef struct Top {
  int n;
  int64_t idx[PLAN_SIZE];
  float s[PLAN_SIZE];
} Top;

static bool top_offer(Top *top, int64_t idx, float s) {
  for (int i = 0; i < top->n; i++)
    if (top->idx[i] == idx) return false;
  if (top->n < PLAN_SIZE) {
    top->idx[top->n] = idx;
    top->s[top->n++] = s;
    return true;
  }
  int worst = 0;
  for (int i = 1; i < top->n; i++)
    if (top->s[i] < top->s[worst]) worst = i;
  if (s <= top->s[worst]) return false;
  top->idx[worst] = idx;
  top->s[worst] = s;
  return true;
}

static void anneal(Tuner *t, XGB *x) {
  int P = PARALLEL;
  if ((int64_t)P > t->size) P = (int)t->size;
  if (x->nwalkers != P) {
    for (int i = 0; i < P; i++) x->walkers[i] = (int64_t)(tuner_rand(t) % (uint64_t)t->size);
    x->nwalkers = P;
  }
  float scores[PARALLEL], nscores[PARALLEL];
  int64_t next[PARALLEL];
  if (predict(t, x, P, x->walkers, scores)) return;
  Top top = {0};
  for (int i = 0; i < P; i++)
    if (!tuner_visited(t, x->walkers[i])) top_offer(&top, x->walkers[i], scores[i]);
  double temp = 1.0, cool = 1.0 / (N_ITER + 1);
  for (int k = 0, last = 0; k < N_ITER && k < last + EARLY_STOP; k++, temp -= cool) {
    for (int i = 0; i < P; i++) next[i] = neighbour(t, x, x->walkers[i]);
    if (predict(t, x, P, next, nscores)) break;
    for (int i = 0; i < P; i++) {
      double d = (nscores[i] - scores[i]) / (temp + 1e-5);
      double p = exp(d < 1 ? d : 1);
      if (tuner_randf(t) < p) x->walkers[i] = next[i], scores[i] = nscores[i];
      if (!tuner_visited(t, next[i]) && top_offer(&top, next[i], nscores[i])) last = k;
    }
  }
  /* best first */
  for (int i = 0; i < top.n; i++)
    for (int j = i + 1; j < top.n; j++)
      if (top.s[j] > top.s[i]) {
        float s = top.s[i];
        int64_t v = top.idx[i];
        top.s[i] = top.s[j], top.idx[i] = top.idx[j];
        top.s[j] = s, top.idx[j] = v;
      }
  memcpy(x->plan, top.idx, sizeof(int64_t) * (size_t)top.n);
  x->plan_n = top.n;
  x->plan_pos = 0;
}

static int xgb_next(Tuner *t, int n, int64_t *out) {
  XGB *x = t->state;
  int k = 0;
  for (int guard = 0; k < n && guard < 64 * n + 64; guard++) {
    int64_t idx = -1;
    bool explore = !x->booster || tuner_randf(t) < EPS;
    while (!explore && x->plan_pos < x->plan_n) {
      int64_t c = x->plan[x->plan_pos++];
      if (!tuner_visited(t, c)) {
        idx = c;
        break;
      }
    }
    if (idx < 0) idx = tuner_random_unvisited(t);
    if (idx < 0) break;
    bool dup = false;
    for (int j = 0; j < k && !dup; j++) dup = out[j] == idx;
    if (!dup) out[k++] = idx;
  }
  return k;
}

static void xgb_update(Tuner *t, int n, const int64_t *idx, const double *score) {
  XGB *x = t->state;
  if (x->n + n > x->cap) {
    x->cap = (x->n + n) * 2;
    x->xs = xrealloc(x->xs, sizeof(int64_t) * (size_t)x->cap);
    x->ys = xrealloc(x->ys, sizeof(double) * (size_t)x->cap);
  }
  for (int i = 0; i < n; i++) x->xs[x->n] = idx[i], x->ys[x->n++] = score[i] > 0 ? score[i] : 0;
  bool any = false;
  for (int i = 0; i < x->n && !any; i++) any = x->ys[i] > 0;
  if (x->n - x->trained_at < PLAN_SIZE || !any || x->n < PLAN_SIZE) return;
  x->trained_at = x->n;
  if (train(t, x) == 0) anneal(t, x);
}

const TunerKind tuner_xgb_kind = {"xgb", "XGBoost rank model + simulated annealing (AutoTVM's XGBTuner)", xgb_init,
                                  xgb_next, xgb_update, xgb_destroy};

#else

static int xgb_unavailable(Tuner *t) {
  (void)t;
  return kiln_set_error("the xgb tuner needs XGBoost, and this Kiln was built without it (install libxgboost-dev and "
                        "rebuild); use --tuner ga or random");
}

const TunerKind tuner_xgb_kind = {"xgb", "XGBoost rank model + simulated annealing (AutoTVM's XGBTuner)",
                                  xgb_unavailable, NULL, NULL, NULL};

#endif
