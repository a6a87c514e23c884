/* vec.c - a growable array of pointers. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

void pv_push(PtrVec *v, void *p) {
  if (v->len == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 8;
    v->data = xrealloc(v->data, sizeof(void *) * (size_t)v->cap);
  }
  v->data[v->len++] = p;
}

void *pv_pop(PtrVec *v) {
  KASSERT(v->len > 0);
  return v->data[--v->len];
}

int pv_find(const PtrVec *v, const void *p) {
  for (int i = 0; i < v->len; i++)
    if (v->data[i] == p) return i;
  return -1;
}

void pv_insert(PtrVec *v, int at, void *p) {
  KASSERT(at >= 0 && at <= v->len);
  pv_push(v, NULL);
  memmove(v->data + at + 1, v->data + at, sizeof(void *) * (size_t)(v->len - 1 - at));
  v->data[at] = p;
}

void pv_remove(PtrVec *v, int at) {
  KASSERT(at >= 0 && at < v->len);
  memmove(v->data + at, v->data + at + 1, sizeof(void *) * (size_t)(v->len - at - 1));
  v->len--;
}

void pv_free(PtrVec *v) {
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

void **pv_to_arena(const PtrVec *v) {
  void **p = kalloc(sizeof(void *) * (size_t)(v->len + 1));
  if (v->len) memcpy(p, v->data, sizeof(void *) * (size_t)v->len);
  return p;
}

static void av_grow(AVec *v) {
  int cap = v->cap ? v->cap * 2 : 8;
  void **d = kalloc(sizeof(void *) * (size_t)cap);
  if (v->len) memcpy(d, v->data, sizeof(void *) * (size_t)v->len);
  v->data = d;
  v->cap = cap;
}

void av_push(AVec *v, void *p) {
  if (v->len == v->cap) av_grow(v);
  v->data[v->len++] = p;
}

void av_insert(AVec *v, int at, void *p) {
  KASSERT(at >= 0 && at <= v->len);
  av_push(v, NULL);
  memmove(v->data + at + 1, v->data + at, sizeof(void *) * (size_t)(v->len - 1 - at));
  v->data[at] = p;
}

void av_remove(AVec *v, int at) {
  KASSERT(at >= 0 && at < v->len);
  memmove(v->data + at, v->data + at + 1, sizeof(void *) * (size_t)(v->len - at - 1));
  v->len--;
}

int av_find(const AVec *v, const void *p) {
  for (int i = 0; i < v->len; i++)
    if (v->data[i] == p) return i;
  return -1;
}

AVec av_copy(const AVec *v) {
  AVec r = {0};
  for (int i = 0; i < v->len; i++) av_push(&r, v->data[i]);
  return r;
}
