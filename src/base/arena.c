/*
 * arena.c - bump allocation in chunks, freed all at once.
 *
 * Each thread has a stack of current arenas; kalloc and friends use its top,
 * or a process-wide default arena when nothing is pushed.  The default arena
 * is shared by threads that never push one, so it is guarded by a mutex; a
 * pushed arena belongs to its thread and takes no lock.
 */
#include "base.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
  struct Chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} Chunk;

struct KArena {
  Chunk *head;
  size_t total;
  int shared; /* the process default: lock around allocation */
};

#define CHUNK_MIN (64 * 1024)

KArena *kiln_arena_new(void) { return xcalloc(1, sizeof(KArena)); }

void kiln_arena_free(KArena *a) {
  if (!a) return;
  Chunk *c = a->head;
  while (c) {
    Chunk *n = c->next;
    free(c);
    c = n;
  }
  free(a);
}

size_t kiln_arena_bytes(const KArena *a) { return a->total; }

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static KArena *default_arena;

static void *arena_alloc_nolock(KArena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t cs = size > CHUNK_MIN ? size : CHUNK_MIN;
    c = xmalloc(sizeof(Chunk) + cs);
    c->size = cs;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  a->total += size;
  memset(p, 0, size);
  return p;
}

void *kiln_arena_alloc(KArena *a, size_t size) {
  if (!a->shared) return arena_alloc_nolock(a, size);
  pthread_mutex_lock(&default_lock);
  void *p = arena_alloc_nolock(a, size);
  pthread_mutex_unlock(&default_lock);
  return p;
}

#define MAX_ARENA_DEPTH 64
static _Thread_local KArena *arena_stack[MAX_ARENA_DEPTH];
static _Thread_local int arena_depth;

KArena *kiln_arena_current(void) {
  if (arena_depth > 0) return arena_stack[arena_depth - 1];
  pthread_mutex_lock(&default_lock);
  if (!default_arena) {
    default_arena = xcalloc(1, sizeof(KArena));
    default_arena->shared = 1;
  }
  pthread_mutex_unlock(&default_lock);
  return default_arena;
}

void kiln_arena_push(KArena *a) {
  KASSERT(arena_depth < MAX_ARENA_DEPTH);
  arena_stack[arena_depth++] = a;
}

void kiln_arena_pop(void) {
  KASSERT(arena_depth > 0);
  arena_depth--;
}

void *kalloc(size_t size) { return kiln_arena_alloc(kiln_arena_current(), size); }

char *kstrdup(const char *s) {
  if (!s) return NULL;
  return kstrndup(s, strlen(s));
}

char *kstrndup(const char *s, size_t n) {
  char *p = kalloc(n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void *kmemdup(const void *p, size_t n) {
  void *q = kalloc(n ? n : 1);
  if (n) memcpy(q, p, n);
  return q;
}

char *kfmt(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = kalloc((size_t)n + 1);
  vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) kiln_panic(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
  return p;
}

void *xcalloc(size_t n, size_t m) {
  void *p = calloc(n ? n : 1, m ? m : 1);
  if (!p) kiln_panic(__FILE__, __LINE__, "out of memory (%zu bytes)", n * m);
  return p;
}

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) kiln_panic(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
  return q;
}

char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = xmalloc(n);
  memcpy(p, s, n);
  return p;
}
