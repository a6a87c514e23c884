/*
 * map.c - open-addressing hash map keyed by pointer identity or by string
 * content, plus the hash helpers the IR's structural hash uses.
 */
#include "base.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) {
  /* FNV-1a, then a final mix. */
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull ^ seed;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

uint64_t hash_combine(uint64_t a, uint64_t b) {
  return a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
}

static uint64_t key_hash(const PtrMap *m, const void *k) {
  if (m->strkeys) return hash_bytes(k, strlen(k), 0);
  uintptr_t x = (uintptr_t)k;
  return hash_bytes(&x, sizeof x, 0);
}

static int key_eq(const PtrMap *m, const void *a, const void *b) {
  if (m->strkeys) return strcmp(a, b) == 0;
  return a == b;
}

void pm_init_str(PtrMap *m) {
  memset(m, 0, sizeof *m);
  m->strkeys = 1;
}

static void pm_grow(PtrMap *m) {
  int ocap = m->cap;
  const void **ok = m->keys;
  void **ov = m->vals;
  m->cap = ocap ? ocap * 2 : 16;
  m->keys = xcalloc((size_t)m->cap, sizeof(void *));
  m->vals = xcalloc((size_t)m->cap, sizeof(void *));
  m->len = 0;
  for (int i = 0; i < ocap; i++)
    if (ok[i]) pm_put(m, ok[i], ov[i]);
  free(ok);
  free(ov);
}

void pm_put(PtrMap *m, const void *key, void *val) {
  KASSERT(key != NULL);
  if ((m->len + 1) * 2 > m->cap) pm_grow(m);
  uint64_t h = key_hash(m, key);
  for (int i = (int)(h & (uint64_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) {
      m->keys[i] = key;
      m->vals[i] = val;
      m->len++;
      return;
    }
    if (key_eq(m, m->keys[i], key)) {
      m->vals[i] = val;
      return;
    }
  }
}

void *pm_get(const PtrMap *m, const void *key) {
  if (!m->cap) return NULL;
  uint64_t h = key_hash(m, key);
  for (int i = (int)(h & (uint64_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (key_eq(m, m->keys[i], key)) return m->vals[i];
  }
}

int pm_has(const PtrMap *m, const void *key) {
  if (!m->cap) return 0;
  uint64_t h = key_hash(m, key);
  for (int i = (int)(h & (uint64_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return 0;
    if (key_eq(m, m->keys[i], key)) return 1;
  }
}

void pm_free(PtrMap *m) {
  free(m->keys);
  free(m->vals);
  int s = m->strkeys;
  memset(m, 0, sizeof *m);
  m->strkeys = s;
}
