/* libxml2's small blocks in chunks, one page's tree after another (the parse, design §1;
 * page.py use_parse_heap).
 *
 * A page's parse makes a tree of thousands of nodes, attributes and text contents, each a
 * block of a few dozen to a few hundred bytes from libxml2's allocator, and the flattening
 * frees them all before the next page is parsed. Through glibc's malloc each of those frees
 * merges the block with its neighbours and each allocation of the next page splits them
 * again; on docsites-dev that was about a sixth of the parse stage's CPU time and a fifth on
 * news-dragnet-dev (docs/performance.md, "What is compiled").
 *
 * Here a block of up to MAX_SMALL bytes is the next free bytes of its thread's current chunk
 * (CHUNK_BYTES, in one address range reserved at install: MAP_NORESERVE, nothing committed
 * until used), after a 16-byte header holding its size. Each chunk counts its blocks not yet
 * freed: while a thread allocates from a chunk its count is OPEN less the frees, the thread
 * keeps how many blocks it handed out, and settles the two when it leaves the chunk; freeing a
 * block only counts down, and the chunk whose count reaches zero goes back to a pool the next
 * chunk is taken from. So an allocation is a bump of a thread-local pointer and a free one
 * atomic decrement. So a page's tree
 * lies in a few chunks in the order it was built, which the flattening walk reads it in, and
 * freeing it costs a count a block. Larger blocks, and every block while no chunk is free
 * and the range is used up, are libxml2's previous allocator's (glibc's malloc), and so is
 * every block allocated before the install: a pointer outside the range goes back to that
 * allocator, whichever function frees or resizes it.
 *
 * Memory: a chunk holding a block still alive (the parser's own small arrays, which live from
 * one page to the next) is not reused until that block is freed. At most HOT_CHUNKS free
 * chunks keep their memory; past them a freed chunk's pages are given back to the system
 * (madvise) before it is pooled. What stays is the most a thread's pages had alive at once in
 * small blocks (the largest tree), bounded by the range.
 *
 * Threads: lxml parses without the GIL, so each thread has its own current chunk, the counts
 * are atomic and the pool is behind a mutex, taken only when a thread needs a new chunk or a
 * chunk empties. A thread that ends gives up its current chunk; a fork child keeps the
 * parent's chunks and its mutex usable (pthread_atfork).
 *
 * The functions reach libxml2 through lxml.etree's exported symbols (xmlMemGet, xmlGcMemSetup)
 * looked up with dlopen on the loaded module, so nothing is linked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_SMALL 512
#define HEADER 16                       /* a block's size, keeping the 16-byte alignment */
#define CHUNK_SHIFT 16
#define CHUNK_BYTES ((size_t)1 << CHUNK_SHIFT)
#define DEFAULT_RESERVE ((size_t)256 << 20)
#define DEFAULT_HOT 256
#define NO_CHUNK ((size_t)-1)

typedef void (*free_fn)(void *);
typedef void *(*malloc_fn)(size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef char *(*strdup_fn)(const char *);

static free_fn prev_free;
static malloc_fn prev_malloc;
static realloc_fn prev_realloc;
static strdup_fn prev_strdup;

static char *base;                      /* the range: chunks chunk << CHUNK_SHIFT from base */
static size_t reserved, chunks, hot_chunks;
/* Per chunk: blocks alive, or while a thread allocates from it OPEN less the blocks freed. */
static atomic_long *alive;
#define OPEN ((long)1 << 40)
static atomic_size_t claimed;           /* chunks ever taken from the range */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *pool;                  /* free chunks, a stack */
static size_t pooled;
static atomic_int pool_empty = 1;       /* with the range used up: no chunk to be had */
static atomic_size_t given_back;

/* A thread's current chunk: its unused bytes [next, end) and the blocks it handed out from it.
 * initial-exec: one load from the thread pointer, no call, for each allocation. */
typedef struct {
    char *next, *end;
    size_t chunk;
    long handed_out;
} Current;
static __thread Current here __attribute__((tls_model("initial-exec"))) = {NULL, NULL, NO_CHUNK, 0};
static pthread_key_t thread_end;

static inline int ours(const void *p) {
    return (const char *)p >= base && (const char *)p < base + reserved;
}

static inline size_t chunk_of(const void *p) { return (size_t)((const char *)p - base) >> CHUNK_SHIFT; }

/* A chunk with no block alive and no thread allocating from it: back to the pool. */
static void pool_chunk(size_t chunk) {
    char *start = base + (chunk << CHUNK_SHIFT);
    pthread_mutex_lock(&pool_lock);
    int cold = pooled >= hot_chunks;
    pthread_mutex_unlock(&pool_lock);
    if (cold && madvise(start, CHUNK_BYTES, MADV_DONTNEED) == 0) atomic_fetch_add(&given_back, 1);
    pthread_mutex_lock(&pool_lock);
    pool[pooled++] = (uint32_t)chunk;
    atomic_store(&pool_empty, 0);
    pthread_mutex_unlock(&pool_lock);
}

/* The thread stops allocating from its current chunk: the count becomes the blocks alive. */
static void leave_current(void) {
    if (here.chunk == NO_CHUNK) return;
    size_t chunk = here.chunk;
    long settle = OPEN - here.handed_out;
    here.chunk = NO_CHUNK;
    here.next = here.end = NULL;
    here.handed_out = 0;
    if (atomic_fetch_sub(&alive[chunk], settle) == settle) pool_chunk(chunk);
}

static void thread_ends(void *unused) {
    (void)unused;
    leave_current();
}

/* A chunk to allocate from: the current one again when every block in it is freed already,
 * else a pooled one, else a new one from the range. 0 when there is none. */
static int take_chunk(void) {
    if (here.chunk != NO_CHUNK) {
        long expected = OPEN - here.handed_out;     /* every block handed out is freed */
        if (atomic_compare_exchange_strong(&alive[here.chunk], &expected, OPEN)) {
            here.next = base + (here.chunk << CHUNK_SHIFT);
            here.end = here.next + CHUNK_BYTES;
            here.handed_out = 0;
            return 1;
        }
        leave_current();
    }
    if (atomic_load_explicit(&pool_empty, memory_order_relaxed) && atomic_load(&claimed) >= chunks) return 0;
    size_t chunk = NO_CHUNK;
    pthread_mutex_lock(&pool_lock);
    if (pooled) chunk = pool[--pooled];
    pthread_mutex_unlock(&pool_lock);
    if (chunk == NO_CHUNK) {
        chunk = atomic_fetch_add(&claimed, 1);
        if (chunk >= chunks) {
            atomic_store(&claimed, chunks);
            pthread_mutex_lock(&pool_lock);
            if (!pooled) atomic_store(&pool_empty, 1);
            pthread_mutex_unlock(&pool_lock);
            return 0;
        }
    }
    atomic_store(&alive[chunk], OPEN);
    here.chunk = chunk;
    here.next = base + (chunk << CHUNK_SHIFT);
    here.end = here.next + CHUNK_BYTES;
    here.handed_out = 0;
    pthread_setspecific(thread_end, &here);        /* non-NULL: thread_ends runs at its end */
    return 1;
}

static void *heap_malloc(size_t size) {
    if (size > MAX_SMALL) return prev_malloc(size);
    /* At least one byte: the pointer returned then lies inside its block, so inside the
     * block's chunk, which is what a free counts down. */
    size_t need = HEADER + ((size + (size == 0) + HEADER - 1) & ~(size_t)(HEADER - 1));
    if ((size_t)(here.end - here.next) < need && !take_chunk()) return prev_malloc(size);
    char *block = here.next;
    here.next += need;
    here.handed_out++;
    *(size_t *)block = need - HEADER;
    return block + HEADER;
}

static void heap_free(void *p) {
    if (p == NULL) return;
    if (!ours(p)) {
        prev_free(p);
        return;
    }
    size_t chunk = chunk_of(p);
    if (atomic_fetch_sub_explicit(&alive[chunk], 1, memory_order_acq_rel) == 1) pool_chunk(chunk);
}

static void *heap_realloc(void *p, size_t size) {
    if (p == NULL) return heap_malloc(size);
    if (!ours(p)) return prev_realloc(p, size);
    size_t have = *(size_t *)((char *)p - HEADER);
    if (size <= have) return p;
    void *q = heap_malloc(size);
    if (q == NULL) return NULL;
    memcpy(q, p, have);
    heap_free(p);
    return q;
}

static char *heap_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = heap_malloc(n);
    if (p != NULL) memcpy(p, s, n);
    return p;
}

static void before_fork(void) { pthread_mutex_lock(&pool_lock); }
static void after_fork(void) { pthread_mutex_unlock(&pool_lock); }

/* install(etree module path, range bytes, hot chunks) -> bool: True once libxml2 allocates
 * its small blocks here (at once where it does already, whatever the arguments); False where
 * the range cannot be reserved or the module has no allocator functions, and libxml2 keeps its
 * own allocator. */
static PyObject *install(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    Py_ssize_t reserve = (Py_ssize_t)DEFAULT_RESERVE, hot = DEFAULT_HOT;
    if (!PyArg_ParseTuple(args, "s|nn", &path, &reserve, &hot)) return NULL;
    if (base != NULL) Py_RETURN_TRUE;
    if (reserve < (Py_ssize_t)CHUNK_BYTES || hot < 0) {
        PyErr_SetString(PyExc_ValueError, "install: the range holds at least one chunk, hot chunks are not negative");
        return NULL;
    }
    void *module = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (module == NULL) Py_RETURN_FALSE;
    int (*mem_get)(free_fn *, malloc_fn *, realloc_fn *, strdup_fn *) =
        (int (*)(free_fn *, malloc_fn *, realloc_fn *, strdup_fn *))dlsym(module, "xmlMemGet");
    int (*gc_setup)(free_fn, malloc_fn, malloc_fn, realloc_fn, strdup_fn) =
        (int (*)(free_fn, malloc_fn, malloc_fn, realloc_fn, strdup_fn))dlsym(module, "xmlGcMemSetup");
    if (mem_get == NULL || gc_setup == NULL || mem_get(&prev_free, &prev_malloc, &prev_realloc, &prev_strdup) != 0
        || prev_free == NULL || prev_malloc == NULL || prev_realloc == NULL || prev_strdup == NULL) {
        dlclose(module);
        Py_RETURN_FALSE;
    }
    size_t n = (size_t)reserve >> CHUNK_SHIFT;
    void *range = mmap(NULL, n << CHUNK_SHIFT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
    atomic_long *counts = calloc(n, sizeof(atomic_long));
    uint32_t *stack = calloc(n, sizeof(uint32_t));
    if (range == MAP_FAILED || counts == NULL || stack == NULL || pthread_key_create(&thread_end, thread_ends) != 0) {
        if (range != MAP_FAILED) munmap(range, n << CHUNK_SHIFT);
        free(counts);
        free(stack);
        dlclose(module);
        Py_RETURN_FALSE;
    }
    pthread_atfork(before_fork, after_fork, after_fork);
    alive = counts;
    pool = stack;
    chunks = n;
    hot_chunks = (size_t)hot;
    reserved = n << CHUNK_SHIFT;
    base = range;
    if (gc_setup(heap_free, heap_malloc, heap_malloc, heap_realloc, heap_strdup) != 0) {
        reserved = 0;              /* nothing is ours: every pointer goes to the previous allocator */
        Py_RETURN_FALSE;
    }
    /* lxml.etree stays loaded for the process's life, and so does this module's hold on it. */
    Py_RETURN_TRUE;
}

/* state() -> (chunks taken from the range, chunks pooled, chunks in the range, chunks whose
 * pages were given back). */
static PyObject *state(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    pthread_mutex_lock(&pool_lock);
    size_t in_pool = pooled;
    pthread_mutex_unlock(&pool_lock);
    return Py_BuildValue("nnnn", (Py_ssize_t)atomic_load(&claimed), (Py_ssize_t)in_pool, (Py_ssize_t)chunks,
                         (Py_ssize_t)atomic_load(&given_back));
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS,
     "install(etree_path, reserve=256 MiB, hot=256) -> bool: libxml2's blocks of up to 512 bytes in chunks."},
    {"state", state, METH_NOARGS, "state() -> (chunks taken, chunks pooled, chunks in the range, chunks given back)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_parse_heap",
                                        "libxml2's small blocks in chunks (see transforms/page.py use_parse_heap).",
                                        -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__parse_heap(void) { return PyModule_Create(&module_def); }
