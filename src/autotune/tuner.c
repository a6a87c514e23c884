/*
 * tuner.c - the table of tuners and what they share, plus the two simple
 * ones: random (uniform over the configs not yet measured) and grid (the
 * space in index order).  The genetic tuner is tuner_ga.c, the XGBoost
 * cost-model tuner tuner_xgb.c.
 *
 * A tuner proposes config indices and learns from their scores (GFLOP/s,
 * 0 for a failed candidate).  Every index it hands out, and every index
 * resumed from a log, is marked visited, so no config is measured twice;
 * the visited set is an open-addressing hash set of int64 on the heap.
 */
#include "autotune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const TunerKind *const kinds[] = {&tuner_xgb_kind, &tuner_ga_kind, &tuner_random_kind, &tuner_grid_kind};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

int tuner_nkinds(void) { return NKINDS; }
const TunerKind *tuner_kind_at(int i) { return i >= 0 && i < NKINDS ? kinds[i] : NULL; }

const TunerKind *tuner_kind(const char *name) {
  for (int i = 0; i < NKINDS; i++)
    if (name && !strcmp(kinds[i]->name, name)) return kinds[i];
  kiln_set_error("unknown tuner '%s' (known: xgb, ga, random, grid)", name ? name : "(null)");
  return NULL;
}

/* ---- the visited set ---- */

static uint64_t mix(int64_t k) {
  uint64_t x = (uint64_t)k * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 31);
}

bool tuner_visited(const Tuner *t, int64_t idx) {
  if (!t->vcap) return false;
  for (uint64_t h = mix(idx) & (uint64_t)(t->vcap - 1);; h = (h + 1) & (uint64_t)(t->vcap - 1)) {
    if (t->vset[h] == -1) return false;
    if (t->vset[h] == idx) return true;
  }
}

void tuner_mark(Tuner *t, int64_t idx) {
  if (idx < 0 || tuner_visited(t, idx)) return;
  if ((t->nvisited + 1) * 2 > t->vcap) {
    int64_t ocap = t->vcap, *old = t->vset;
    t->vcap = ocap ? ocap * 2 : 64;
    t->vset = xmalloc(sizeof(int64_t) * (size_t)t->vcap);
    for (int64_t i = 0; i < t->vcap; i++) t->vset[i] = -1;
    t->nvisited = 0;
    for (int64_t i = 0; i < ocap; i++)
      if (old[i] >= 0) tuner_mark(t, old[i]);
    free(old);
  }
  uint64_t h = mix(idx) & (uint64_t)(t->vcap - 1);
  while (t->vset[h] != -1) h = (h + 1) & (uint64_t)(t->vcap - 1);
  t->vset[h] = idx;
  t->nvisited++;
}

uint64_t tuner_rand(Tuner *t) {
  uint64_t x = t->rng;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  t->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

double tuner_randf(Tuner *t) { return (double)(tuner_rand(t) >> 11) / 9007199254740992.0; }

int64_t tuner_random_unvisited(Tuner *t) {
  if (t->nvisited >= t->size) return -1;
  for (int tries = 0; tries < 64; tries++) {
    int64_t i = (int64_t)(tuner_rand(t) % (uint64_t)t->size);
    if (!tuner_visited(t, i)) return i;
  }
  /* nearly exhausted: walk from a random start */
  int64_t start = (int64_t)(tuner_rand(t) % (uint64_t)t->size);
  for (int64_t k = 0; k < t->size; k++) {
    int64_t i = (start + k) % t->size;
    if (!tuner_visited(t, i)) return i;
  }
  return -1;
}

void tuner_index_to_genes(const ConfigSpace *cs, int64_t idx, int64_t *genes) {
  for (int i = 0; i < cs->nknobs; i++) {
    int64_t n = cs->knobs[i].nchoices > 0 ? cs->knobs[i].nchoices : 1;
    genes[i] = idx % n;
    idx /= n;
  }
}

int64_t tuner_genes_to_index(const ConfigSpace *cs, const int64_t *genes) {
  int64_t idx = 0;
  for (int i = cs->nknobs - 1; i >= 0; i--) {
    int64_t n = cs->knobs[i].nchoices > 0 ? cs->knobs[i].nchoices : 1;
    idx = idx * n + genes[i];
  }
  return idx;
}

/* ---- the tuner ---- */

Tuner *tuner_new(const char *kind, const Template *tm, const Target *target, const Workload *wl, const ConfigSpace *cs,
                 uint64_t seed) {
  const TunerKind *k = tuner_kind(kind);
  if (!k) return NULL;
  Tuner *t = xcalloc(1, sizeof *t);
  t->kind = k;
  t->tm = tm;
  t->target = target;
  t->wl = wl;
  t->space = cs;
  t->size = space_size(cs);
  t->rng = seed ? seed : 0x853c49e6748fea9bull;
  if (k->init && k->init(t)) {
    tuner_free(t);
    return NULL;
  }
  return t;
}

int tuner_next_batch(Tuner *t, int n, int64_t *out) {
  int k = t->kind->next_batch(t, n, out);
  int m = 0;
  for (int i = 0; i < k; i++) /* no index twice, none already measured */
    if (out[i] >= 0 && out[i] < t->size && !tuner_visited(t, out[i])) {
      tuner_mark(t, out[i]);
      out[m++] = out[i];
    }
  return m;
}

void tuner_update(Tuner *t, int n, const int64_t *idx, const double *score) {
  for (int i = 0; i < n; i++) tuner_mark(t, idx[i]);
  if (t->kind->update) t->kind->update(t, n, idx, score);
}

void tuner_free(Tuner *t) {
  if (!t) return;
  if (t->kind->destroy) t->kind->destroy(t);
  free(t->vset);
  free(t);
}

/* ---- random ---- */

static int random_next(Tuner *t, int n, int64_t *out) {
  int k = 0;
  for (int tries = 0; k < n && tries < 64 * n + 64; tries++) {
    int64_t i = tuner_random_unvisited(t);
    if (i < 0) break;
    bool dup = false;
    for (int j = 0; j < k && !dup; j++) dup = out[j] == i;
    if (!dup) out[k++] = i;
  }
  return k;
}

const TunerKind tuner_random_kind = {"random", "uniform over the configs not measured yet", NULL, random_next, NULL, NULL};

/* ---- grid ---- */

static int grid_init(Tuner *t) {
  t->state = xcalloc(1, sizeof(int64_t));
  return 0;
}

static int grid_next(Tuner *t, int n, int64_t *out) {
  int64_t *pos = t->state;
  int k = 0;
  while (k < n && *pos < t->size) {
    int64_t i = (*pos)++;
    if (!tuner_visited(t, i)) out[k++] = i;
  }
  return k;
}

static void grid_destroy(Tuner *t) { free(t->state); }

const TunerKind tuner_grid_kind = {"grid", "every config in index order", grid_init, grid_next, NULL, grid_destroy};
