/*
 * base.h - the bottom layer every other part of Kiln stands on.
 *
 * Memory is arena-based: IR nodes, tensors and schedules are bump-allocated
 * from an arena and freed together when the arena is freed.  Building code
 * never frees a node by itself.  Most builders allocate from the *current*
 * arena of the calling thread (kiln_arena_current), which a caller swaps with
 * kiln_arena_push / kiln_arena_pop; a program that never pushes one gets a
 * process-wide default arena.  This keeps the many small constructors of the
 * IR free of an extra context argument while still letting the tuner build
 * each candidate in a fresh arena and drop it in one call.
 *
 * Errors come in two channels.  A user's mistake (an illegal schedule, a bad
 * model) is reported by returning a failure value and leaving a message in
 * the thread's last-error buffer (kiln_set_error / kiln_last_error).  A broken
 * invariant is KASSERT, which prints file and line and aborts.
 *
 * Nothing here is exported from the shared libraries (Kiln builds with
 * -fvisibility=hidden; only include/kiln/'s KILN_API functions are public).
 * libkiln_runtime.so and libkiln.so each link their own copy of this layer,
 * and the programs built from the tree (kiln, kiln_unit, the benchmarks and
 * fuzz targets) link it with the rest statically.  The copies share no state
 * that must be one per process: the last-error message is kept by the
 * runtime (kiln_last_error), and the runtime allocates only from arenas it
 * made itself, never from the current arena.
 */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define KILN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define KILN_NORETURN __attribute__((noreturn))
#else
#define KILN_PRINTF(a, b)
#define KILN_NORETURN
#endif

/* ===== error.c ===== */

/* Set the calling thread's last error message (printf style). Returns -1 so
 * callers can write `return kiln_set_error(...)`. */
int kiln_set_error(const char *fmt, ...) KILN_PRINTF(1, 2);
int kiln_set_error_v(const char *fmt, va_list ap);
/* Whether the compiler's pipelines check their IR between passes
 * (graph_verify, ir_verify): always in debug builds (no NDEBUG), else when
 * $KILN_VERIFY is set and not "0" (the tests set it). */
bool kiln_verify_enabled(void);
/* Prefix the current message with more context: "ctx: old message". */
int kiln_error_context(const char *fmt, ...) KILN_PRINTF(1, 2);
const char *kiln_get_error(void);
void kiln_clear_error(void);
KILN_NORETURN void kiln_panic(const char *file, int line, const char *fmt, ...)
    KILN_PRINTF(3, 4);

#define KASSERT(c)                                                             \
  do {                                                                         \
    if (!(c)) kiln_panic(__FILE__, __LINE__, "assertion failed: %s", #c);      \
  } while (0)
#define KASSERTF(c, ...)                                                       \
  do {                                                                         \
    if (!(c)) kiln_panic(__FILE__, __LINE__, __VA_ARGS__);                     \
  } while (0)
#define KUNREACHABLE() kiln_panic(__FILE__, __LINE__, "unreachable")

/* ===== arena.c ===== */

typedef struct KArena KArena;

KArena *kiln_arena_new(void);
void kiln_arena_free(KArena *a);
void *kiln_arena_alloc(KArena *a, size_t size); /* zeroed, 16-byte aligned */
size_t kiln_arena_bytes(const KArena *a);       /* bytes handed out so far */
/* The calling thread's current arena (the default one if none is pushed). */
KArena *kiln_arena_current(void);
void kiln_arena_push(KArena *a);
void kiln_arena_pop(void);

/* Allocation from the current arena. */
void *kalloc(size_t size);
#define KNEW(T) ((T *)kalloc(sizeof(T)))
#define KNEWN(T, n) ((T *)kalloc(sizeof(T) * (size_t)(n)))
char *kstrdup(const char *s);
char *kstrndup(const char *s, size_t n);
char *kfmt(const char *fmt, ...) KILN_PRINTF(1, 2); /* arena sprintf */
void *kmemdup(const void *p, size_t n);

/* Heap helpers that abort on out-of-memory (for data outside arenas). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* ===== strbuf.c ===== */

/* A growable heap string.  Zero-initialise, append, take .data, free. */
typedef struct StrBuf {
  char *data;
  size_t len, cap;
} StrBuf;

void sb_putc(StrBuf *sb, char c);
void sb_puts(StrBuf *sb, const char *s);
void sb_putn(StrBuf *sb, const char *s, size_t n);
void sb_printf(StrBuf *sb, const char *fmt, ...) KILN_PRINTF(2, 3);
void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
void sb_indent(StrBuf *sb, int n);
void sb_free(StrBuf *sb);
char *sb_steal(StrBuf *sb); /* returns data (never NULL), resets sb */
/* The offset of the first byte of the NUL-terminated s that does not
 * start or continue valid UTF-8 (RFC 3629: no overlong forms, surrogates
 * or code points above U+10FFFF), or -1 when all of s is valid. */
long utf8_invalid_at(const char *s);

/* ===== vec.c ===== */

/* A growable array of pointers on the heap. */
typedef struct PtrVec {
  void **data;
  int len, cap;
} PtrVec;

void pv_push(PtrVec *v, void *p);
void *pv_pop(PtrVec *v);
int pv_find(const PtrVec *v, const void *p); /* index or -1 */
void pv_insert(PtrVec *v, int at, void *p);
void pv_remove(PtrVec *v, int at);
void pv_free(PtrVec *v);
void **pv_to_arena(const PtrVec *v); /* copy into the current arena */

/* An arena-backed growable array of pointers: grows by copying into a new
 * block of the current arena, so it is freed with the arena. */
typedef struct AVec {
  void **data;
  int len, cap;
} AVec;

void av_push(AVec *v, void *p);
void av_insert(AVec *v, int at, void *p);
void av_remove(AVec *v, int at);
int av_find(const AVec *v, const void *p);
AVec av_copy(const AVec *v);

/* ===== map.c ===== */

/* Open-addressing hash map from pointer keys (or string keys) to pointers. */
typedef struct PtrMap {
  const void **keys;
  void **vals;
  int cap, len;
  int strkeys; /* keys are NUL-terminated strings compared by content */
} PtrMap;

void pm_init_str(PtrMap *m);
void pm_put(PtrMap *m, const void *key, void *val);
void *pm_get(const PtrMap *m, const void *key);
int pm_has(const PtrMap *m, const void *key);
void pm_free(PtrMap *m);

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hash_combine(uint64_t a, uint64_t b);

/* The greatest common divisor of |a| and |b| (of 0 and b: |b|). */
static inline int64_t gcd_i64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* ===== file.c ===== */

/* Read a whole file into a heap buffer (NUL-terminated); NULL + error. */
char *kiln_read_file(const char *path, size_t *len_out);
int kiln_write_file(const char *path, const void *data, size_t len);
/* Make a fresh private temporary directory; returns heap path or NULL. */
char *kiln_mkdtemp(const char *prefix);
int kiln_rmtree(const char *path);
double kiln_now_seconds(void); /* monotonic clock */

#endif
