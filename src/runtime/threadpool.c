/*
 * threadpool.c - Kiln's thread pool for the parallel loops of generated
 * kernels (kiln_parallel_launch).
 *
 * One process-wide pool of N-1 workers; the launching thread is the N-th.
 * A launch publishes the job (fn, cdata, num_tasks), opens it, and bumps
 * the `wake` word; workers that are spinning see the bump at once,
 * sleeping ones are woken with a futex.  The launcher waits for `done` to
 * reach num_tasks (spinning, then sleeping on `done`), closes the job, and
 * waits until no worker is still inside it (`active`), so the job fields
 * may be rewritten by the next launch without a worker seeing half of
 * them.  After a job, workers spin on `wake` for a while (pause, then
 * sched_yield so an oversubscribed machine still makes progress) before
 * they sleep, which keeps back-to-back launches cheap.
 *
 * Tasks are handed out by work stealing over contiguous ranges: each of
 * the N threads owns an equal, contiguous range of task ids, takes its own
 * tasks from the front, and when it has none left takes single tasks from
 * the back of another thread's range.  On a quiet machine every thread
 * runs exactly its own range (a static schedule, each thread's data
 * contiguous); when one thread is late - its core is shared with another
 * process, or a sleeping worker is slow to wake - the others take over
 * its work instead of waiting for it.  A launch that leaves the task count
 * to the pool (num_tasks 0, what generated kernels do) gets
 * TASKS_PER_THREAD tasks per thread, which bounds the wait for a late
 * thread to about one task.
 *
 * A worker that finds itself on the launcher's core when it joins a job
 * moves off it: its affinity becomes the process's cores but that one.
 * After a sleep the scheduler can wake a worker on the launcher's core
 * (the other core briefly busy) and leave it there, cache-hot, for tens of
 * milliseconds; the two threads then take turns on one core, slower than
 * one thread alone.  Only a worker that shares the launcher's core is
 * moved, only when the process may run on another core, and never with
 * KILN_THREAD_AFFINITY=0.
 *
 * Launches from several application threads are serialized by launch_mu
 * (one job at a time; the others wait).  A launch from inside a task runs
 * all its tasks serially in the calling thread.  A task's error message is
 * per thread, so the first failing task's message is copied into the pool
 * and set again on the launching thread.
 *
 * Workers start lazily on the first launch that needs them and are joined
 * by an atexit handler, by kiln_set_num_threads, and forgotten in a forked
 * child (which then starts its own).  Linux only (futex).
 *
 * Exports: kiln_parallel_launch, kiln_set_num_threads, kiln_get_num_threads.
 */
#define _GNU_SOURCE
#include "runtime_internal.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
  MAX_THREADS = 1024,
  SPIN_PAUSE = 2000, /* polls with a pause instruction before yielding */
  SPIN_YIELD = 500,  /* polls with sched_yield before sleeping */
  MAX_TASKS = INT_MAX / 2, /* fits a range end in 32 bits */
  TASKS_PER_THREAD = 2,    /* tasks per thread when the launch leaves it to the pool */
};

/* A thread's range of task ids [lo, hi), packed as lo | hi << 32: the owner
 * takes from lo, thieves from hi.  One cache line each. */
typedef struct {
  _Alignas(64) _Atomic uint64_t range;
} Slot;

typedef struct {
  int id;        /* the worker's slot (1..nworkers) */
  unsigned seen; /* `wake` when the worker was made */
} WorkerArg;

static struct Pool {
  pthread_mutex_t launch_mu; /* one launch at a time; guards the plain fields */
  pthread_t *workers;        /* nworkers running threads */
  WorkerArg worker_args[MAX_THREADS]; /* worker i's, at i; never moved while it runs */
  int nworkers;
  int handlers_set;          /* atexit and atfork handlers installed */
  KilnParallelTask fn;       /* the current job; written only while no */
  void *cdata;               /*   worker is inside it (open == 0, active == 0) */
  int num_tasks;
  Slot slots[MAX_THREADS];   /* per thread (0: the launcher): its tasks */
  atomic_uint done;          /* tasks finished; the launcher sleeps on it */
  atomic_int open;           /* workers may join the job */
  atomic_int active;         /* workers inside the job */
  atomic_int failed;         /* a task failed; errmsg holds the first message */
  atomic_int caller_sleeping; /* the launcher sleeps on `done` */
  atomic_uint wake;          /* bumped per job and to stop; workers sleep on it */
  atomic_int sleepers;       /* workers asleep on `wake` */
  atomic_int stop;           /* workers exit when woken */
  atomic_int launcher_cpu;   /* the core the current job's launcher runs on */
  cpu_set_t cores;           /* the process's cores when the workers started */
  int spread;                /* move a worker off the launcher's core (more than one core, no opt-out) */
  char errmsg[4096];         /* the first failing task's message */
} pool = {.launch_mu = PTHREAD_MUTEX_INITIALIZER};

static atomic_int pool_size;      /* threads kernels may use; 0 until resolved */
static _Thread_local int in_task; /* inside a task (or a worker): launches run serially */

static void futex_wait(atomic_uint *word, unsigned expected) {
  syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *word, int count) {
  syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* Spin on a condition: pause first, then yield to other runnable threads. */
static void spin_step(int round) {
  if (round < SPIN_PAUSE) cpu_relax();
  else sched_yield();
}

/* ---- the pool size ---- */

static int default_threads(void) {
  const char *env = getenv("KILN_NUM_THREADS");
  if (env && *env) {
    char *end;
    long n = strtol(env, &end, 10);
    if (!*end && n >= 1) return n > MAX_THREADS ? MAX_THREADS : (int)n;
  }
  /* The cores this process may run on (taskset, cpusets), which is the
   * number of online cores unless something restricted it. */
  cpu_set_t set;
  long n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

int kiln_get_num_threads(void) {
  int n = atomic_load(&pool_size);
  if (n) return n;
  int zero = 0;
  atomic_compare_exchange_strong(&pool_size, &zero, default_threads());
  return atomic_load(&pool_size);
}

/* ---- tasks ---- */

static void task_failed(int task_id, int num_tasks, int rc, char *buf, size_t size) {
  const char *msg = kiln_get_error();
  if (msg[0]) snprintf(buf, size, "%s", msg);
  else snprintf(buf, size, "parallel task %d of %d failed (returned %d) without setting an error",
                task_id, num_tasks, rc);
}

static void run_task(int k) {
  int n = pool.num_tasks;
  if (!atomic_load_explicit(&pool.failed, memory_order_relaxed)) {
    kiln_clear_error();
    int rc = pool.fn(k, n, pool.cdata);
    int zero = 0;
    if (rc && atomic_compare_exchange_strong(&pool.failed, &zero, 1))
      task_failed(k, n, rc, pool.errmsg, sizeof pool.errmsg);
  }
  if (atomic_fetch_add(&pool.done, 1) + 1 == (unsigned)n && atomic_load(&pool.caller_sleeping))
    futex_wake(&pool.done, 1);
}

static inline uint64_t pack(uint32_t lo, uint32_t hi) { return (uint64_t)lo | (uint64_t)hi << 32; }

/* The next task of thread `self`'s own range, or -1. */
static int take_own(int self) {
  _Atomic uint64_t *r = &pool.slots[self].range;
  uint64_t v = atomic_load(r);
  for (;;) {
    uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    if (lo >= hi) return -1;
    if (atomic_compare_exchange_weak(r, &v, pack(lo + 1, hi))) return (int)lo;
  }
}

/* The last task of another thread's range, or -1 when all are empty. */
static int steal(int self, int nslots) {
  for (int i = 1; i < nslots; i++) {
    _Atomic uint64_t *r = &pool.slots[(self + i) % nslots].range;
    uint64_t v = atomic_load(r);
    for (;;) {
      uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
      if (lo >= hi) break;
      if (atomic_compare_exchange_weak(r, &v, pack(lo, hi - 1))) return (int)(hi - 1);
    }
  }
  return -1;
}

static void run_tasks(int self) {
  int nslots = pool.nworkers + 1, k;
  while ((k = take_own(self)) >= 0 || (k = steal(self, nslots)) >= 0) run_task(k);
}

static int run_serial(KilnParallelTask fn, void *cdata, int n) {
  int saved = in_task;
  in_task = 1;
  int rc = 0;
  for (int k = 0; k < n && !rc; k++) {
    kiln_clear_error();
    int r = fn(k, n, cdata);
    if (r) {
      char msg[4096];
      task_failed(k, n, r, msg, sizeof msg);
      rc = kiln_set_error("%s", msg);
    }
  }
  in_task = saved;
  return rc;
}

/* ---- workers ---- */

static unsigned wait_wake(unsigned seen) {
  unsigned w;
  for (int i = 0; i < SPIN_PAUSE + SPIN_YIELD; i++) {
    if ((w = atomic_load(&pool.wake)) != seen) return w;
    spin_step(i);
  }
  for (;;) {
    atomic_fetch_add(&pool.sleepers, 1);
    futex_wait(&pool.wake, seen);
    atomic_fetch_sub(&pool.sleepers, 1);
    if ((w = atomic_load(&pool.wake)) != seen) return w;
  }
}

/* A worker on the launcher's core moves to the process's other cores. */
static void move_off_launcher(void) {
  int cpu = atomic_load_explicit(&pool.launcher_cpu, memory_order_relaxed);
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getcpu() != cpu) return;
  cpu_set_t set = pool.cores;
  CPU_CLR(cpu, &set);
  if (CPU_COUNT(&set) > 0) pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *worker_main(void *arg) {
  const WorkerArg *wa = arg;
  int self = wa->id;
  unsigned seen = wa->seen;
  in_task = 1;
  for (;;) {
    seen = wait_wake(seen);
    if (atomic_load(&pool.stop)) break;
    /* Join only an open job; the launcher does not close it while active > 0. */
    atomic_fetch_add(&pool.active, 1);
    if (pool.spread && atomic_load(&pool.open)) move_off_launcher();
    if (atomic_load(&pool.open)) run_tasks(self);
    atomic_fetch_sub(&pool.active, 1);
  }
  return NULL;
}

/* Stop and join the workers (launch_mu held). */
static void stop_workers(void) {
  if (!pool.nworkers) return;
  atomic_store(&pool.stop, 1);
  atomic_fetch_add(&pool.wake, 1);
  futex_wake(&pool.wake, INT_MAX);
  for (int i = 0; i < pool.nworkers; i++) pthread_join(pool.workers[i], NULL);
  free(pool.workers);
  pool.workers = NULL;
  pool.nworkers = 0;
  atomic_store(&pool.stop, 0);
}

static void pool_atexit(void) {
  /* Not from inside a task, and not while another thread is launching. */
  if (in_task || pthread_mutex_trylock(&pool.launch_mu) != 0) return;
  stop_workers();
  pthread_mutex_unlock(&pool.launch_mu);
}

static void pool_atfork_child(void) {
  /* The workers did not survive the fork; a later launch starts new ones. */
  pthread_mutex_init(&pool.launch_mu, NULL);
  free(pool.workers);
  pool.workers = NULL;
  pool.nworkers = 0;
  atomic_store(&pool.active, 0);
  atomic_store(&pool.sleepers, 0);
  atomic_store(&pool.open, 0);
  atomic_store(&pool.stop, 0);
}

/* Start the workers the pool size asks for (launch_mu held). */
static void start_workers(int size) {
  int want = size - 1;
  if (pool.nworkers >= want) return;
  if (!pool.handlers_set) {
    atexit(pool_atexit);
    pthread_atfork(NULL, NULL, pool_atfork_child);
    pool.handlers_set = 1;
  }
  /* the process's cores: its main thread's, which a launching thread's
   * own pinning does not narrow.  Decided once, before any worker exists
   * (workers read these fields without a lock); a pool of more threads
   * than cores never moves its workers, which would crowd them all onto
   * the cores the launcher is not on. */
  if (pool.nworkers == 0) {
    const char *aff = getenv("KILN_THREAD_AFFINITY");
    pool.spread = !(aff && !strcmp(aff, "0")) && sched_getaffinity(getpid(), sizeof pool.cores, &pool.cores) == 0 &&
                  CPU_COUNT(&pool.cores) > 1 && size <= CPU_COUNT(&pool.cores);
  }
  pool.workers = xrealloc(pool.workers, (size_t)want * sizeof *pool.workers);
  /* Workers block all signals, so they go to the application's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  unsigned seen = atomic_load(&pool.wake);
  while (pool.nworkers < want) {
    WorkerArg *wa = &pool.worker_args[pool.nworkers];
    wa->id = pool.nworkers + 1;
    wa->seen = seen;
    if (pthread_create(&pool.workers[pool.nworkers], NULL, worker_main, wa) != 0) break;
    pool.nworkers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int kiln_set_num_threads(int n) {
  if (n < 0 || n > MAX_THREADS)
    return kiln_set_error("set_num_threads: n must be in [0, %d], got %d", MAX_THREADS, n);
  if (in_task) return kiln_set_error("set_num_threads: not allowed inside a parallel task");
  pthread_mutex_lock(&pool.launch_mu);
  stop_workers();
  atomic_store(&pool_size, n ? n : default_threads());
  pthread_mutex_unlock(&pool.launch_mu);
  return 0;
}

/* ---- launching ---- */

static void wait_done(unsigned n) {
  for (int i = 0; atomic_load(&pool.done) < n; i++) {
    if (i < SPIN_PAUSE + SPIN_YIELD) {
      spin_step(i);
      continue;
    }
    atomic_store(&pool.caller_sleeping, 1);
    unsigned d = atomic_load(&pool.done);
    if (d < n) futex_wait(&pool.done, d);
  }
}

int kiln_parallel_launch(KilnParallelTask fn, void *cdata, int num_tasks) {
  if (!fn) return kiln_set_error("parallel_launch: the task function is NULL");
  if (num_tasks > MAX_TASKS)
    return kiln_set_error("parallel_launch: %d tasks is more than the %d allowed", num_tasks,
                          MAX_TASKS);
  int size = kiln_get_num_threads();
  int serial_n = num_tasks > 0 ? num_tasks : 1; /* the tasks when run in this thread */
  if (num_tasks == 1 || size == 1 || in_task) return run_serial(fn, cdata, serial_n);

  pthread_mutex_lock(&pool.launch_mu);
  start_workers(atomic_load(&pool_size));
  if (!pool.nworkers) {
    pthread_mutex_unlock(&pool.launch_mu);
    return run_serial(fn, cdata, serial_n);
  }
  int nslots = pool.nworkers + 1;
  int n = num_tasks > 0 ? num_tasks : nslots * TASKS_PER_THREAD;
  pool.fn = fn;
  pool.cdata = cdata;
  pool.num_tasks = n;
  if (pool.spread) atomic_store_explicit(&pool.launcher_cpu, sched_getcpu(), memory_order_relaxed);
  for (int i = 0; i < nslots; i++)
    atomic_store(&pool.slots[i].range, pack((uint32_t)((int64_t)n * i / nslots),
                                            (uint32_t)((int64_t)n * (i + 1) / nslots)));
  atomic_store(&pool.done, 0);
  atomic_store(&pool.failed, 0);
  atomic_store(&pool.caller_sleeping, 0);
  atomic_store(&pool.open, 1);
  atomic_fetch_add(&pool.wake, 1);
  if (atomic_load(&pool.sleepers) > 0)
    futex_wake(&pool.wake, n - 1 < pool.nworkers ? n - 1 : pool.nworkers);

  in_task = 1;
  run_tasks(0);
  in_task = 0;
  wait_done((unsigned)n);
  atomic_store(&pool.open, 0);
  for (int i = 0; atomic_load(&pool.active) != 0; i++) spin_step(i);

  int rc = atomic_load(&pool.failed) ? kiln_set_error("%s", pool.errmsg) : 0;
  pthread_mutex_unlock(&pool.launch_mu);
  return rc;
}
