/*
 * memory_plan.c - storage for a graph's tensors, reused by liveness
 * (TVM's GraphPlanMemory with its 1-D token allocator).
 *
 * Walk the nodes in run order holding "tokens" (future storage ids), each
 * with a size, a device and a count of the uses still to come of the
 * entries it holds:
 *   - an argument node's outputs get new tokens that are never released;
 *   - an operator's outputs each take a free token of the same device whose
 *     size is within a factor of R -- the smallest at least as large, else
 *     the largest smaller one, which grows to fit -- or a new token; then the
 *     tokens of its inputs lose one use each, and a token with no use left
 *     goes back to the free list (a head's token never does); a graph
 *     output (a head) takes only a free token of exactly its size that has
 *     held no entry of another size, so that its storage holds entries of
 *     one size: with a batch, a buffer holding an output keeps the
 *     output's layout, and the samples can run one by one, each through
 *     every kernel, only where every entry sharing it lies at that stride
 *     (graph_sym.c, sample_major_setup);
 *   - an alias node ("__nop") hands its output input 0's token.
 * Outputs are placed before the inputs are released, so an operator never
 * writes the storage it reads -- except a node marked in place (an
 * elementwise kernel), whose output takes its input's token when that
 * input's only remaining use is this node and the sizes are equal: the
 * kernel reads each element before it writes it.  The storage ids are the tokens in order of
 * creation.
 *
 * The walk runs once per R in MATCH_RANGES (TVM's 16, then narrower) and
 * the plan of the fewest bytes is kept: whichever R fits a graph best, the
 * plan is never larger than TVM's.
 *
 * Views (kiln_graph_plan_memory_views): a concatenation whose inputs lie
 * end to end in its output (KILN_PLAN_CONCAT) and which passes
 * concat_views' rule takes its token when the first of its inputs is
 * computed, holding the uses of all its inputs and of its output; each
 * input is then placed in that token at its offset instead of a token of
 * its own, and the concatenation computes nothing.
 *
 * Exports: kiln_graph_plan_memory, kiln_graph_plan_memory_views.
 */
#include "runtime_internal.h"

#include <stdlib.h>
#include <string.h>

/* The walk's factors for reusing a free token (TVM's match_range is 16):
 * each gives a plan and the one with the fewest bytes is kept, the
 * earliest on a tie.  A wide range lets a small tensor take a large free
 * token, which a large tensor right after it then misses and grows
 * another; a narrow one gives the small tensor its own. */
static const uint64_t MATCH_RANGES[] = {16, 4, 2, 1};
#define VIEW_ALIGN 64  /* a view's offset: KILN_ARRAY_ALIGN, which kernels may assume */

typedef struct Token {
  uint64_t bytes; /* the largest entry placed in it so far */
  int32_t device; /* entry_device of its entries */
  int64_t uses;   /* uses still to come of the entries it holds */
  int pinned;     /* an argument's or a head's: never released */
  int is_free;    /* on the free list */
  int mixed;      /* has held entries of different sizes */
} Token;

typedef struct Planner {
  Token *tok;
  int ntok, cap;
  int *free_list; /* token ids, in order of release */
  int nfree;
} Planner;

static int new_token(Planner *p, uint64_t bytes, int32_t device) {
  if (p->ntok == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 16;
    p->tok = xrealloc(p->tok, (size_t)p->cap * sizeof *p->tok);
    p->free_list = xrealloc(p->free_list, (size_t)p->cap * sizeof *p->free_list);
  }
  p->tok[p->ntok] = (Token){.bytes = bytes, .device = device};
  return p->ntok++;
}

/* TVM's TokenAllocator1D::Request: a free token of the device sized in
 * [bytes, bytes * range] (the smallest; ties to the earliest released),
 * else in [bytes / range, bytes) (the largest); -1 if none.  With exact (a
 * head), only a token of exactly bytes that has held no other size. */
static int request(Planner *p, uint64_t bytes, int32_t device, int exact, uint64_t range) {
  uint64_t lo = bytes / range;
  uint64_t hi = bytes > UINT64_MAX / range ? UINT64_MAX : bytes * range;
  int best_up = -1, best_down = -1;
  for (int i = 0; i < p->nfree; i++) {
    Token *t = &p->tok[p->free_list[i]];
    if (t->device != device || (exact && (t->bytes != bytes || t->mixed))) continue;
    if (t->bytes >= bytes && t->bytes <= hi) {
      if (best_up < 0 || t->bytes < p->tok[p->free_list[best_up]].bytes) best_up = i;
    } else if (t->bytes < bytes && t->bytes >= lo) {
      if (best_down < 0 || t->bytes > p->tok[p->free_list[best_down]].bytes) best_down = i;
    }
  }
  int pick = best_up >= 0 ? best_up : best_down;
  if (pick < 0) return -1;
  int id = p->free_list[pick];
  memmove(p->free_list + pick, p->free_list + pick + 1,
          (size_t)(p->nfree - pick - 1) * sizeof *p->free_list);
  p->nfree--;
  p->tok[id].is_free = 0;
  if (p->tok[id].bytes != bytes) p->tok[id].mixed = 1;
  if (p->tok[id].bytes < bytes) p->tok[id].bytes = bytes;
  return id;
}

static void release_if_unused(Planner *p, int id) {
  Token *t = &p->tok[id];
  if (t->pinned || t->uses > 0 || t->is_free) return;
  t->is_free = 1;
  p->free_list[p->nfree++] = id;
}

/* Whether concatenation node n's inputs become views into its output
 * (runtime.h, kiln_graph_plan_memory_views): the output not a head; each
 * input read by n alone (so listed once), not a head, computed by an
 * operator on the output's device, at a 64-byte multiple; the inputs'
 * bytes add up to the output's. */
static int concat_views(const KilnPlanNode *nodes, int n, const int32_t *producer,
                        const int64_t *uses, const uint8_t *is_head, const uint64_t *bytes,
                        const int32_t *device) {
  const KilnPlanNode *nd = &nodes[n];
  int32_t out = nd->first_output;
  if (nd->num_outputs != 1 || nd->num_inputs < 1 || is_head[out]) return 0;
  uint64_t at = 0;
  for (int i = 0; i < nd->num_inputs; i++) {
    int32_t e = nd->inputs[i];
    if (at % VIEW_ALIGN || uses[e] != 1 || is_head[e] || nodes[producer[e]].kind != KILN_PLAN_OP ||
        (device && device[e] != device[out]))
      return 0;
    at += bytes[e];
  }
  return at == bytes[out];
}

/* What every walk reads: the graph, the uses of each entry, the heads and
 * the views (view_of[e], the concatenation node whose storage entry e
 * lies in at view_at[e]; NULL without views). */
typedef struct Walk {
  int num_nodes, num_entries;
  const KilnPlanNode *nodes;
  const uint64_t *entry_bytes;
  const int32_t *entry_device;
  const int64_t *uses;
  const uint8_t *is_head;
  const int32_t *view_of;
  const uint64_t *view_at;
} Walk;

/* One walk over the nodes in run order, reusing free tokens within a
 * factor of range; p starts empty and ends with the plan's tokens.
 * concat_tok[n] is concatenation n's token once taken. */
static void walk(const Walk *w, uint64_t range, Planner *p, int32_t *storage_id,
                 uint64_t *storage_offset, int32_t *concat_tok) {
  p->ntok = p->nfree = 0;
  if (storage_offset)
    for (int e = 0; e < w->num_entries; e++) storage_offset[e] = 0;
  if (concat_tok)
    for (int n = 0; n < w->num_nodes; n++) concat_tok[n] = -1;
  for (int n = 0; n < w->num_nodes; n++) {
    const KilnPlanNode *nd = &w->nodes[n];
    int alias = nd->kind == KILN_PLAN_ALIAS && nd->num_outputs == 1 && nd->num_inputs >= 1;
    /* a concatenation whose inputs are views: its output is placed */
    int placed = concat_tok && concat_tok[n] >= 0;
    if (alias) {
      int32_t in = nd->inputs[0], out = nd->first_output;
      int32_t dev = w->entry_device ? w->entry_device[out] : 0;
      int id = storage_id[in];
      if (p->tok[id].device != dev) alias = 0; /* cannot share across devices: copy instead */
      else {
        storage_id[out] = id;
        if (storage_offset) storage_offset[out] = storage_offset[in];
        p->tok[id].uses += w->uses[out];
        if (p->tok[id].bytes != w->entry_bytes[out]) p->tok[id].mixed = 1;
        if (p->tok[id].bytes < w->entry_bytes[out]) p->tok[id].bytes = w->entry_bytes[out];
        if (w->is_head[out]) p->tok[id].pinned = 1;
      }
    }
    /* in place: the output takes over the input's storage when this node
     * is the input's last use (no later reader, not an argument or a head)
     * and the sizes are equal */
    int inplace_in = -1;
    if (!alias && nd->kind == KILN_PLAN_OP && nd->inplace_input > 0 &&
        nd->inplace_input <= nd->num_inputs && nd->num_outputs == 1 &&
        !(w->view_of && w->view_of[nd->first_output] >= 0)) {
      int32_t in = nd->inputs[nd->inplace_input - 1], out = nd->first_output;
      int id = storage_id[in];
      Token *t = &p->tok[id];
      int32_t dev = w->entry_device ? w->entry_device[out] : 0;
      if (!t->pinned && t->uses == 1 && t->device == dev && w->entry_bytes[in] == w->entry_bytes[out]) {
        storage_id[out] = id;
        t->uses = w->uses[out] + 1; /* + this node's read, released below */
        t->pinned = w->is_head[out];
        inplace_in = nd->inplace_input - 1;
      }
    }
    if (!alias && !placed && inplace_in < 0) {
      for (int k = 0; k < nd->num_outputs; k++) {
        int32_t e = nd->first_output + k;
        int32_t dev = w->entry_device ? w->entry_device[e] : 0;
        int c = w->view_of ? w->view_of[e] : -1;
        if (c >= 0) { /* a view: the first input computed takes the concatenation's token */
          if (concat_tok[c] < 0) {
            int32_t out = w->nodes[c].first_output;
            int id = request(p, w->entry_bytes[out], dev, 0, range);
            if (id < 0) id = new_token(p, w->entry_bytes[out], dev);
            p->tok[id].uses = w->nodes[c].num_inputs + w->uses[out];
            p->tok[id].pinned = 0;
            storage_id[out] = concat_tok[c] = id;
          }
          storage_id[e] = concat_tok[c];
          storage_offset[e] = w->view_at[e];
          p->tok[concat_tok[c]].mixed = 1;
          continue;
        }
        int id = nd->kind == KILN_PLAN_ARG ? -1 : request(p, w->entry_bytes[e], dev, w->is_head[e], range);
        if (id < 0) id = new_token(p, w->entry_bytes[e], dev);
        p->tok[id].uses = w->uses[e];
        p->tok[id].pinned = nd->kind == KILN_PLAN_ARG || w->is_head[e];
        storage_id[e] = id;
      }
    }
    for (int i = 0; i < nd->num_inputs; i++) {
      int id = storage_id[nd->inputs[i]];
      p->tok[id].uses--;
      release_if_unused(p, id);
    }
    if (!alias)
      for (int k = 0; k < nd->num_outputs; k++) release_if_unused(p, storage_id[nd->first_output + k]);
  }
}

static int plan_memory(int num_nodes, const KilnPlanNode *nodes, int num_entries,
                       const uint64_t *entry_bytes, const int32_t *entry_device, int num_heads,
                       const int32_t *heads, int32_t *storage_id, uint64_t *storage_offset,
                       KilnMemoryPlan *plan) {
  if (num_nodes < 0 || num_entries < 0 || num_heads < 0)
    return kiln_set_error("plan_memory: negative count (nodes %d, entries %d, heads %d)",
                          num_nodes, num_entries, num_heads);
  if ((num_nodes && !nodes) || (num_entries && (!entry_bytes || !storage_id)) ||
      (num_heads && !heads))
    return kiln_set_error("plan_memory: a NULL array");

  /* Check the graph's shape and count the uses of each entry. */
  int64_t *uses = xcalloc((size_t)num_entries + 1, sizeof *uses);
  int32_t *producer = xmalloc(((size_t)num_entries + 1) * sizeof *producer);
  uint8_t *is_head = xcalloc((size_t)num_entries + 1, 1);
  for (int e = 0; e < num_entries; e++) producer[e] = -1;
  int rc = -1;
  Planner p = {0};
  int32_t *view_of = NULL, *concat_tok = NULL, *try_sid = NULL;
  uint64_t *view_at = NULL, *try_off = NULL;
  int num_views = 0;
  for (int n = 0; n < num_nodes; n++) {
    const KilnPlanNode *nd = &nodes[n];
    if (nd->kind < KILN_PLAN_ARG || nd->kind > KILN_PLAN_CONCAT) {
      kiln_set_error("plan_memory: node %d has kind %d, expected 0 (arg), 1 (op), 2 (alias) or 3 "
                     "(concat)", n, nd->kind);
      goto done;
    }
    if (nd->num_inputs < 0 || nd->num_outputs < 0 || (nd->num_inputs && !nd->inputs) ||
        nd->first_output < 0 || (int64_t)nd->first_output + nd->num_outputs > num_entries) {
      kiln_set_error("plan_memory: node %d: outputs %d..%lld are outside the %d entries (or a bad "
                     "input list)", n, nd->first_output,
                     (long long)nd->first_output + nd->num_outputs - 1, num_entries);
      goto done;
    }
    for (int i = 0; i < nd->num_inputs; i++) {
      int32_t e = nd->inputs[i];
      if (e < 0 || e >= num_entries || producer[e] < 0) {
        kiln_set_error("plan_memory: node %d: input %d is entry %d, which no earlier node produces",
                       n, i, e);
        goto done;
      }
      uses[e]++;
    }
    for (int k = 0; k < nd->num_outputs; k++) {
      int32_t e = nd->first_output + k;
      if (producer[e] >= 0) {
        kiln_set_error("plan_memory: entry %d is an output of both node %d and node %d", e,
                       producer[e], n);
        goto done;
      }
      producer[e] = n;
    }
  }
  for (int e = 0; e < num_entries; e++)
    if (producer[e] < 0) {
      kiln_set_error("plan_memory: entry %d is the output of no node", e);
      goto done;
    }
  for (int h = 0; h < num_heads; h++) {
    if (heads[h] < 0 || heads[h] >= num_entries) {
      kiln_set_error("plan_memory: head %d is entry %d, outside 0..%d", h, heads[h],
                     num_entries - 1);
      goto done;
    }
    is_head[heads[h]] = 1;
  }

  /* views: view_of[e] is the concatenation node whose storage input e lies
   * in, at view_at[e] */
  if (storage_offset) {
    view_of = xmalloc(((size_t)num_entries + 1) * sizeof *view_of);
    view_at = xcalloc((size_t)num_entries + 1, sizeof *view_at);
    concat_tok = xmalloc(((size_t)num_nodes + 1) * sizeof *concat_tok);
    for (int e = 0; e < num_entries; e++) view_of[e] = -1;
    for (int n = 0; n < num_nodes; n++) {
      const KilnPlanNode *nd = &nodes[n];
      if (nd->kind != KILN_PLAN_CONCAT ||
          !concat_views(nodes, n, producer, uses, is_head, entry_bytes, entry_device))
        continue;
      uint64_t at = 0;
      for (int i = 0; i < nd->num_inputs; i++) {
        view_of[nd->inputs[i]] = n;
        view_at[nd->inputs[i]] = at;
        at += entry_bytes[nd->inputs[i]];
        num_views++;
      }
    }
  }

  /* a walk per match range, the plan of the fewest bytes kept */
  Walk w = {num_nodes, num_entries, nodes, entry_bytes, entry_device, uses, is_head, view_of, view_at};
  try_sid = xmalloc(((size_t)num_entries + 1) * sizeof *try_sid);
  if (storage_offset) try_off = xmalloc(((size_t)num_entries + 1) * sizeof *try_off);
  uint64_t best = UINT64_MAX;
  int best_ntok = 0;
  for (size_t r = 0; r < sizeof MATCH_RANGES / sizeof *MATCH_RANGES; r++) {
    walk(&w, MATCH_RANGES[r], &p, try_sid, try_off, concat_tok);
    uint64_t total = 0;
    for (int t = 0; t < p.ntok; t++) total += p.tok[t].bytes;
    if (total >= best) continue;
    best = total;
    best_ntok = p.ntok;
    memcpy(storage_id, try_sid, (size_t)num_entries * sizeof *storage_id);
    if (storage_offset) memcpy(storage_offset, try_off, (size_t)num_entries * sizeof *storage_offset);
  }

  if (plan) {
    plan->num_storage = best_ntok;
    plan->planned_bytes = best;
    plan->naive_bytes = 0;
    plan->num_views = num_views;
    for (int e = 0; e < num_entries; e++) plan->naive_bytes += entry_bytes[e];
  }
  rc = 0;
done:
  free(try_sid);
  free(try_off);
  free(uses);
  free(producer);
  free(is_head);
  free(p.tok);
  free(p.free_list);
  free(view_of);
  free(view_at);
  free(concat_tok);
  return rc;
}

int kiln_graph_plan_memory(int num_nodes, const KilnPlanNode *nodes, int num_entries,
                           const uint64_t *entry_bytes, const int32_t *entry_device,
                           int num_heads, const int32_t *heads, int32_t *storage_id,
                           KilnMemoryPlan *plan) {
  return plan_memory(num_nodes, nodes, num_entries, entry_bytes, entry_device, num_heads, heads,
                     storage_id, NULL, plan);
}

int kiln_graph_plan_memory_views(int num_nodes, const KilnPlanNode *nodes, int num_entries,
                                 const uint64_t *entry_bytes, const int32_t *entry_device,
                                 int num_heads, const int32_t *heads, int32_t *storage_id,
                                 uint64_t *storage_offset, KilnMemoryPlan *plan) {
  if (num_entries > 0 && !storage_offset)
    return kiln_set_error("plan_memory: storage_offset is NULL");
  return plan_memory(num_nodes, nodes, num_entries, entry_bytes, entry_device, num_heads, heads,
                     storage_id, storage_offset, plan);
}
