/*
 * tuner_ga.c - the genetic tuner (AutoTVM's GATuner): a config is a gene
 * of knob choice positions.  A population of pop_size unmeasured configs
 * is measured; the next generation keeps the elite_num best genes seen so
 * far, and breeds the rest from parents drawn in proportion to their
 * scores (GFLOP/s), single-point crossover over the knobs, and a mutation
 * of each knob with probability mutation_prob; a child that was measured
 * before (or twice in one generation) has random knobs changed until it is
 * new.  Configs resumed from a log compete for the elite places.
 */
#include "autotune.h"

#include <stdlib.h>
#include <string.h>

#define POP_SIZE 100
#define ELITE_NUM 3
#define MUTATION_PROB 0.1

typedef struct GA {
  int pop_n, pos;       /* population size; next member to hand out */
  int64_t *pop;         /* config indices */
  double *score;        /* per member, -1 until measured */
  int scored;
  int64_t elite[ELITE_NUM];
  double elite_score[ELITE_NUM];
  int nelite;
  int64_t *genes, *g2;  /* scratch: nknobs each */
} GA;

static bool in_pop(const int64_t *pop, int n, int64_t idx) {
  for (int i = 0; i < n; i++)
    if (pop[i] == idx) return true;
  return false;
}

static void first_generation(Tuner *t, GA *g) {
  g->pop_n = 0;
  int want = t->size < POP_SIZE ? (int)t->size : POP_SIZE;
  for (int tries = 0; g->pop_n < want && tries < want * 64; tries++) {
    int64_t i = tuner_random_unvisited(t);
    if (i < 0) break;
    if (!in_pop(g->pop, g->pop_n, i)) g->pop[g->pop_n++] = i;
  }
  for (int i = 0; i < g->pop_n; i++) g->score[i] = -1;
  g->pos = 0;
  g->scored = 0;
}

static int ga_init(Tuner *t) {
  GA *g = xcalloc(1, sizeof *g);
  g->pop = xcalloc(POP_SIZE, sizeof(int64_t));
  g->score = xcalloc(POP_SIZE, sizeof(double));
  int nk = t->space->nknobs > 0 ? t->space->nknobs : 1;
  g->genes = xcalloc((size_t)nk, sizeof(int64_t));
  g->g2 = xcalloc((size_t)nk, sizeof(int64_t));
  t->state = g;
  first_generation(t, g);
  return 0;
}

static void keep_elite(GA *g, int64_t idx, double s) {
  for (int i = 0; i < g->nelite; i++)
    if (g->elite[i] == idx) return;
  if (g->nelite < ELITE_NUM) {
    g->elite[g->nelite] = idx;
    g->elite_score[g->nelite++] = s;
    return;
  }
  int worst = 0;
  for (int i = 1; i < g->nelite; i++)
    if (g->elite_score[i] < g->elite_score[worst]) worst = i;
  if (s > g->elite_score[worst]) g->elite[worst] = idx, g->elite_score[worst] = s;
}

/* Draw a parent: index into the pool, in proportion to score. */
static int draw(Tuner *t, const double *p, int n, double total, int not) {
  for (int tries = 0; tries < 16; tries++) {
    double r = tuner_randf(t) * total, acc = 0;
    for (int i = 0; i < n; i++) {
      acc += p[i];
      if (r < acc) {
        if (i != not) return i;
        break;
      }
    }
  }
  int i = (int)(tuner_rand(t) % (uint64_t)n);
  return i == not && n > 1 ? (i + 1) % n : i;
}

static void next_generation(Tuner *t, GA *g) {
  const ConfigSpace *cs = t->space;
  int nk = cs->nknobs;
  /* the pool: this generation and the elites */
  int pool_n = g->pop_n + g->nelite;
  int64_t *pool = xmalloc(sizeof(int64_t) * (size_t)(pool_n + 1));
  double *prob = xmalloc(sizeof(double) * (size_t)(pool_n + 1)), total = 0, best = 1e-8;
  for (int i = 0; i < g->pop_n; i++) pool[i] = g->pop[i], prob[i] = g->score[i] > 0 ? g->score[i] : 0;
  for (int i = 0; i < g->nelite; i++) pool[g->pop_n + i] = g->elite[i], prob[g->pop_n + i] = g->elite_score[i];
  for (int i = 0; i < pool_n; i++) best = prob[i] > best ? prob[i] : best;
  for (int i = 0; i < pool_n; i++) total += prob[i] = prob[i] / best + 1e-8;
  int want = POP_SIZE, made = 0;
  int64_t remaining = t->size - t->nvisited;
  if (want > remaining) want = (int)remaining;
  for (int k = 0; k < want && pool_n > 0; k++) {
    int a = draw(t, prob, pool_n, total, -1), b = pool_n > 1 ? draw(t, prob, pool_n, total, a) : a;
    tuner_index_to_genes(cs, pool[a], g->genes);
    tuner_index_to_genes(cs, pool[b], g->g2);
    int point = nk > 0 ? (int)(tuner_rand(t) % (uint64_t)nk) : 0;
    for (int j = point; j < nk; j++) g->genes[j] = g->g2[j];
    for (int j = 0; j < nk; j++)
      if (tuner_randf(t) < MUTATION_PROB) g->genes[j] = (int64_t)(tuner_rand(t) % (uint64_t)cs->knobs[j].nchoices);
    int64_t idx = tuner_genes_to_index(cs, g->genes);
    for (int tries = 0; (tuner_visited(t, idx) || in_pop(g->pop, made, idx)) && tries < 256; tries++) {
      int j = (int)(tuner_rand(t) % (uint64_t)nk);
      g->genes[j] = (int64_t)(tuner_rand(t) % (uint64_t)cs->knobs[j].nchoices);
      idx = tuner_genes_to_index(cs, g->genes);
    }
    if (tuner_visited(t, idx) || in_pop(g->pop, made, idx)) {
      idx = tuner_random_unvisited(t);
      if (idx < 0 || in_pop(g->pop, made, idx)) continue;
    }
    g->pop[made++] = idx;
  }
  free(pool);
  free(prob);
  g->pop_n = made;
  for (int i = 0; i < made; i++) g->score[i] = -1;
  g->pos = 0;
  g->scored = 0;
}

static int ga_next(Tuner *t, int n, int64_t *out) {
  GA *g = t->state;
  int k = 0;
  while (k < n) {
    if (g->pos < g->pop_n) {
      int64_t idx = g->pop[g->pos++];
      if (!tuner_visited(t, idx)) out[k++] = idx;
      else g->score[g->pos - 1] = 0, g->scored++;
      continue;
    }
    /* the generation is handed out; breed if it is all measured */
    if (g->scored >= g->pop_n && g->pop_n > 0) {
      next_generation(t, g);
      if (g->pop_n == 0) break;
      continue;
    }
    /* waiting for results: fill with random configs */
    int64_t idx = tuner_random_unvisited(t);
    bool dup = idx < 0;
    for (int j = 0; j < k && !dup; j++) dup = out[j] == idx;
    if (dup) break;
    out[k++] = idx;
  }
  return k;
}

static void ga_update(Tuner *t, int n, const int64_t *idx, const double *score) {
  GA *g = t->state;
  for (int i = 0; i < n; i++) {
    keep_elite(g, idx[i], score[i]);
    for (int j = 0; j < g->pop_n; j++)
      if (g->pop[j] == idx[i] && g->score[j] < 0) {
        g->score[j] = score[i];
        g->scored++;
        break;
      }
  }
}

static void ga_destroy(Tuner *t) {
  GA *g = t->state;
  if (!g) return;
  free(g->pop);
  free(g->score);
  free(g->genes);
  free(g->g2);
  free(g);
}

const TunerKind tuner_ga_kind = {"ga", "genetic algorithm (AutoTVM's GATuner)", ga_init, ga_next, ga_update, ga_destroy};
