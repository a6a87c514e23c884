/*
 * workspace.c - scratch memory for kernels, reused from run to run (TVM's
 * WorkspacePool).
 *
 * A kernel whose schedule keeps an intermediate buffer too large for the
 * stack (a padded input, a Winograd tile buffer) asks for it on each call
 * through __kiln_workspace_alloc_ptr and gives it back before it returns.
 * Calling malloc there would allocate (and for large blocks map and unmap
 * pages) on every run; this pool keeps the blocks instead.  Each thread has
 * its own pool, so the thread pool's workers take no lock: a list of
 * blocks, each free or in use.  A request takes the smallest free block
 * that fits, else replaces the largest free block that does not (so a pool
 * never holds more blocks than the thread ever used at once), else adds a
 * block.  After the first run every later run of the same graph finds its
 * blocks in place: the executor allocates nothing per run
 * (tests/noalloc checks it by counting malloc calls).
 *
 * A thread's pool is freed when the thread exits.
 *
 * Exports: kiln_workspace_alloc, kiln_workspace_free (internal; handed to
 * modules by module.c).
 */
#include "runtime_internal.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct Block {
  void *ptr;
  size_t size;
  int used;
} Block;

typedef struct Pool {
  Block *blocks;
  int num, cap;
} Pool;

static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_destroy(void *p) {
  Pool *pool = p;
  for (int i = 0; i < pool->num; i++) free(pool->blocks[i].ptr);
  free(pool->blocks);
  free(pool);
}

static void make_key(void) { pthread_key_create(&pool_key, pool_destroy); }

static Pool *thread_pool(void) {
  pthread_once(&pool_once, make_key);
  Pool *p = pthread_getspecific(pool_key);
  if (!p) {
    p = calloc(1, sizeof *p);
    if (p && pthread_setspecific(pool_key, p)) {
      free(p);
      p = NULL;
    }
  }
  return p;
}

void *kiln_workspace_alloc(size_t size) {
  Pool *pool = thread_pool();
  if (!pool) return NULL;
  if (!size) size = 1;
  int fit = -1, largest = -1;
  for (int i = 0; i < pool->num; i++) {
    Block *b = &pool->blocks[i];
    if (b->used) continue;
    if (b->size >= size && (fit < 0 || b->size < pool->blocks[fit].size)) fit = i;
    if (largest < 0 || b->size > pool->blocks[largest].size) largest = i;
  }
  if (fit < 0) {
    void *p = NULL;
    size_t rounded = (size + 4095) & ~(size_t)4095;
    if (rounded < size || posix_memalign(&p, KILN_ARRAY_ALIGN, rounded)) return NULL;
    if (largest >= 0) { /* too small for this request: replace it */
      free(pool->blocks[largest].ptr);
      fit = largest;
    } else {
      if (pool->num == pool->cap) {
        int cap = pool->cap ? pool->cap * 2 : 8;
        Block *nb = realloc(pool->blocks, (size_t)cap * sizeof *nb);
        if (!nb) {
          free(p);
          return NULL;
        }
        pool->blocks = nb;
        pool->cap = cap;
      }
      fit = pool->num++;
    }
    pool->blocks[fit].ptr = p;
    pool->blocks[fit].size = rounded;
  }
  pool->blocks[fit].used = 1;
  return pool->blocks[fit].ptr;
}

void kiln_workspace_free(void *ptr) {
  if (!ptr) return;
  pthread_once(&pool_once, make_key);
  Pool *pool = pthread_getspecific(pool_key);
  for (int i = pool ? pool->num - 1 : -1; i >= 0; i--)
    if (pool->blocks[i].ptr == ptr) {
      pool->blocks[i].used = 0;
      return;
    }
  /* Not in this thread's pool: a kernel allocates and releases in one
   * scope of one call, so this cannot happen; keep the block rather than
   * free memory another pool owns. */
}
