/*
 * The dispatch cache: (policy hash, family, path, shape) -> plan.
 *
 * A shape is (n, k, groups, rows) where rows is the shape bucket
 * (vg_tune_bucket_rows) of M on the dense path, of the rows of the largest
 * group on grouped, loop and moe.  Items
 * that differ only in rows form a series, kept sorted by rows, so the
 * frozen-device lookup "the next larger measured shape in the same
 * partition, family and path" is the same binary search as the exact one.
 *
 * Series live in an open-addressing hash table (linear probing, load at most
 * one half).  One rwlock guards it all: every lookup takes it for reading,
 * which costs a few tens of nanoseconds uncontended; inserts (one per
 * measured shape) and LUT imports take it for writing.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t mix(uint64_t h)
{
    /* splitmix64's finalizer: cheap and spreads every input bit. */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

static uint64_t series_hash(const vg_cache_key *k)
{
    uint64_t h = mix(k->policy);
    h = mix(h ^ ((uint64_t)(uint32_t)k->n << 32 | (uint32_t)k->k));
    h = mix(h ^ ((uint64_t)(uint32_t)k->groups << 16 | (uint64_t)k->family << 8 |
                 (uint64_t)k->path));
    return h;
}

static int series_matches(const vg_series *s, const vg_cache_key *k)
{
    return s->policy == k->policy && s->n == k->n && s->k == k->k &&
           s->groups == k->groups && s->family == (uint8_t)k->family &&
           s->path == (uint8_t)k->path;
}

/* The slot of key's series, or of the empty slot where it would go. */
static vg_series *probe(vg_series *slots, size_t nslots, const vg_cache_key *k)
{
    size_t mask = nslots - 1;
    for (size_t i = series_hash(k) & mask;; i = (i + 1) & mask)
        if (!slots[i].used || series_matches(&slots[i], k))
            return &slots[i];
}

/* First item with rows >= `rows` (count when none). */
static size_t lower_bound(const vg_series *s, int32_t rows)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->items[mid].rows < rows)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

vg_status vg_cache_init(vg_cache *c)
{
    memset(c, 0, sizeof *c);
    c->nslots = 64;
    c->slots = calloc(c->nslots, sizeof *c->slots);
    if (!c->slots)
        return vg_fail(VG_ERR_NO_MEMORY, "dispatch cache: out of memory");
    if (pthread_rwlock_init(&c->lock, NULL) != 0) {
        free(c->slots);
        return vg_fail(VG_ERR_INTERNAL, "dispatch cache: rwlock init failed");
    }
    return VG_OK;
}

void vg_cache_destroy(vg_cache *c)
{
    if (!c->slots)
        return;
    for (size_t i = 0; i < c->nslots; i++)
        free(c->slots[i].items);
    free(c->slots);
    c->slots = NULL;
    pthread_rwlock_destroy(&c->lock);
}

int vg_cache_find(vg_cache *c, const vg_cache_key *key, const vg_plan **plan)
{
    int found = 0;
    pthread_rwlock_rdlock(&c->lock);
    const vg_series *s = probe(c->slots, c->nslots, key);
    if (s->used) {
        size_t i = lower_bound(s, key->rows);
        if (i < s->count && s->items[i].rows == key->rows) {
            *plan = s->items[i].plan;
            found = 1;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return found;
}

int vg_cache_find_at_least(vg_cache *c, const vg_cache_key *key, const vg_plan **plan,
                           int32_t *found_rows)
{
    int found = 0;
    pthread_rwlock_rdlock(&c->lock);
    const vg_series *s = probe(c->slots, c->nslots, key);
    if (s->used) {
        size_t i = lower_bound(s, key->rows);
        if (i < s->count) {
            *plan = s->items[i].plan;
            *found_rows = s->items[i].rows;
            found = 1;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return found;
}

/* Doubles the table; called with the write lock held. */
static vg_status grow(vg_cache *c)
{
    size_t nslots = c->nslots * 2;
    vg_series *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return vg_fail(VG_ERR_NO_MEMORY, "dispatch cache: out of memory");
    for (size_t i = 0; i < c->nslots; i++) {
        if (!c->slots[i].used)
            continue;
        const vg_series *old = &c->slots[i];
        vg_cache_key k = {.policy = old->policy, .family = (vg_family)old->family,
                          .path = (vg_path)old->path, .n = old->n, .k = old->k,
                          .groups = old->groups};
        *probe(slots, nslots, &k) = *old;
    }
    free(c->slots);
    c->slots = slots;
    c->nslots = nslots;
    return VG_OK;
}

vg_status vg_cache_put(vg_cache *c, const vg_cache_key *key, const vg_plan *plan,
                       double time_us, int imported, int *was_new)
{
    return vg_cache_put_stamped(c, key, plan, time_us, imported, 0, 0, was_new);
}

vg_status vg_cache_put_stamped(vg_cache *c, const vg_cache_key *key, const vg_plan *plan,
                               double time_us, int imported, uint64_t build, uint64_t planset,
                               int *was_new)
{
    vg_status st = VG_OK;
    if (was_new)
        *was_new = 0;
    pthread_rwlock_wrlock(&c->lock);
    if ((c->nused + 1) * 2 > c->nslots && (st = grow(c)) != VG_OK)
        goto out;
    vg_series *s = probe(c->slots, c->nslots, key);
    if (!s->used) {
        memset(s, 0, sizeof *s);
        s->used = 1;
        s->policy = key->policy;
        s->n = key->n;
        s->k = key->k;
        s->groups = key->groups;
        s->family = (uint8_t)key->family;
        s->path = (uint8_t)key->path;
        c->nused++;
    }
    size_t i = lower_bound(s, key->rows);
    if (i < s->count && s->items[i].rows == key->rows) {
        s->items[i].plan = plan;     /* replace: a LUT import or a re-measure */
        s->items[i].time_us = time_us;
        s->items[i].imported = imported;
        s->items[i].build = build;
        s->items[i].planset = planset;
        goto out;
    }
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        vg_cache_item *items = realloc(s->items, cap * sizeof *items);
        if (!items) {
            st = vg_fail(VG_ERR_NO_MEMORY, "dispatch cache: out of memory");
            goto out;
        }
        s->items = items;
        s->cap = cap;
    }
    memmove(&s->items[i + 1], &s->items[i], (s->count - i) * sizeof *s->items);
    s->items[i] = (vg_cache_item){.rows = key->rows, .plan = plan, .time_us = time_us,
                                  .imported = imported, .build = build, .planset = planset};
    s->count++;
    c->entries++;
    if (was_new)
        *was_new = 1;
out:
    pthread_rwlock_unlock(&c->lock);
    return st;
}

void vg_cache_visit(vg_cache *c, uint64_t policy, vg_cache_visit_fn fn, void *user)
{
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->nslots; i++) {
        const vg_series *s = &c->slots[i];
        if (!s->used || (policy && s->policy != policy))
            continue;
        for (size_t j = 0; j < s->count; j++)
            fn(s, &s->items[j], user);
    }
    pthread_rwlock_unlock(&c->lock);
}

uint64_t vg_cache_entries(vg_cache *c)
{
    pthread_rwlock_rdlock(&c->lock);
    uint64_t n = c->entries;
    pthread_rwlock_unlock(&c->lock);
    return n;
}
