/* ETDM's top-down walk and greedy sibling assignment, compiled (design §5; etdm.py).
 *
 * The Python module etdm.py stays the reference: `_Mapper` there and the literal
 * `reference_map` of tests/transforms/test_etdm.py define what a mapping is, and the tests run every
 * tree through both. This file computes the same mapping for grouping "pair" (the product's
 * rule; grouping "node", the thesis's, stays in Python) with the same IEEE operations in the
 * same order, so scores are equal bit for bit:
 *   base  = wc·classes + wa·attributes + wch·children     (left to right)
 *   score = floor((base + wp·position)·1e9 + 0.5) / 1e9   (quantized; + certain floor if certain)
 * It must be compiled without floating-point contraction (setup.py passes -ffp-contract=off):
 * a fused multiply-add rounds once where numpy rounds twice, and ties would then break
 * differently from the Python path.
 *
 * No recursion over the DOM: the walk is a queue of sibling groups, one wave per tree level,
 * like the Python code. Groups of one wave are independent (their nodes are disjoint and
 * their parents are already paired), so the order in which a wave's groups are solved does
 * not change the mapping.
 *
 * Only the Python C API and the buffer protocol are used (no numpy headers), so the build
 * needs nothing beyond a C compiler and Python's headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_MATCH (-INFINITY)
#define CHECK_CELLS (1u << 16)      /* pairs scored between two budget checks (map_tree) */

typedef struct {
    const int64_t *ptr, *idx, *count;           /* children CSR (key: after exclusion), child counts */
    const int64_t *tag, *id_hash;
    const int64_t *cls_ptr, *cls_val, *attr_ptr, *attr_val;  /* per node: its set, sorted, no repeats */
    const int64_t *text_start, *text_end;       /* per text node: its span of the compared text */
    int text_kind;                              /* the compared text, a str: PyUnicode kind and data */
    const void *text_data;
    Py_ssize_t size;
} Side;

typedef struct {
    double wc, wp, wa, wch, tq, cert;
    int opt, text_equality;
    int64_t text_tag, over_pairs, group_size, group_over;
} Params;

/* A sibling group. Real: key nodes k[0..m) against other nodes o[0..n). Virtual: the spans
 * [alo, ahi) of key node pa's children and [blo, bhi) of other node pb's, to be cut into chunks. */
typedef struct {
    int is_virtual;
    const int64_t *k, *o;
    int64_t m, n;
    int64_t pa, alo, ahi, pb, blo, bhi;
} Group;

typedef struct {
    Group *items;
    size_t len, cap;
} Groups;

typedef struct {
    double *base, *score, *bound;
    unsigned char *flags;       /* bit 0 candidate, bit 1 same id, bit 2 classes = attributes = 1 */
    unsigned char *used_r, *used_c;
    int64_t *rank_r, *rank_c, *anchors_r, *anchors_c, *taken;
    int64_t *live;              /* option 3: the candidate cells still open, in row-major order */
    size_t cells, rows, cols;
} Work;

enum { CAND = 1, IDC = 2, CA1 = 4 };

static double quantize(double x) { return floor(x * 1e9 + 0.5) / 1e9; }

static int push(Groups *g, Group item) {
    if (g->len == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        Group *p = realloc(g->items, cap * sizeof(Group));
        if (!p) return -1;
        g->items = p;
        g->cap = cap;
    }
    g->items[g->len++] = item;
    return 0;
}

/* Per-row (or per-column) work arrays for `need` entries: used flags, ranks among the unused,
 * and the anchor list (its two sentinels included). */
static int grow_side(size_t need, size_t *have, unsigned char **used, int64_t **rank, int64_t **anchors) {
    if (need <= *have) return 0;
    unsigned char *u = realloc(*used, need);
    if (!u) return -1;
    *used = u;
    int64_t *k = realloc(*rank, need * sizeof(int64_t));
    if (!k) return -1;
    *rank = k;
    int64_t *a = realloc(*anchors, need * sizeof(int64_t));
    if (!a) return -1;
    *anchors = a;
    *have = need;
    return 0;
}

static int reserve(Work *w, int64_t m, int64_t n) {
    size_t cells = (size_t)m * (size_t)n;
    if (cells > w->cells) {
        double *b = realloc(w->base, cells * sizeof(double));
        if (!b) return -1;
        w->base = b;
        double *s = realloc(w->score, cells * sizeof(double));
        if (!s) return -1;
        w->score = s;
        unsigned char *f = realloc(w->flags, cells);
        if (!f) return -1;
        w->flags = f;
        int64_t *t = realloc(w->taken, 2 * cells * sizeof(int64_t));
        if (!t) return -1;
        w->taken = t;
        int64_t *l = realloc(w->live, 3 * cells * sizeof(int64_t));
        if (!l) return -1;
        w->live = l;
        double *u = realloc(w->bound, 2 * cells * sizeof(double));
        if (!u) return -1;
        w->bound = u;
        w->cells = cells;
    }
    if (grow_side((size_t)m + 2, &w->rows, &w->used_r, &w->rank_r, &w->anchors_r) < 0) return -1;
    if (grow_side((size_t)n + 2, &w->cols, &w->used_c, &w->rank_c, &w->anchors_c) < 0) return -1;
    return 0;
}

/* The scores' arithmetic, inlined into the loops over a group's cells: called, it costs a fifth
 * of a page's template mapping (option 3 rescores every open cell after each pair). */
#if defined(_MSC_VER)
#define CELL_INLINE static __forceinline
#else
#define CELL_INLINE static inline __attribute__((always_inline))
#endif

/* position_score of etdm.py: child i of ca siblings against child j of cb siblings. */
CELL_INLINE double position(int64_t i, int64_t ca, int64_t j, int64_t cb) {
    int64_t k = cb - ca;
    int64_t lo = i + (k < 0 ? k : 0), hi = i + (k > 0 ? k : 0);
    int64_t d = lo - j;
    if (j - hi > d) d = j - hi;
    if (d < 0) d = 0;
    int64_t mn = ca < cb ? ca : cb;
    if (d == 0 && mn > 0) return 1.0;      /* 1 - 0 / mn, without the division */
    double v = 1.0 - (double)d / (double)mn;
    return v < 0.0 ? 0.0 : v;
}

CELL_INLINE double encode(const Params *p, double base, double pos, unsigned char f) {
    if (!(f & CAND)) return NO_MATCH;
    double x = base + p->wp * pos;
    int certain = (f & IDC) || ((f & CA1) && pos == 1.0);
    /* quantize moves x by half a step of 1e-9 at most: far below the threshold, it cannot
     * reach it, and the rounding is not needed to know that. */
    if (!certain && x < p->tq - 1e-6) return NO_MATCH;
    double s = quantize(x);
    if (certain) return p->cert + s;
    return s >= p->tq ? s : NO_MATCH;
}

/* Jaccard of node a's set (values[ptr[a]:ptr[a+1]]) and node b's of the other page: both
 * empty → 1, one empty → 0 (as etdm.py's _jaccard). */
static double jaccard(const int64_t *pa, const int64_t *va, int64_t a,
                      const int64_t *pb, const int64_t *vb, int64_t b) {
    int64_t i = pa[a], ie = pa[a + 1], j = pb[b], je = pb[b + 1];
    int64_t la = ie - i, lb = je - j, inter = 0;
    if (la == 0 || lb == 0) return (la == 0 && lb == 0) ? 1.0 : 0.0;
    while (i < ie && j < je) {
        if (va[i] < vb[j]) i++;
        else if (va[i] > vb[j]) j++;
        else { inter++; i++; j++; }
    }
    return (double)inter / (double)(la + lb - inter);
}

static int same_text(const Side *K, int64_t a, const Side *O, int64_t b) {
    int64_t sa = K->text_start[a], sb = O->text_start[b], len = K->text_end[a] - sa;
    if (O->text_end[b] - sb != len) return 0;
    if (K->text_kind == O->text_kind)
        return memcmp((const char *)K->text_data + sa * K->text_kind,
                      (const char *)O->text_data + sb * O->text_kind, (size_t)(len * K->text_kind)) == 0;
    for (int64_t k = 0; k < len; k++)
        if (PyUnicode_READ(K->text_kind, K->text_data, sa + k) != PyUnicode_READ(O->text_kind, O->text_data, sb + k))
            return 0;
    return 1;
}

/* _Mapper._static (and _static_one): position-free parts of the score of real nodes a, b. */
static unsigned char static_parts(const Params *p, const Side *K, int64_t a, const Side *O, int64_t b,
                                  double *base_out) {
    if (K->tag[a] != O->tag[b]) return 0;
    if (p->text_equality && K->tag[a] == p->text_tag && !same_text(K, a, O, b)) return 0;
    double cls = jaccard(K->cls_ptr, K->cls_val, a, O->cls_ptr, O->cls_val, b);
    double att = jaccard(K->attr_ptr, K->attr_val, a, O->attr_ptr, O->attr_val, b);
    int64_t ck = K->count[a], co = O->count[b];
    int64_t mx = ck > co ? ck : co, mn = ck < co ? ck : co;
    double ch = mx == 0 ? 1.0 : (double)mn / (double)mx;
    double base = p->wc * cls + p->wa * att + p->wch * ch;
    int idc = K->id_hash[a] != 0 && K->id_hash[a] == O->id_hash[b];
    int ca1 = cls == 1.0 && att == 1.0;
    if (!(idc || ca1 || quantize(base + p->wp) >= p->tq)) return 0;
    *base_out = base;
    return (unsigned char)(CAND | (idc ? IDC : 0) | (ca1 ? CA1 : 0));
}

/* Scores of the rows [r0, r1) × columns [c0, c1): positions over that gap's unmatched
 * children (inside), or position 0 (a pair crossing an anchor, option 2). */
static void fill(const Params *p, Work *w, int64_t n, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                 int inside) {
    if (r0 >= r1 || c0 >= c1) return;
    int64_t sr = 0, sc = 0;
    for (int64_t r = r0; r < r1; r++) if (!w->used_r[r]) w->rank_r[r] = sr++;
    for (int64_t c = c0; c < c1; c++) if (!w->used_c[c]) w->rank_c[c] = sc++;
    for (int64_t r = r0; r < r1; r++) {
        double *S = w->score + r * n;
        const double *B = w->base + r * n;
        const unsigned char *F = w->flags + r * n;
        for (int64_t c = c0; c < c1; c++) {
            if (sr == 0 || sc == 0 || w->used_r[r] || w->used_c[c]) { S[c] = NO_MATCH; continue; }
            double pos = inside ? position(w->rank_r[r], sr, w->rank_c[c], sc) : 0.0;
            S[c] = encode(p, B[c], pos, F[c]);
        }
    }
}

static void forbid(Work *w, int64_t n, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++) w->score[r * n + c] = NO_MATCH;
}

static int64_t bisect_left(const int64_t *a, int64_t len, int64_t x) {
    int64_t lo = 0, hi = len;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static void insert_at(int64_t *a, int64_t len, int64_t at, int64_t x) {
    memmove(a + at + 1, a + at, (size_t)(len - at) * sizeof(int64_t));
    a[at] = x;
}

typedef struct { double s; int64_t x, y; } Ranked;

static int by_score(const void *u, const void *v) {
    const Ranked *a = u, *b = v;
    if (a->s != b->s) return a->s > b->s ? -1 : 1;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->y > b->y) - (a->y < b->y);
}

/* Option 3's loop of solve, on scores S already filled: every cell outside the candidates
 * (flags CAND) holds NO_MATCH and keeps it (encode gives a non-candidate NO_MATCH, and a taken
 * pair's row and column are NO_MATCH from then on), so the rescoring after each pair and the
 * search for the best visit only the candidate cells of open rows and columns, in row-major
 * order: the first maximum among them is the first maximum of the matrix unless that is
 * NO_MATCH, where the greedy stops. The scores are fill's over the whole matrix, cell by cell. */
/* Records the pair at cell `best` of an m×n group as the next taken pair and closes its row
 * and column; returns the count of pairs taken. */
static int64_t take_pair(Work *w, int64_t m, int64_t n, int64_t best, int64_t taken) {
    int64_t x = best / n, y = best % n;
    w->taken[2 * taken] = x;
    w->taken[2 * taken + 1] = y;
    w->used_r[x] = w->used_c[y] = 1;
    for (int64_t c = 0; c < n; c++) w->score[x * n + c] = NO_MATCH;
    for (int64_t r = 0; r < m; r++) w->score[r * n + y] = NO_MATCH;
    return taken + 1;
}

static int64_t solve_rescored(const Params *p, Work *w, int64_t m, int64_t n, int64_t taken) {
    const double *S = w->score;
    const double *B = w->base;
    const unsigned char *F = w->flags;
    /* The candidate cells in row-major order: row r's are entries row_at[r] .. row_at[r + 1] - 1
     * of col (their columns) and bound. */
    int64_t *col = w->live, *row_at = w->live + w->cells, open = 0;
    double *bound = w->bound, *row_bound = w->bound + w->cells;
    int64_t best = -1, best_r = -1;
    double top = NO_MATCH;
    /* Positions are at most 1, the weights are not negative and quantize never decreases, so
     * no score of a cell exceeds its score at position 1, cert included where the cell can be
     * certain: its bound, and a row's bound is its cells' highest. A cell (row) whose bound does
     * not exceed the best score found so far in its pass can neither beat it nor, coming later,
     * tie it first: neither its position nor its encode (a floor and a division) is needed.
     * Each pass rescores and searches at once, in row-major order, so the pair taken is the one
     * a full rescoring then a search would take. */
    for (int64_t r = 0; r < m; r++) {
        row_at[r] = open;
        row_bound[r] = NO_MATCH;
        for (int64_t c = r * n; c < (r + 1) * n; c++) {
            if (!(F[c] & CAND)) continue;
            if (S[c] > top) { top = S[c]; best = open; best_r = r; }
            double q = quantize(B[c] + p->wp);
            bound[open] = (F[c] & (IDC | CA1)) ? p->cert + q : q;
            if (bound[open] > row_bound[r]) row_bound[r] = bound[open];
            col[open++] = c - r * n;
        }
    }
    row_at[m] = open;
    while (best >= 0) {
        int64_t x = best_r, y = col[best];
        w->taken[2 * taken] = x;
        w->taken[2 * taken + 1] = y;
        taken++;
        w->used_r[x] = w->used_c[y] = 1;
        int64_t sr = 0, sc = 0;
        for (int64_t r = 0; r < m; r++) if (!w->used_r[r]) w->rank_r[r] = sr++;
        for (int64_t c = 0; c < n; c++) if (!w->used_c[c]) w->rank_c[c] = sc++;
        best = -1;
        top = NO_MATCH;
        for (int64_t r = 0; r < m; r++) {
            if (w->used_r[r] || row_bound[r] <= top) continue;
            const double *Br = B + r * n;
            const unsigned char *Fr = F + r * n;
            int64_t rank = w->rank_r[r];
            for (int64_t k = row_at[r]; k < row_at[r + 1]; k++) {
                if (bound[k] <= top) continue;
                int64_t c = col[k];
                if (w->used_c[c]) continue;
                double s = encode(p, Br[c], position(rank, sr, w->rank_c[c], sc), Fr[c]);
                if (s > top) { top = s; best = k; best_r = r; }
            }
        }
    }
    return taken;
}

/* The greedy sibling assignment of one group (etdm.py _solve: the same shortcuts, then
 * option 4's pass in score order or the gap greedy of _solve_dense). Candidate scores are
 * in w->base / w->flags as an m×n row-major matrix; the pairs taken go to w->taken as
 * (x, y) and their number is returned, or -1 when memory runs out. */
static int64_t solve(const Params *p, Work *w, int64_t m, int64_t n) {
    int64_t cells = m * n, count = 0, eligible = 0, taken = 0;
    double *S = w->score;
    for (int64_t c = 0; c < cells; c++) {
        S[c] = NO_MATCH;
        if (w->flags[c] & CAND) {
            count++;
            S[c] = encode(p, w->base[c], position(c / n, m, c % n, n), w->flags[c]);
            if (S[c] > NO_MATCH) eligible++;
        }
    }
    if (count == 0 || eligible == 0) return 0;
    if (count == 1) {
        for (int64_t c = 0; c < cells; c++)
            if (S[c] > NO_MATCH) { w->taken[0] = c / n; w->taken[1] = c % n; return 1; }
    }
    if (m == n) {
        /* A square group whose diagonal is all certain and where no pair off it shares an id:
         * the greedy takes the diagonal whatever the option (the common template case). */
        int square = 1;
        for (int64_t x = 0; x < m && square; x++) square = S[x * n + x] >= p->cert;
        for (int64_t c = 0; c < cells && square; c++)
            if ((w->flags[c] & IDC) && c / n != c % n) square = 0;
        if (square) {
            for (int64_t x = 0; x < m; x++) { w->taken[2 * x] = x; w->taken[2 * x + 1] = x; }
            return m;
        }
    }
    if (p->opt == 4) {
        /* Positions never change: one pass in order of score, then key index, then other index. */
        Ranked *order = malloc((size_t)eligible * sizeof(Ranked));
        if (!order) return -1;
        int64_t e = 0;
        for (int64_t c = 0; c < cells; c++)
            if (S[c] > NO_MATCH) { order[e].s = S[c]; order[e].x = c / n; order[e].y = c % n; e++; }
        qsort(order, (size_t)e, sizeof(Ranked), by_score);
        memset(w->used_r, 0, (size_t)m);
        memset(w->used_c, 0, (size_t)n);
        for (int64_t k = 0; k < e; k++) {
            if (w->used_r[order[k].x] || w->used_c[order[k].y]) continue;
            w->used_r[order[k].x] = w->used_c[order[k].y] = 1;
            w->taken[2 * taken] = order[k].x;
            w->taken[2 * taken + 1] = order[k].y;
            taken++;
        }
        free(order);
        return taken;
    }
    /* Options 1–3 (_solve_dense): take the best pair (first maximum in row-major order: the
     * lowest key index, then the lowest other index), then rescore what it changed. */
    memset(w->used_r, 0, (size_t)m);
    memset(w->used_c, 0, (size_t)n);
    if (p->opt == 3)
        return solve_rescored(p, w, m, n, taken);
    int64_t *ak = w->anchors_r, *ao = w->anchors_c, anchors = 2;
    ak[0] = -1; ak[1] = m; ao[0] = -1; ao[1] = n;
    for (;;) {
        int64_t best = 0;
        for (int64_t c = 1; c < cells; c++) if (S[c] > S[best]) best = c;
        if (S[best] == NO_MATCH) return taken;
        taken = take_pair(w, m, n, best, taken);
        int64_t x = best / n, y = best % n;
        int64_t g = bisect_left(ak, anchors, x), h = bisect_left(ao, anchors, y);
        if (g == h) {
            int64_t r0 = ak[g - 1] + 1, r1 = ak[g], c0 = ao[g - 1] + 1, c1 = ao[g];
            insert_at(ak, anchors, g, x);
            insert_at(ao, anchors, g, y);
            anchors++;
            fill(p, w, n, r0, x, c0, y, 1);
            fill(p, w, n, x + 1, r1, y + 1, c1, 1);
            if (p->opt == 2) {
                fill(p, w, n, r0, x, y + 1, c1, 0);
                fill(p, w, n, x + 1, r1, c0, y, 0);
            } else {
                forbid(w, n, r0, x, y + 1, c1);
                forbid(w, n, x + 1, r1, c0, y);
            }
        } else {
            fill(p, w, n, ak[g - 1] + 1, ak[g], ao[g - 1] + 1, ao[g], 1);
            fill(p, w, n, ak[h - 1] + 1, ak[h], ao[h - 1] + 1, ao[h], 1);
        }
    }
}

/* Chunk length for a virtual group (_chunked): group_size, or group_size^k when that many
 * chunks would themselves exceed group_over. */
static int64_t chunk_unit(const Params *p, int64_t length) {
    int64_t unit = p->group_size;
    while ((length + unit - 1) / unit > p->group_over) unit *= p->group_size;
    return unit;
}

static int queue_children(const Params *p, const Side *K, const Side *O, int64_t a, int64_t b, Groups *next) {
    int64_t lk = K->count[a], lo = O->count[b];
    if (lk == 0 || lo == 0) return 0;
    Group g = {0};
    if (lk * lo > p->over_pairs) {
        g.is_virtual = 1;
        g.pa = a; g.alo = 0; g.ahi = lk;
        g.pb = b; g.blo = 0; g.bhi = lo;
    } else {
        g.k = K->idx + K->ptr[a]; g.m = lk;
        g.o = O->idx + O->ptr[b]; g.n = lo;
    }
    return push(next, g);
}

static int run_group(const Params *p, const Side *K, const Side *O, const Group *g, Work *w,
                     int32_t *result, Groups *next) {
    if (!g->is_virtual) {
        int64_t m = g->m, n = g->n;
        if (reserve(w, m, n) < 0) return -1;
        for (int64_t x = 0; x < m; x++)
            for (int64_t y = 0; y < n; y++)
                w->flags[x * n + y] = static_parts(p, K, g->k[x], O, g->o[y], &w->base[x * n + y]);
        int64_t t = solve(p, w, m, n);
        if (t < 0) return -1;
        for (int64_t k = 0; k < t; k++) {
            int64_t a = g->k[w->taken[2 * k]], b = g->o[w->taken[2 * k + 1]];
            result[a] = (int32_t)b;
            if (queue_children(p, K, O, a, b, next) < 0) return -1;
        }
        return 0;
    }
    int64_t unit = chunk_unit(p, (g->ahi - g->alo) > (g->bhi - g->blo) ? g->ahi - g->alo : g->bhi - g->blo);
    int64_t m = (g->ahi - g->alo + unit - 1) / unit, n = (g->bhi - g->blo + unit - 1) / unit;
    if (reserve(w, m, n) < 0) return -1;
    for (int64_t x = 0; x < m; x++) {
        int64_t a0 = g->alo + x * unit, a1 = a0 + unit < g->ahi ? a0 + unit : g->ahi;
        for (int64_t y = 0; y < n; y++) {
            int64_t b0 = g->blo + y * unit, b1 = b0 + unit < g->bhi ? b0 + unit : g->bhi;
            int64_t la = a1 - a0, lb = b1 - b0;
            /* No classes, attributes or id on either side: both Jaccards are 1. */
            double ch = (double)(la < lb ? la : lb) / (double)(la > lb ? la : lb);
            w->base[x * n + y] = p->wc * 1.0 + p->wa * 1.0 + p->wch * ch;
            w->flags[x * n + y] = CAND | CA1;
        }
    }
    int64_t t = solve(p, w, m, n);
    if (t < 0) return -1;
    for (int64_t k = 0; k < t; k++) {
        int64_t x = w->taken[2 * k], y = w->taken[2 * k + 1];
        int64_t a0 = g->alo + x * unit, a1 = a0 + unit < g->ahi ? a0 + unit : g->ahi;
        int64_t b0 = g->blo + y * unit, b1 = b0 + unit < g->bhi ? b0 + unit : g->bhi;
        Group h = {0};
        if ((a1 - a0) * (b1 - b0) > p->over_pairs) {
            h.is_virtual = 1;
            h.pa = g->pa; h.alo = a0; h.ahi = a1;
            h.pb = g->pb; h.blo = b0; h.bhi = b1;
        } else {
            h.k = K->idx + K->ptr[g->pa] + a0; h.m = a1 - a0;
            h.o = O->idx + O->ptr[g->pb] + b0; h.n = b1 - b0;
        }
        if (push(next, h) < 0) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- Python glue */

#define SIDE_ARRAYS 11

static int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->ndim != 1 || view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-d array of %zd-byte items", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* side: a tuple of 11 int64 arrays (ptr, idx, count, tag, id_hash, cls_ptr, cls_val, attr_ptr,
 * attr_val, text_start, text_end) and the compared text (a str), as etdm.py compiled_side. */
static int get_side(PyObject *tuple, Py_buffer *views, int *held, Side *s, const char *what) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != SIDE_ARRAYS + 1
        || !PyUnicode_Check(PyTuple_GET_ITEM(tuple, SIDE_ARRAYS))) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tuple of %d arrays and a str", what, SIDE_ARRAYS);
        return -1;
    }
    const int64_t **slots[SIDE_ARRAYS] = {&s->ptr, &s->idx, &s->count, &s->tag, &s->id_hash, &s->cls_ptr,
                                          &s->cls_val, &s->attr_ptr, &s->attr_val, &s->text_start, &s->text_end};
    for (int k = 0; k < SIDE_ARRAYS; k++) {
        if (get_array(PyTuple_GET_ITEM(tuple, k), &views[k], 8, what) < 0) return -1;
        (*held)++;
        *slots[k] = views[k].buf;
    }
    PyObject *text = PyTuple_GET_ITEM(tuple, SIDE_ARRAYS);
    s->text_kind = PyUnicode_KIND(text);
    s->text_data = PyUnicode_DATA(text);
    s->size = views[3].len / 8;
    Py_ssize_t chars = PyUnicode_GET_LENGTH(text);
    /* Every span must lie in the text and every CSR entry in its arrays: the walk trusts them. */
    Py_ssize_t n = s->size, n_idx = views[1].len / 8;
    if (views[0].len / 8 != n + 1 || views[2].len / 8 != n || views[4].len / 8 != n || views[5].len / 8 != n + 1
        || views[7].len / 8 != n + 1 || views[9].len / 8 != n || views[10].len / 8 != n) goto bad;
    if (n && (s->ptr[0] != 0 || s->ptr[n] > n_idx || s->cls_ptr[n] > views[6].len / 8
              || s->attr_ptr[n] > views[8].len / 8)) goto bad;
    for (Py_ssize_t k = 0; k < n; k++)
        if (s->ptr[k + 1] < s->ptr[k] || s->count[k] != s->ptr[k + 1] - s->ptr[k]
            || s->cls_ptr[k + 1] < s->cls_ptr[k] || s->attr_ptr[k + 1] < s->attr_ptr[k]
            || s->text_start[k] < 0 || s->text_end[k] < s->text_start[k] || s->text_end[k] > chars) goto bad;
    for (Py_ssize_t k = 0; k < n_idx; k++)
        if (s->idx[k] < 0 || s->idx[k] >= n) goto bad;
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "%s: arrays and text do not fit together", what);
    return -1;
}

static PyObject *map_tree(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *key_t, *other_t, *out_obj, *check;
    Params p;
    if (!PyArg_ParseTuple(args, "OOO(ddddddiiLLLL)O", &key_t, &other_t, &out_obj, &p.wc, &p.wp, &p.wa, &p.wch,
                          &p.tq, &p.cert, &p.opt, &p.text_equality, &p.text_tag, &p.over_pairs, &p.group_size,
                          &p.group_over, &check))
        return NULL;
    Py_buffer views[2 * SIDE_ARRAYS + 1];
    int held = 0;
    Side K, O;
    Groups now = {0}, next = {0};
    Work w = {0};
    PyObject *ret = NULL;
    if (get_side(key_t, views, &held, &K, "key") < 0) goto done;
    if (get_side(other_t, views + held, &held, &O, "other") < 0) goto done;
    if (get_array(out_obj, &views[held], 4, "result") < 0) goto done;
    held++;
    if (views[held - 1].readonly || views[held - 1].len / 4 != K.size) {
        PyErr_SetString(PyExc_ValueError, "result: expected a writable int32 array of one entry per key node");
        goto done;
    }
    int32_t *result = views[held - 1].buf;
    static const int64_t root = 0;
    Group first = {0};
    first.k = &root; first.m = 1; first.o = &root; first.n = 1;
    if (K.size == 0 || O.size == 0) { ret = Py_None; Py_INCREF(ret); goto done; }
    if (push(&now, first) < 0) { PyErr_NoMemory(); goto done; }
    /* The budget check reads the thread's CPU clock (a system call) through Python: once per
       CHECK_CELLS pairs scored, not once per wave, which most pages' small waves would pay
       dozens of times for nothing. */
    uint64_t cells = 0;
    while (now.len) {
        if (check != Py_None && cells >= CHECK_CELLS) {
            cells = 0;
            PyObject *r = PyObject_CallNoArgs(check);
            if (!r) goto done;
            Py_DECREF(r);
        }
        next.len = 0;
        for (size_t g = 0; g < now.len; g++) {
            cells += (uint64_t)now.items[g].m * (uint64_t)now.items[g].n;
            if (run_group(&p, &K, &O, &now.items[g], &w, result, &next) < 0) { PyErr_NoMemory(); goto done; }
        }
        Groups t = now; now = next; next = t;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    free(now.items); free(next.items);
    free(w.base); free(w.score); free(w.flags); free(w.used_r); free(w.used_c);
    free(w.rank_r); free(w.rank_c); free(w.anchors_r); free(w.anchors_c); free(w.taken);
    free(w.live); free(w.bound);
    return ret;
}

/* node_sets(ptr int64[n+1], values int64[m], out_ptr int64[n+1], out_values int64[m]) -> k:
 * etdm._node_sets, the compiled side's per-node sets: node i's values values[ptr[i]:ptr[i+1]]
 * sorted and without repeats into out_values, out_values[out_ptr[i]:out_ptr[i+1]], k of them
 * in all (sorted_set). */
static int cmp_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* s[0:len] sorted in place without repeats; returns how many values are kept. A node's few
 * values are sorted by insertion (a long list, once, by qsort). */
static int64_t sorted_set(int64_t *s, int64_t len) {
    if (len > 16) {
        qsort(s, (size_t)len, sizeof(int64_t), cmp_int64);
    } else {
        for (int64_t a = 1; a < len; a++) {
            int64_t x = s[a], b = a - 1;
            while (b >= 0 && s[b] > x) { s[b + 1] = s[b]; b--; }
            s[b + 1] = x;
        }
    }
    int64_t kept = 0;
    for (int64_t a = 0; a < len; a++)
        if (kept == 0 || s[a] != s[kept - 1]) s[kept++] = s[a];
    return kept;
}

static PyObject *node_sets(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ptr_o, *val_o, *optr_o, *oval_o;
    if (!PyArg_ParseTuple(args, "OOOO", &ptr_o, &val_o, &optr_o, &oval_o)) return NULL;
    Py_buffer v[4];
    PyObject *objs[4] = {ptr_o, val_o, optr_o, oval_o};
    const char *names[4] = {"ptr", "values", "out_ptr", "out_values"};
    int held = 0;
    PyObject *ret = NULL;
    for (; held < 4; held++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (held >= 2 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[held], &v[held], flags) < 0) goto done;
        if (v[held].ndim != 1 || v[held].itemsize != 8) {
            PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-d array of 8-byte items", names[held]);
            held++;
            goto done;
        }
    }
    Py_ssize_t n1 = v[0].len / 8, m = v[1].len / 8;
    const int64_t *ptr = v[0].buf, *values = v[1].buf;
    int64_t *optr = v[2].buf, *out = v[3].buf;
    if (n1 < 1 || v[2].len / 8 != n1 || v[3].len / 8 < m || ptr[0] != 0 || ptr[n1 - 1] > m) {
        PyErr_SetString(PyExc_ValueError, "node_sets: arrays do not fit together");
        goto done;
    }
    for (Py_ssize_t i = 0; i + 1 < n1; i++)
        if (ptr[i + 1] < ptr[i]) {
            PyErr_SetString(PyExc_ValueError, "node_sets: ptr is not ascending");
            goto done;
        }
    int64_t k = 0;
    optr[0] = 0;
    for (Py_ssize_t i = 0; i + 1 < n1; i++) {
        int64_t lo = ptr[i], len = ptr[i + 1] - lo;
        int64_t *s = out + k;
        memcpy(s, values + lo, (size_t)len * sizeof(int64_t));
        k += sorted_set(s, len);
        optr[i + 1] = k;
    }
    ret = PyLong_FromLongLong(k);
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return ret;
}

/* The struct letter of `view`'s items ('i', 'I', 'H', ...) past a native byte-order mark, or 0
 * where the format is not one letter. */
static char format_letter(const Py_buffer *view) {
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<') f++;
    return f[0] && !f[1] ? f[0] : 0;
}

/* 1 when `view` holds 1-d items of `size` bytes whose format letter is one of `letters`. */
static int of_kind(const Py_buffer *view, Py_ssize_t size, const char *letters) {
    char letter = format_letter(view);
    return view->ndim == 1 && view->itemsize == size && letter && strchr(letters, letter) != NULL;
}

/* A set of node values (uint32 hashes widened as numpy widens them) sorted, without repeats. */
static int64_t page_sets(Py_ssize_t n, const int32_t *ptr, const void *values, int is_signed, int64_t *optr,
                         int64_t *out) {
    int64_t k = 0;
    optr[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t lo = ptr[i], len = ptr[i + 1] - lo;
        int64_t *s = out + k;
        for (int64_t a = 0; a < len; a++)
            s[a] = is_signed ? (int64_t)((const int32_t *)values)[lo + a] : (int64_t)((const uint32_t *)values)[lo + a];
        k += sorted_set(s, len);
        optr[i + 1] = k;
    }
    return k;
}

/* 1 when ptr (n + 1 entries) starts at 0, never falls and ends within `m` values. */
static int fits(const int32_t *ptr, Py_ssize_t n, Py_ssize_t m) {
    if (ptr[0] != 0 || ptr[n] > m) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (ptr[i + 1] < ptr[i]) return 0;
    return 1;
}

/* page_side(idx, tag, id_hash, class_ptr, class_hash, attr_ptr, attr_hash, text_ptr, flags, text_tag,
 *           f_pre, out int64[...]) -> (classes, attributes, pre) or None:
 * the int64 sections of etdm.py's compiled side that a page's own arrays give, written one after
 * another into `out`: idx (its length), tag, id_hash (n each), the class sets' ptr (n + 1) and
 * values (at most len(class_hash)), the attribute sets' ptr (n + 1) and values (at most
 * len(attr_hash)), each node's text start and end (n each) and the verbatim text nodes (at most
 * n: tag == text_tag and flags & f_pre). Returns how many set values of each kind and verbatim
 * nodes were written. None where an array is not of the page's own dtype (int32 and uint16;
 * the hashes 4-byte, signed or not) or the arrays do not fit together: the caller builds the
 * side with numpy then, which reports what is wrong as it always did.
 * One pass a section where numpy took a call or two an array and an int64 copy of each. */
static PyObject *page_side(PyObject *self, PyObject *args) {
    (void)self;
    enum { IDX, TAG, ID, CPTR, CVAL, APTR, AVAL, TPTR, FLAGS, OUT, N_ARGS };
    PyObject *objs[N_ARGS];
    int text_tag, f_pre;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOiiO", &objs[IDX], &objs[TAG], &objs[ID], &objs[CPTR], &objs[CVAL],
                          &objs[APTR], &objs[AVAL], &objs[TPTR], &objs[FLAGS], &text_tag, &f_pre, &objs[OUT]))
        return NULL;
    Py_buffer v[N_ARGS];
    PyObject *ret = NULL;
    int held = 0;
    for (; held < N_ARGS; held++)
        if (PyObject_GetBuffer(objs[held], &v[held],
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (held == OUT ? PyBUF_WRITABLE : 0)) < 0)
            goto done;
    Py_ssize_t n = v[TAG].len / 4, n_idx = v[IDX].len / 4;
    Py_ssize_t mc = v[CVAL].len / 4, ma = v[AVAL].len / 4;
    if (!of_kind(&v[IDX], 4, "i") || !of_kind(&v[TAG], 4, "i") || !of_kind(&v[ID], 4, "iI")
        || !of_kind(&v[CPTR], 4, "i") || !of_kind(&v[CVAL], 4, "iI") || !of_kind(&v[APTR], 4, "i")
        || !of_kind(&v[AVAL], 4, "iI") || !of_kind(&v[TPTR], 4, "i") || !of_kind(&v[FLAGS], 2, "H")
        || !of_kind(&v[OUT], 8, "lq")
        || v[ID].len / 4 != n || v[CPTR].len / 4 != n + 1 || v[APTR].len / 4 != n + 1
        || v[TPTR].len / 4 != n + 1 || v[FLAGS].len / 2 != n
        || v[OUT].len / 8 < n_idx + 7 * n + 2 + mc + ma
        || !fits(v[CPTR].buf, n, mc) || !fits(v[APTR].buf, n, ma)) {
        ret = Py_NewRef(Py_None);
        goto done;
    }
    const int32_t *idx = v[IDX].buf, *tag = v[TAG].buf, *tptr = v[TPTR].buf;
    const uint16_t *flags = v[FLAGS].buf;
    int64_t *o = v[OUT].buf;
    for (Py_ssize_t i = 0; i < n_idx; i++) o[i] = idx[i];
    o += n_idx;
    for (Py_ssize_t i = 0; i < n; i++) o[i] = tag[i];
    o += n;
    if (format_letter(&v[ID]) == 'i')
        for (Py_ssize_t i = 0; i < n; i++) o[i] = ((const int32_t *)v[ID].buf)[i];
    else
        for (Py_ssize_t i = 0; i < n; i++) o[i] = ((const uint32_t *)v[ID].buf)[i];
    o += n;
    int64_t kc = page_sets(n, v[CPTR].buf, v[CVAL].buf, format_letter(&v[CVAL]) == 'i', o, o + n + 1);
    o += n + 1 + mc;
    int64_t ka = page_sets(n, v[APTR].buf, v[AVAL].buf, format_letter(&v[AVAL]) == 'i', o, o + n + 1);
    o += n + 1 + ma;
    for (Py_ssize_t i = 0; i < n; i++) o[i] = tptr[i];
    o += n;
    for (Py_ssize_t i = 0; i < n; i++) o[i] = tptr[i + 1];
    o += n;
    int64_t pre = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (tag[i] == text_tag && (flags[i] & f_pre)) o[pre++] = i;
    ret = Py_BuildValue("LLL", (long long)kc, (long long)ka, (long long)pre);
done:
    for (int i = 0; i < held; i++) PyBuffer_Release(&v[i]);
    return ret;
}

static PyMethodDef methods[] = {
    {"node_sets", node_sets, METH_VARARGS,
     "node_sets(ptr, values, out_ptr, out_values) -> k: etdm._node_sets into out_ptr and out_values[:k]."},
    {"page_side", page_side, METH_VARARGS,
     "page_side(idx, tag, id_hash, class_ptr, class_hash, attr_ptr, attr_hash, text_ptr, flags, text_tag, f_pre, out)"
     " -> (classes, attributes, pre) or None: a page's sections of the compiled side, into out."},
    {"map_tree", map_tree, METH_VARARGS,
     "map_tree(key, other, result, params, check): ETDM with grouping \"pair\" into result (int32, -1 = unmapped)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_etdm", "ETDM's hot loops, compiled (see etdm.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__etdm(void) { return PyModule_Create(&module); }
