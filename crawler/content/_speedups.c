/* Compiled forms of the fingerprints' loops over a text's characters.
 *
 * Each function computes exactly what its pure-Python reference computes (named in its
 * doc string); crawler/content/speedups.py loads this module when it was built, and
 * tests/content/test_speedups.py holds every function against its reference. The
 * tables the references use (which code points are whitespace, which belong to a script
 * written without spaces, what normalization writes for each) are built in Python and
 * passed in as buffers, so that each rule has one definition.
 *
 * Nothing here keeps state between calls, or releases the interpreter lock.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* crawler.content.feature_hashes */
#define BASE 0x100000001B3ULL
#define PAIR_FACTOR 0x9E3779B97F4A7C15ULL
#define PAIR_SALT 0x2545F4914F6CDD1DULL
#define SINGLE_SALT 0x6A09E667F3BCC909ULL
/* crawler.content.minhash */
#define MINHASH_BYTES 64
#define MINHASH_BIN_SHIFT 58
#define MINHASH_SEED 0x5EEDULL
#define GOLDEN 0x9E3779B97F4A7C15ULL
#define MIX 0xFF51AFD7ED558CCDULL
/* crawler.content.normalization */
#define DELETED 0xFFFFFFFFU

static inline uint64_t
mix(uint64_t value)
{
    value ^= value >> 33;
    value *= 0xFF51AFD7ED558CCDULL;
    value ^= value >> 33;
    value *= 0xC4CEB9FE1A85EC53ULL;
    return value ^ (value >> 33);
}

/* A table indexed by code point, whose last entry stands for every code point past it. */
typedef struct {
    Py_buffer view;
    Py_ssize_t last;
} Table;

static int
table_open(PyObject *object, Py_ssize_t itemsize, const char *name, Table *table)
{
    if (PyObject_GetBuffer(object, &table->view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (table->view.itemsize != itemsize || table->view.len < itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: a table of %zd-byte items was expected", name,
                     itemsize);
        PyBuffer_Release(&table->view);
        return -1;
    }
    table->last = table->view.len / itemsize - 1;
    return 0;
}

static inline uint8_t
table_flag(const Table *table, Py_UCS4 code_point)
{
    const uint8_t *flags = table->view.buf;
    return flags[(Py_ssize_t)code_point < table->last ? (Py_ssize_t)code_point : table->last];
}

static inline uint32_t
table_value(const Table *table, Py_UCS4 code_point)
{
    const uint32_t *values = table->view.buf;
    return values[(Py_ssize_t)code_point < table->last ? (Py_ssize_t)code_point : table->last];
}

/* What normalization writes for each code point (crawler.content.normalization's
   code_point_value), asked of Python once a process for each code point of planes 0 and 1
   and kept in *cache* (0: not asked yet; no code point is written as U+0000); every code
   point of the other planes but plane 14 is written as itself. */
#define CACHED_CODE_POINTS 0x20000
typedef struct {
    Py_buffer cache;
    PyObject *resolve;
} LazyMap;

static int
lazy_map_open(PyObject *cache, PyObject *resolve, LazyMap *map)
{
    if (PyObject_GetBuffer(cache, &map->cache, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (map->cache.len != CACHED_CODE_POINTS * 4) {
        PyErr_SetString(PyExc_ValueError,
                        "code_point_values: a writable buffer of 0x20000 uint32 was expected");
        PyBuffer_Release(&map->cache);
        return -1;
    }
    map->resolve = resolve;
    return 0;
}

/* lazy_value of a code point not in the cache (below). */
static uint32_t
uncached_value(const LazyMap *map, Py_UCS4 code_point)
{
    uint32_t *cache = map->cache.buf;
    if (code_point >= CACHED_CODE_POINTS && (code_point < 0xE0000 || code_point >= 0xE1000))
        return code_point;
    if (PyErr_Occurred())
        return code_point;
    PyObject *value = PyObject_CallFunction(map->resolve, "k", (unsigned long)code_point);
    if (!value)
        return code_point;
    unsigned long number = PyLong_AsUnsignedLong(value);
    Py_DECREF(value);
    if (number == (unsigned long)-1 && PyErr_Occurred())
        return code_point;
    if (code_point < CACHED_CODE_POINTS)
        cache[code_point] = (uint32_t)number;
    return (uint32_t)number;
}

/* The value of *code_point*; when Python fails to give it, the code point itself, with
   the exception set (the callers check for it once they are done). Inlined: nearly every
   code point of a text is in the cache. */
static inline uint32_t
lazy_value(const LazyMap *map, Py_UCS4 code_point)
{
    const uint32_t *cache = map->cache.buf;
    if (code_point < CACHED_CODE_POINTS && cache[code_point])
        return cache[code_point];
    return uncached_value(map, code_point);
}

/* Code points of a str, read whatever its kind. */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Text;

static int
text_open(PyObject *object, Text *text)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(object) < 0)
        return -1;
#endif
    text->kind = PyUnicode_KIND(object);
    text->data = PyUnicode_DATA(object);
    text->length = PyUnicode_GET_LENGTH(object);
    return 0;
}

#define TEXT_AT(text, index) PyUnicode_READ((text).kind, (text).data, (index))

/* Runs BODY for each position AT of TEXT, its code point in CODE_POINT: one loop for each
   kind of str, so that reading a character is one load. */
#define EACH_CHARACTER_OF_KIND(type, text, at, code_point, BODY)                            \
    {                                                                                       \
        const type *characters_ = (text).data;                                              \
        for (Py_ssize_t at = 0; at < (text).length; at++) {                                 \
            Py_UCS4 code_point = characters_[at];                                           \
            BODY                                                                            \
        }                                                                                   \
    }
#define FOR_EACH_CHARACTER(text, at, code_point, BODY)                                     \
    switch ((text).kind) {                                                                  \
    case PyUnicode_1BYTE_KIND:                                                              \
        EACH_CHARACTER_OF_KIND(Py_UCS1, text, at, code_point, BODY)                         \
        break;                                                                              \
    case PyUnicode_2BYTE_KIND:                                                              \
        EACH_CHARACTER_OF_KIND(Py_UCS2, text, at, code_point, BODY)                         \
        break;                                                                              \
    default:                                                                                \
        EACH_CHARACTER_OF_KIND(Py_UCS4, text, at, code_point, BODY)                         \
    }

/* A str of the KEPT code points of OUT, whose largest is MAXIMUM: built at the size that
   holds it, without the scan PyUnicode_FromKindAndData makes to find it. */
static PyObject *
str_of_code_points(const Py_UCS4 *out, Py_ssize_t kept, Py_UCS4 maximum)
{
    PyObject *result = PyUnicode_New(kept, maximum);
    if (!result)
        return NULL;
    switch (PyUnicode_KIND(result)) {
    case PyUnicode_1BYTE_KIND: {
        Py_UCS1 *characters = PyUnicode_1BYTE_DATA(result);
        for (Py_ssize_t at = 0; at < kept; at++)
            characters[at] = (Py_UCS1)out[at];
        break;
    }
    case PyUnicode_2BYTE_KIND: {
        Py_UCS2 *characters = PyUnicode_2BYTE_DATA(result);
        for (Py_ssize_t at = 0; at < kept; at++)
            characters[at] = (Py_UCS2)out[at];
        break;
    }
    default:
        memcpy(PyUnicode_4BYTE_DATA(result), out, (size_t)kept * sizeof(Py_UCS4));
    }
    return result;
}

/* ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(simhash_and_minhash_doc,
"simhash_and_minhash(normalized, no_space_script, /)\n--\n\n"
"crawler.content.fingerprints.simhash_and_minhash_of_normalized: the SimHash (an int)\n"
"and the MinHash (64 bytes) of the features of a normalized text, *no_space_script*\n"
"being crawler.content.feature_hashes' table of the scripts written without spaces.");

/* The distinct features of a text and how many times each occurs, in the order they came
   (keys, counts), found by an open-addressing index of their positions plus one (the
   hashes are mixed already), doubled when half full. */
typedef struct {
    uint64_t *keys;
    uint32_t *counts;
    uint32_t *index;
    Py_ssize_t slots, used, capacity;
} FeatureCounts;

static int
feature_counts_open(FeatureCounts *table, Py_ssize_t expected)
{
    table->slots = 256;
    while (table->slots < 2 * expected)
        table->slots *= 2;
    table->capacity = table->slots / 2;
    table->used = 0;
    table->index = PyMem_Calloc(table->slots, sizeof(uint32_t));
    table->keys = PyMem_Malloc(table->capacity * sizeof(uint64_t));
    table->counts = PyMem_Malloc(table->capacity * sizeof(uint32_t));
    if (!table->index || !table->keys || !table->counts) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void
feature_counts_free(FeatureCounts *table)
{
    PyMem_Free(table->index);
    PyMem_Free(table->keys);
    PyMem_Free(table->counts);
}

static int
feature_counts_grow(FeatureCounts *table)
{
    Py_ssize_t slots = 2 * table->slots, capacity = slots / 2;
    if (capacity > UINT32_MAX - 1) {
        PyErr_NoMemory();
        return -1;
    }
    uint32_t *index = PyMem_Calloc(slots, sizeof(uint32_t));
    uint64_t *keys = PyMem_Realloc(table->keys, capacity * sizeof(uint64_t));
    if (keys)
        table->keys = keys;
    uint32_t *counts = PyMem_Realloc(table->counts, capacity * sizeof(uint32_t));
    if (counts)
        table->counts = counts;
    if (!index || !keys || !counts) {
        PyMem_Free(index);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t entry = 0; entry < table->used; entry++) {
        Py_ssize_t slot = (Py_ssize_t)(table->keys[entry] & (uint64_t)(slots - 1));
        while (index[slot])
            slot = (slot + 1) & (slots - 1);
        index[slot] = (uint32_t)(entry + 1);
    }
    PyMem_Free(table->index);
    table->index = index;
    table->slots = slots;
    table->capacity = capacity;
    return 0;
}

static int
feature_counts_add(FeatureCounts *table, uint64_t feature)
{
    if (table->used == table->capacity && feature_counts_grow(table) < 0)
        return -1;
    Py_ssize_t slot = (Py_ssize_t)(feature & (uint64_t)(table->slots - 1));
    uint32_t entry;
    while ((entry = table->index[slot]) && table->keys[entry - 1] != feature)
        slot = (slot + 1) & (table->slots - 1);
    if (entry) {
        /* a text has fewer than 2**32 features */
        table->counts[entry - 1]++;
        return 0;
    }
    table->keys[table->used] = feature;
    table->counts[table->used] = 1;
    table->index[slot] = (uint32_t)(++table->used);
    return 0;
}

/* A token: a run of characters that are neither spaces nor of a script written without
   spaces (a word), or one character of such a script. */
typedef struct {
    uint64_t hash;
    Py_ssize_t start, end;
    int is_char, is_zero;
} Token64;

/* Each token pairs with the next when both are words, or both characters with nothing
   between them; a token that pairs with neither neighbour is a feature alone; the masked
   number "0" alone and the pair "0 0" are no features. Counts the features of CHARACTERS
   (SIZE code points of TYPE) into FEATURES, going to FAILED when that fails; NO_SPACE is
   asked only when CHECK_NO_SPACE (Latin-1 holds no character of such a script). */
#define COUNT_FEATURES(type, characters_object, size, check_no_space, no_space, features,  \
                       failed)                                                              \
    {                                                                                       \
        const type *characters = (const type *)(characters_object);                         \
        Token64 previous = {0, 0, 0, 0, 0};                                                 \
        int have_previous = 0, previous_paired = 0;                                         \
        for (Py_ssize_t at = 0; at <= (size);) {                                            \
            Token64 token = {0, 0, 0, 0, 0};                                                \
            int have_token = 0;                                                             \
            while (at < (size) && characters[at] == ' ')                                    \
                at++;                                                                       \
            if (at < (size)) {                                                              \
                Py_UCS4 code_point = characters[at];                                        \
                uint64_t sum = 0, power = 1;                                                \
                token.start = at;                                                           \
                if ((check_no_space) && table_flag((no_space), code_point)) {               \
                    sum = (uint64_t)code_point + 1;                                         \
                    token.is_char = 1;                                                      \
                    at++;                                                                   \
                }                                                                           \
                else {                                                                      \
                    while (at < (size)) {                                                   \
                        code_point = characters[at];                                        \
                        if (code_point == ' ' ||                                            \
                            ((check_no_space) && table_flag((no_space), code_point)))       \
                            break;                                                          \
                        sum += ((uint64_t)code_point + 1) * power;                          \
                        power *= BASE;                                                      \
                        at++;                                                               \
                    }                                                                       \
                }                                                                           \
                token.end = at;                                                             \
                token.hash = mix(sum);                                                      \
                token.is_zero = token.end - token.start == 1 && characters[token.start] == '0'; \
                have_token = 1;                                                             \
            }                                                                               \
            else {                                                                          \
                at++; /* past the end: the last token is settled below */                   \
            }                                                                               \
            int paired = 0;                                                                 \
            if (have_previous && have_token) {                                              \
                paired = previous.is_char == token.is_char &&                               \
                         (!token.is_char || previous.end == token.start);                   \
                if (paired && !(previous.is_zero && token.is_zero) &&                       \
                    feature_counts_add((features), mix(previous.hash * PAIR_FACTOR +        \
                                                       token.hash + PAIR_SALT)) < 0)        \
                    goto failed;                                                            \
            }                                                                               \
            if (have_previous && !previous_paired && !paired && !previous.is_zero &&        \
                feature_counts_add((features), mix(previous.hash ^ SINGLE_SALT)) < 0)       \
                goto failed;                                                                \
            if (!have_token)                                                                \
                break;                                                                      \
            previous = token;                                                               \
            previous_paired = paired;                                                       \
            have_previous = 1;                                                              \
        }                                                                                   \
    }

static PyObject *
simhash_and_minhash(PyObject *module, PyObject *args)
{
    PyObject *normalized, *table_object, *result = NULL;
    Table no_space;
    Text text;
    FeatureCounts features = {NULL, NULL, NULL, 0, 0, 0};

    if (!PyArg_ParseTuple(args, "UO:simhash_and_minhash", &normalized, &table_object))
        return NULL;
    if (text_open(normalized, &text) < 0)
        return NULL;
    if (table_open(table_object, 1, "no_space_script", &no_space) < 0)
        return NULL;

    /* about a feature for every six characters of text: room for them at once */
    if (feature_counts_open(&features, text.length / 6) < 0)
        goto done;
    switch (text.kind) {
    case PyUnicode_1BYTE_KIND:
        COUNT_FEATURES(Py_UCS1, text.data, text.length, 0, &no_space, &features, done)
        break;
    case PyUnicode_2BYTE_KIND:
        COUNT_FEATURES(Py_UCS2, text.data, text.length, 1, &no_space, &features, done)
        break;
    default:
        COUNT_FEATURES(Py_UCS4, text.data, text.length, 1, &no_space, &features, done)
    }

    uint8_t minhash[MINHASH_BYTES] = {0};
    uint64_t simhash = 0;
    if (features.used) {
        /* the weight of the features with each value of each 4-bit digit of their hash */
        uint64_t nibble_weight[16][16] = {{0}}, total = 0, minimums[MINHASH_BYTES];
        uint8_t filled[MINHASH_BYTES] = {0};
        for (Py_ssize_t entry = 0; entry < features.used; entry++) {
            uint64_t feature = features.keys[entry];
            /* crawler.content.fingerprints.feature_weight: the count's bit length */
            uint64_t weight = 0;
            for (uint32_t left = features.counts[entry]; left; left >>= 1)
                weight++;
            total += weight;
            for (int nibble = 0; nibble < 16; nibble++)
                nibble_weight[nibble][(feature >> (4 * nibble)) & 15] += weight;
            uint64_t key = mix(feature ^ MINHASH_SEED);
            int bin = (int)(key >> MINHASH_BIN_SHIFT);
            if (!filled[bin] || key < minimums[bin]) {
                minimums[bin] = key;
                filled[bin] = 1;
            }
        }
        for (int bit = 0; bit < 64; bit++) {
            uint64_t set_weight = 0;
            for (int value = 0; value < 16; value++)
                if (value >> (bit % 4) & 1)
                    set_weight += nibble_weight[bit / 4][value];
            if (2 * set_weight > total)
                simhash |= 1ULL << bit;
        }
        for (int bin = 0; bin < MINHASH_BYTES; bin++) {
            uint64_t value = minimums[bin];
            if (!filled[bin]) {
                /* the next filled bin, round the end */
                int donor = bin;
                while (!filled[donor])
                    donor = (donor + 1) % MINHASH_BYTES;
                uint64_t steps = (uint64_t)((donor - bin + MINHASH_BYTES) % MINHASH_BYTES);
                value = (minimums[donor] ^ (steps * GOLDEN)) * MIX;
            }
            minhash[bin] = (uint8_t)(value & 0xFF);
        }
    }
    result = Py_BuildValue("(Ky#)", (unsigned long long)simhash, (const char *)minhash,
                           (Py_ssize_t)MINHASH_BYTES);

done:
    feature_counts_free(&features);
    PyBuffer_Release(&no_space.view);
    return result;
}

/* ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(translated_doc,
"translated(text, code_point_values, code_point_value, /)\n--\n\n"
"crawler.content.normalization._translated: *text* with each code point replaced by what\n"
"*code_point_value* says of it (kept in *code_point_values*), 0xFFFFFFFF deleted.");

static PyObject *
translated(PyObject *module, PyObject *args)
{
    PyObject *object, *cache_object, *resolve, *result = NULL;
    LazyMap map;
    Text text;

    if (!PyArg_ParseTuple(args, "UOO:translated", &object, &cache_object, &resolve))
        return NULL;
    if (text_open(object, &text) < 0)
        return NULL;
    if (lazy_map_open(cache_object, resolve, &map) < 0)
        return NULL;
    Py_UCS4 *out = PyMem_Malloc((text.length + 1) * sizeof(Py_UCS4));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t kept = 0;
    Py_UCS4 maximum = 0;
    FOR_EACH_CHARACTER(text, at, code_point, {
        uint32_t value = lazy_value(&map, code_point);
        if (value != DELETED) {
            out[kept++] = value;
            if (value > maximum)
                maximum = value;
        }
    })
    if (!PyErr_Occurred())
        result = str_of_code_points(out, kept, maximum);

done:
    PyMem_Free(out);
    PyBuffer_Release(&map.cache);
    return result;
}

/* ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(spaced_doc,
"spaced(text, whitespace, no_space_script, mask=-1, /)\n--\n\n"
"crawler.content.normalization._spaced: each run of whitespace one space, the text\n"
"stripped, and (in a text that is not ASCII) no space next to a character of a script\n"
"written without spaces; then, when *mask* is a code point, each run of it (one space\n"
"apart at most) written as one \"0\".");

static PyObject *
spaced(PyObject *module, PyObject *args)
{
    PyObject *object, *whitespace_object, *no_space_object, *result = NULL;
    Table whitespace, no_space;
    Text text;
    long mask = -1;

    if (!PyArg_ParseTuple(args, "UOO|l:spaced", &object, &whitespace_object, &no_space_object,
                          &mask))
        return NULL;
    if (text_open(object, &text) < 0)
        return NULL;
    if (!text.length)
        return Py_NewRef(object);
    if (table_open(whitespace_object, 1, "whitespace", &whitespace) < 0)
        return NULL;
    if (table_open(no_space_object, 1, "no_space_script", &no_space) < 0) {
        PyBuffer_Release(&whitespace.view);
        return NULL;
    }
    Py_UCS4 *out = PyMem_Malloc((text.length + 1) * sizeof(Py_UCS4));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    /* a run of whitespace after some text is written as one space when text follows it;
       each run of the mask (whitespace apart at most) as one "0": neither is of a script
       written without spaces, so the spaces that go next go as they would around the mask.
       The tables are read through locals, which the stores to out cannot change */
    const uint8_t *is_whitespace = whitespace.view.buf, *is_no_space = no_space.view.buf;
    const Py_UCS4 whitespace_last = (Py_UCS4)whitespace.last, no_space_last = (Py_UCS4)no_space.last;
    const Py_UCS4 mask_point = mask >= 0 ? (Py_UCS4)mask : (Py_UCS4)0xFFFFFFFF;
    Py_ssize_t kept = 0;
    int pending = 0, after_mask = 0;
    uint8_t no_space_seen = 0;
    Py_UCS4 maximum = ' ';
    FOR_EACH_CHARACTER(text, at, code_point, {
        if (is_whitespace[code_point < whitespace_last ? code_point : whitespace_last]) {
            pending = kept > 0;
        }
        else if (code_point == mask_point) {
            if (!after_mask) {
                if (pending)
                    out[kept++] = ' ';
                out[kept++] = '0';
                after_mask = 1;
            }
            pending = 0;
        }
        else {
            if (pending) {
                out[kept++] = ' ';
                pending = 0;
            }
            out[kept++] = code_point;
            after_mask = 0;
            maximum = code_point > maximum ? code_point : maximum;
            no_space_seen |= is_no_space[code_point < no_space_last ? code_point : no_space_last];
        }
    })
    if (kept > 2 && no_space_seen) {
        /* a space goes when a neighbour is of a script written without spaces; the
           neighbours are those of the spaced text, before any space goes */
        Py_ssize_t written = 1;
        int before = table_flag(&no_space, out[0]);
        for (Py_ssize_t at = 1; at + 1 < kept; at++) {
            Py_UCS4 code_point = out[at];
            int current = table_flag(&no_space, code_point);
            if (!(code_point == ' ' && (before || table_flag(&no_space, out[at + 1]))))
                out[written++] = code_point;
            before = current;
        }
        out[written++] = out[kept - 1];
        kept = written;
    }
    result = str_of_code_points(out, kept, maximum);

done:
    PyMem_Free(out);
    PyBuffer_Release(&whitespace.view);
    PyBuffer_Release(&no_space.view);
    return result;
}

/* ---------------------------------------------------------------------------------- */

/* Words separated by "|" in a str, read once a call, and listed by their first and by
   their last character (an ASCII one, or "any other": bucket 128). */
#define MAX_WORDS 256
#define BUCKETS 129
typedef struct {
    Text text;
    Py_ssize_t count, starts[MAX_WORDS], sizes[MAX_WORDS];
    Py_ssize_t by_first[MAX_WORDS], first_bucket[BUCKETS + 1];
    Py_ssize_t by_last[MAX_WORDS], last_bucket[BUCKETS + 1];
} Words;

static inline int
bucket_of(Py_UCS4 code_point)
{
    return code_point < 128 ? (int)code_point : 128;
}

/* *order* lists the words by the bucket of their first character (of their last when
   *last*), *bucket_starts* where each bucket's words begin in it. */
static void
words_list(Words *words, int last, Py_ssize_t *order, Py_ssize_t *bucket_starts)
{
    Py_ssize_t sizes[BUCKETS] = {0};
    int buckets[MAX_WORDS];
    for (Py_ssize_t index = 0; index < words->count; index++) {
        Py_ssize_t at = words->starts[index] + (last ? words->sizes[index] - 1 : 0);
        buckets[index] = bucket_of(TEXT_AT(words->text, at));
        sizes[buckets[index]]++;
    }
    bucket_starts[0] = 0;
    for (int bucket = 0; bucket < BUCKETS; bucket++)
        bucket_starts[bucket + 1] = bucket_starts[bucket] + sizes[bucket];
    Py_ssize_t next[BUCKETS];
    memcpy(next, bucket_starts, sizeof(next));
    for (Py_ssize_t index = 0; index < words->count; index++)
        order[next[buckets[index]]++] = index;
}

static int
words_open(PyObject *object, const char *name, Words *words)
{
    if (text_open(object, &words->text) < 0)
        return -1;
    words->count = 0;
    for (Py_ssize_t start = 0; start < words->text.length;) {
        Py_ssize_t end = start;
        while (end < words->text.length && TEXT_AT(words->text, end) != '|')
            end++;
        if (end > start) {
            if (words->count == MAX_WORDS) {
                PyErr_Format(PyExc_ValueError, "%s: more than %d words", name, MAX_WORDS);
                return -1;
            }
            words->starts[words->count] = start;
            words->sizes[words->count++] = end - start;
        }
        start = end + 1;
    }
    words_list(words, 0, words->by_first, words->first_bucket);
    words_list(words, 1, words->by_last, words->last_bucket);
    return 0;
}

/* Whether *text* spells the word *index* of *words* from *at* on. */
static int
spells(const Text *text, Py_ssize_t at, const Words *words, Py_ssize_t index)
{
    Py_ssize_t start = words->starts[index], size = words->sizes[index];
    if (at < 0 || at + size > text->length)
        return 0;
    for (Py_ssize_t offset = 0; offset < size; offset++)
        if (TEXT_AT(words->text, start + offset) != TEXT_AT(*text, at + offset))
            return 0;
    return 1;
}

/* The end of a word of *words* that *text* spells from *at* on, or -1. */
static Py_ssize_t
word_at(const Text *text, Py_ssize_t at, const Words *words)
{
    if (at < 0 || at >= text->length)
        return -1;
    int bucket = bucket_of(TEXT_AT(*text, at));
    for (Py_ssize_t listed = words->first_bucket[bucket]; listed < words->first_bucket[bucket + 1];
         listed++) {
        Py_ssize_t index = words->by_first[listed];
        if (spells(text, at, words, index))
            return at + words->sizes[index];
    }
    return -1;
}

/* Whether *words* holds a word that *text* spells right before *end*. */
static int
word_before(const Text *text, Py_ssize_t end, const Words *words)
{
    if (end < 1 || end > text->length)
        return 0;
    int bucket = bucket_of(TEXT_AT(*text, end - 1));
    for (Py_ssize_t listed = words->last_bucket[bucket]; listed < words->last_bucket[bucket + 1];
         listed++) {
        Py_ssize_t index = words->by_last[listed];
        if (spells(text, end - words->sizes[index], words, index))
            return 1;
    }
    return 0;
}

PyDoc_STRVAR(number_candidates_doc,
"number_candidates(text, code_point_values, code_point_value, whitespace, words_before,\n"
"                  words_after, words_before_ago, /)\n--\n\n"
"Where crawler.content.number_masks.NEUTRAL_NUMBER may match in *text*: each decimal\n"
"digit (a code point written as 0-9, as translated() says) that no such digit or a-z\n"
"precedes, kept only where one of the expression's branches finds the shape it needs:\n"
"a date's or a time's separators, am or pm, a year's four digits, a word of\n"
"*words_before* right before it (or before one whitespace character), or after its\n"
"digits, decimals and thousands, a k or m, an ordinal, \"of\" and whitespace: a word of\n"
"*words_after*, or one of *words_before_ago* followed by whitespace and \"ago\". The\n"
"words are separated by \"|\". A list of positions, ascending; every match of the\n"
"expression starts at one of them.");

static int
is_digit_at(const Text *text, const LazyMap *map, Py_ssize_t at)
{
    if (at < 0 || at >= text->length)
        return 0;
    Py_UCS4 code_point = TEXT_AT(*text, at);
    /* ASCII digits are the only ASCII characters written as digits */
    uint32_t value = code_point < 128 ? code_point : lazy_value(map, code_point);
    return value >= '0' && value <= '9';
}

static int
char_at(const Text *text, Py_ssize_t at, Py_UCS4 code_point)
{
    return at >= 0 && at < text->length && TEXT_AT(*text, at) == code_point;
}

static int
is_space_at(const Text *text, const Table *whitespace, Py_ssize_t at)
{
    return at >= 0 && at < text->length && table_flag(whitespace, TEXT_AT(*text, at));
}

static Py_ssize_t
skip_whitespace(const Text *text, const Table *whitespace, Py_ssize_t at)
{
    while (is_space_at(text, whitespace, at))
        at++;
    return at;
}

typedef struct {
    const Text *text;
    const LazyMap *map;
    const Table *whitespace;
    const Words *before, *after, *before_ago;
} Shapes;

/* A separator at *at* (after the first digit and at most one more), a digit after it,
   and the same separator one or two digits later: 1/5/24, 01.05.2024. */
static int
separated_twice(const Shapes *shapes, Py_ssize_t at, Py_UCS4 separator)
{
    const Text *text = shapes->text;
    return char_at(text, at, separator) && is_digit_at(text, shapes->map, at + 1) &&
           (char_at(text, at + 2, separator) ||
            (is_digit_at(text, shapes->map, at + 2) && char_at(text, at + 3, separator)));
}

/* Whether a word of *words_after* (or a time unit then "ago") follows at *at*. */
static int
word_follows(const Shapes *shapes, Py_ssize_t at)
{
    const Text *text = shapes->text;
    Py_ssize_t end = word_at(text, at, shapes->after);
    /* 年 opens a full date: a month's number follows it */
    if (end >= 0 && (TEXT_AT(*text, at) != 0x5E74 ||
                     is_digit_at(text, shapes->map, skip_whitespace(text, shapes->whitespace, end))))
        return 1;
    const Words *units = shapes->before_ago;
    if (at >= text->length)
        return 0;
    int bucket = bucket_of(TEXT_AT(*text, at));
    for (Py_ssize_t listed = units->first_bucket[bucket]; listed < units->first_bucket[bucket + 1];
         listed++) {
        Py_ssize_t index = units->by_first[listed];
        if (!spells(text, at, units, index))
            continue;
        Py_ssize_t after = at + units->sizes[index];
        if (char_at(text, after, 's'))
            after++;
        Py_ssize_t ago = skip_whitespace(text, shapes->whitespace, after);
        if (ago > after && char_at(text, ago, 'a') && char_at(text, ago + 1, 'g') &&
            char_at(text, ago + 2, 'o'))
            return 1;
    }
    return 0;
}

static int
number_may_match(const Shapes *shapes, Py_ssize_t start)
{
    const Text *text = shapes->text;
    const LazyMap *map = shapes->map;
    const Table *whitespace = shapes->whitespace;
    /* what follows the first digit and at most one more */
    Py_ssize_t second = is_digit_at(text, map, start + 1) ? start + 2 : start + 1;
    for (Py_ssize_t at = start + 1; at <= second; at++) {
        if (separated_twice(shapes, at, '-') || separated_twice(shapes, at, '/') ||
            separated_twice(shapes, at, '.'))
            return 1;
        /* 10:32 */
        if (char_at(text, at, ':') && is_digit_at(text, map, at + 1) &&
            is_digit_at(text, map, at + 2))
            return 1;
    }
    /* 2024-05-01, 2024.05.01 */
    if (is_digit_at(text, map, start + 1) && is_digit_at(text, map, start + 2) &&
        is_digit_at(text, map, start + 3) &&
        (separated_twice(shapes, start + 4, '-') || separated_twice(shapes, start + 4, '/') ||
         separated_twice(shapes, start + 4, '.')))
        return 1;
    /* a year on its own: 19.. and 20.. */
    uint32_t first = lazy_value(map, TEXT_AT(*text, start));
    if ((first == '1' || first == '2') && is_digit_at(text, map, start + 1) &&
        lazy_value(map, TEXT_AT(*text, start + 1)) == (first == '1' ? '9' : '0') &&
        is_digit_at(text, map, start + 2) && is_digit_at(text, map, start + 3))
        return 1;
    /* a month or a counter's label before it, with or without a whitespace character */
    if (word_before(text, start, shapes->before) ||
        (is_space_at(text, whitespace, start - 1) && word_before(text, start - 1, shapes->before)))
        return 1;
    Py_ssize_t digits_end = start + 1;
    while (is_digit_at(text, map, digits_end))
        digits_end++;
    /* 10am, 9.05 pm, 10 a.m. */
    Py_ssize_t at = digits_end;
    if (char_at(text, at, '.') && is_digit_at(text, map, at + 1) && is_digit_at(text, map, at + 2))
        at += 3;
    if (is_space_at(text, whitespace, at))
        at++;
    if (char_at(text, at, 'a') || char_at(text, at, 'p')) {
        Py_ssize_t m = char_at(text, at + 1, '.') ? at + 2 : at + 1;
        if (char_at(text, m, 'm'))
            return 1;
    }
    /* a word after it: its decimals and thousands, k or m, an ordinal, "of" */
    Py_ssize_t rest_end = digits_end;
    while ((char_at(text, rest_end, ',') || char_at(text, rest_end, '.')) &&
           is_digit_at(text, map, rest_end + 1)) {
        rest_end += 2;
        while (is_digit_at(text, map, rest_end))
            rest_end++;
    }
    Py_ssize_t ends[5];
    int count = 0;
    ends[count++] = digits_end;
    ends[count++] = rest_end;
    if (char_at(text, rest_end, 'k') || char_at(text, rest_end, 'm'))
        ends[count++] = rest_end + 1;
    if (is_space_at(text, whitespace, rest_end) &&
        (char_at(text, rest_end + 1, 'k') || char_at(text, rest_end + 1, 'm')))
        ends[count++] = rest_end + 2;
    if (digits_end + 1 < text->length) {
        Py_UCS4 a = TEXT_AT(*text, digits_end), b = TEXT_AT(*text, digits_end + 1);
        if ((a == 's' && b == 't') || (a == 'n' && b == 'd') || (a == 'r' && b == 'd') ||
            (a == 't' && b == 'h'))
            ends[count++] = digits_end + 2;
    }
    for (int index = 0; index < count; index++) {
        Py_ssize_t word = skip_whitespace(text, whitespace, ends[index]);
        if (word_follows(shapes, word))
            return 1;
        if (word > ends[index] && char_at(text, word, 'o') && char_at(text, word + 1, 'f') &&
            word_follows(shapes, skip_whitespace(text, whitespace, word + 2)))
            return 1;
    }
    return 0;
}

static PyObject *
number_candidates(PyObject *module, PyObject *args)
{
    PyObject *object, *cache_object, *resolve, *whitespace_object, *before_object;
    PyObject *after_object, *before_ago_object, *result = NULL;
    LazyMap map;
    Table whitespace;
    Text text;
    Words before, after, before_ago;

    if (!PyArg_ParseTuple(args, "UOOOUUU:number_candidates", &object, &cache_object, &resolve,
                          &whitespace_object, &before_object, &after_object,
                          &before_ago_object))
        return NULL;
    if (text_open(object, &text) < 0 || words_open(before_object, "words_before", &before) < 0 ||
        words_open(after_object, "words_after", &after) < 0 ||
        words_open(before_ago_object, "words_before_ago", &before_ago) < 0)
        return NULL;
    if (lazy_map_open(cache_object, resolve, &map) < 0)
        return NULL;
    if (table_open(whitespace_object, 1, "whitespace", &whitespace) < 0) {
        PyBuffer_Release(&map.cache);
        return NULL;
    }
    Shapes shapes = {&text, &map, &whitespace, &before, &after, &before_ago};
    result = PyList_New(0);
    if (!result)
        goto done;
    /* Latin-1 holds no decimal digits but ASCII's: a str of that kind needs no map */
    int latin1 = text.kind == PyUnicode_1BYTE_KIND;
    FOR_EACH_CHARACTER(text, at, code_point, {
        if (code_point - (Py_UCS4)'0' >= 10 && (latin1 || code_point < 128))
            continue;
        if (!is_digit_at(&text, &map, at))
            continue;
        if (at > 0) {
            Py_UCS4 previous = TEXT_AT(text, at - 1);
            if (previous - (Py_UCS4)'a' < 26 || is_digit_at(&text, &map, at - 1))
                continue;
        }
        if (!number_may_match(&shapes, at))
            continue;
        PyObject *position = PyLong_FromSsize_t(at);
        if (!position || PyList_Append(result, position) < 0) {
            Py_XDECREF(position);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(position);
    })
    if (PyErr_Occurred())
        Py_CLEAR(result);

done:
    PyBuffer_Release(&map.cache);
    PyBuffer_Release(&whitespace.view);
    return result;
}

/* ---------------------------------------------------------------------------------- */

/* XXH64, as its specification (xxhash.com, "xxHash fast digest algorithm") defines it,
   for crawler.content.numbers_signature's tokens: the xxhash package's xxh64_intdigest. */
#define PRIME64_1 0x9E3779B185EBCA87ULL
#define PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define PRIME64_3 0x165667B19E3779F9ULL
#define PRIME64_4 0x85EBCA77C2B2AE63ULL
#define PRIME64_5 0x27D4EB2F165667C5ULL

static inline uint64_t
rotate_left(uint64_t value, int bits)
{
    return (value << bits) | (value >> (64 - bits));
}

static inline uint64_t
read_le64(const uint8_t *bytes)
{
    uint64_t value = 0;
    for (int index = 7; index >= 0; index--)
        value = value << 8 | bytes[index];
    return value;
}

static inline uint32_t
read_le32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
           (uint32_t)bytes[3] << 24;
}

static inline uint64_t
xxh64_round(uint64_t accumulator, uint64_t input)
{
    return rotate_left(accumulator + input * PRIME64_2, 31) * PRIME64_1;
}

static inline uint64_t
xxh64_merge(uint64_t accumulator, uint64_t value)
{
    return (accumulator ^ xxh64_round(0, value)) * PRIME64_1 + PRIME64_4;
}

static uint64_t
xxh64(const uint8_t *input, size_t length, uint64_t seed)
{
    const uint8_t *end = input + length;
    uint64_t hash;
    if (length >= 32) {
        uint64_t v1 = seed + PRIME64_1 + PRIME64_2, v2 = seed + PRIME64_2, v3 = seed,
                 v4 = seed - PRIME64_1;
        do {
            v1 = xxh64_round(v1, read_le64(input));
            v2 = xxh64_round(v2, read_le64(input + 8));
            v3 = xxh64_round(v3, read_le64(input + 16));
            v4 = xxh64_round(v4, read_le64(input + 24));
            input += 32;
        } while (input + 32 <= end);
        hash = rotate_left(v1, 1) + rotate_left(v2, 7) + rotate_left(v3, 12) +
               rotate_left(v4, 18);
        hash = xxh64_merge(hash, v1);
        hash = xxh64_merge(hash, v2);
        hash = xxh64_merge(hash, v3);
        hash = xxh64_merge(hash, v4);
    }
    else {
        hash = seed + PRIME64_5;
    }
    hash += (uint64_t)length;
    for (; input + 8 <= end; input += 8) {
        hash ^= xxh64_round(0, read_le64(input));
        hash = rotate_left(hash, 27) * PRIME64_1 + PRIME64_4;
    }
    if (input + 4 <= end) {
        hash ^= (uint64_t)read_le32(input) * PRIME64_1;
        hash = rotate_left(hash, 23) * PRIME64_2 + PRIME64_3;
        input += 4;
    }
    for (; input < end; input++) {
        hash ^= (uint64_t)*input * PRIME64_5;
        hash = rotate_left(hash, 11) * PRIME64_1;
    }
    hash ^= hash >> 33;
    hash *= PRIME64_2;
    hash ^= hash >> 29;
    hash *= PRIME64_3;
    return hash ^ (hash >> 32);
}

PyDoc_STRVAR(xxh64_doc,
"xxh64(data, seed, /)\n--\n\n"
"The XXH64 digest of *data* (bytes) with *seed*, as an int: xxhash.xxh64_intdigest.");

static PyObject *
xxh64_digest(PyObject *module, PyObject *args)
{
    Py_buffer data;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "y*K:xxh64", &data, &seed))
        return NULL;
    uint64_t digest = xxh64(data.buf, (size_t)data.len, seed);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLongLong(digest);
}

/* ---------------------------------------------------------------------------------- */

#define NUMBERS_COUNTERS 10
#define NUMBERS_COUNTER_BITS 2
#define NUMBERS_COUNT_BITS 6
#define NUMBERS_SUM_BITS 6
#define NUMBERS_OTHER_BITS 32

static inline int
ascii_alphanumeric(Py_UCS4 code_point)
{
    return (code_point >= '0' && code_point <= '9') || (code_point >= 'a' && code_point <= 'z');
}

static inline int
ascii_digit(Py_UCS4 code_point)
{
    return code_point >= '0' && code_point <= '9';
}

/* A number's token in UTF-8, on the stack unless it is long. */
typedef struct {
    uint8_t *data;
    size_t size, capacity;
    uint8_t stack[256];
} Token;

static void
token_clear(Token *token)
{
    if (token->data != token->stack)
        PyMem_Free(token->data);
    token->data = token->stack;
    token->size = 0;
    token->capacity = sizeof(token->stack);
}

/* Appends text[start:end] to *token*; -1 (MemoryError set) when memory runs out. */
static int
token_append(Token *token, const Text *text, Py_ssize_t start, Py_ssize_t end)
{
    size_t needed = token->size + 4 * (size_t)(end - start);
    if (needed > token->capacity) {
        size_t capacity = 2 * needed;
        uint8_t *data = PyMem_Malloc(capacity);
        if (!data) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(data, token->data, token->size);
        if (token->data != token->stack)
            PyMem_Free(token->data);
        token->data = data;
        token->capacity = capacity;
    }
    uint8_t *out = token->data + token->size;
    for (Py_ssize_t at = start; at < end; at++) {
        Py_UCS4 code_point = TEXT_AT(*text, at);
        if (code_point < 0x80) {
            *out++ = (uint8_t)code_point;
        }
        else if (code_point < 0x800) {
            *out++ = (uint8_t)(0xC0 | code_point >> 6);
            *out++ = (uint8_t)(0x80 | (code_point & 0x3F));
        }
        else if (code_point < 0x10000) {
            *out++ = (uint8_t)(0xE0 | code_point >> 12);
            *out++ = (uint8_t)(0x80 | (code_point >> 6 & 0x3F));
            *out++ = (uint8_t)(0x80 | (code_point & 0x3F));
        }
        else {
            *out++ = (uint8_t)(0xF0 | code_point >> 18);
            *out++ = (uint8_t)(0x80 | (code_point >> 12 & 0x3F));
            *out++ = (uint8_t)(0x80 | (code_point >> 6 & 0x3F));
            *out++ = (uint8_t)(0x80 | (code_point & 0x3F));
        }
    }
    token->size = (size_t)(out - token->data);
    return 0;
}

/* Whether text[start:end] is one of *words* (a whole word, not a prefix). */
static int
is_word(const Text *text, Py_ssize_t start, Py_ssize_t end, const Words *words)
{
    if (start >= end)
        return 0;
    int bucket = bucket_of(TEXT_AT(*text, start));
    for (Py_ssize_t listed = words->first_bucket[bucket]; listed < words->first_bucket[bucket + 1];
         listed++) {
        Py_ssize_t index = words->by_first[listed];
        if (words->sizes[index] == end - start && spells(text, start, words, index))
            return 1;
    }
    return 0;
}

/* The first word of *words*, in their order, that *text* spells from *at* on: its end,
   or -1. */
static Py_ssize_t
first_word_at(const Text *text, Py_ssize_t at, const Words *words)
{
    for (Py_ssize_t index = 0; index < words->count; index++)
        if (spells(text, at, words, index))
            return at + words->sizes[index];
    return -1;
}

/* crawler.content.numbers_signature._label_before: where the label right before
   position *start* begins (its end being *label_end*), or -1. */
static Py_ssize_t
label_before(const Text *text, Py_ssize_t start, const Words *labels,
             const Words *chinese_labels, Py_ssize_t *label_end)
{
    if (start >= 2 && is_word(text, start - 2, start, chinese_labels)) {
        *label_end = start;
        return start - 2;
    }
    if (start < 2 || TEXT_AT(*text, start - 1) != ' ')
        return -1;
    /* the word before the space, cut to its trailing a-z letters */
    Py_ssize_t word_start = start - 1;
    while (word_start > 0 && TEXT_AT(*text, word_start - 1) != ' ')
        word_start--;
    Py_ssize_t latin = start - 1;
    while (latin > word_start && TEXT_AT(*text, latin - 1) >= 'a' && TEXT_AT(*text, latin - 1) <= 'z')
        latin--;
    if (is_word(text, latin, start - 1, labels)) {
        *label_end = start - 1;
        return latin;
    }
    if (start >= 3 && is_word(text, start - 3, start - 1, chinese_labels)) {
        *label_end = start - 1;
        return start - 3;
    }
    return -1;
}

PyDoc_STRVAR(numbers_signature_doc,
"numbers_signature(normalized, code_point_values, code_point_value, units,\n"
"                  chinese_units, labels,\n"
"                  chinese_labels, seed, /)\n--\n\n"
"crawler.content.numbers_signature.numbers_signature, given its vocabulary: *units*, the\n"
"unit words (each spelled out: bit and bits), *chinese_units* in the order its\n"
"expression tries them, *labels* and *chinese_labels*, each separated by \"|\", and the\n"
"hash's *seed*.");

static PyObject *
numbers_signature(PyObject *module, PyObject *args)
{
    PyObject *object, *cache_object, *resolve, *units_object, *chinese_units_object;
    PyObject *labels_object, *chinese_labels_object;
    unsigned long long seed;
    Text text;
    LazyMap map;
    Words units, chinese_units, labels, chinese_labels;
    Token token;
    token.data = token.stack;
    token.capacity = sizeof(token.stack);
    token.size = 0;

    if (!PyArg_ParseTuple(args, "UOOUUUUK:numbers_signature", &object, &cache_object, &resolve,
                          &units_object, &chinese_units_object, &labels_object,
                          &chinese_labels_object, &seed))
        return NULL;
    if (text_open(object, &text) < 0 || words_open(units_object, "units", &units) < 0 ||
        words_open(chinese_units_object, "chinese_units", &chinese_units) < 0 ||
        words_open(labels_object, "labels", &labels) < 0 ||
        words_open(chinese_labels_object, "chinese_labels", &chinese_labels) < 0)
        return NULL;
    if (lazy_map_open(cache_object, resolve, &map) < 0)
        return NULL;

    uint64_t others = 0, count = 0, digest_sum = 0;
    uint64_t counters[NUMBERS_COUNTERS] = {0};
    Py_ssize_t at = 0;
    while (at < text.length) {
        /* a run of ASCII letters and digits that holds a digit */
        if (!ascii_alphanumeric(TEXT_AT(text, at)) ||
            (at > 0 && ascii_alphanumeric(TEXT_AT(text, at - 1)))) {
            at++;
            continue;
        }
        Py_ssize_t run_end = at, first_digit = -1;
        while (run_end < text.length && ascii_alphanumeric(TEXT_AT(text, run_end))) {
            if (first_digit < 0 && ascii_digit(TEXT_AT(text, run_end)))
                first_digit = run_end;
            run_end++;
        }
        if (first_digit < 0) {
            at = run_end;
            continue;
        }
        Py_ssize_t start = at, end = run_end;
        /* up to two more runs one space apart, each starting with a digit */
        for (int more = 0; more < 2; more++) {
            if (!(end + 1 < text.length && TEXT_AT(text, end) == ' ' &&
                  ascii_digit(TEXT_AT(text, end + 1))))
                break;
            Py_ssize_t next = end + 1;
            while (next < text.length && ascii_alphanumeric(TEXT_AT(text, next)))
                next++;
            end = next;
        }
        Py_ssize_t token_end = end, unit_start = -1, unit_end = -1;
        /* a unit: a whole word of *units* (after a space or none), or a Chinese one */
        Py_ssize_t word = end < text.length && TEXT_AT(text, end) == ' ' ? end + 1 : end;
        Py_ssize_t word_end = word;
        while (word_end < text.length && ascii_alphanumeric(TEXT_AT(text, word_end)))
            word_end++;
        int digit_after = is_digit_at(&text, &map, word_end);
        if (!digit_after && is_word(&text, word, word_end, &units)) {
            unit_start = word;
            unit_end = word_end;
        }
        else {
            Py_ssize_t chinese_end = first_word_at(&text, end, &chinese_units);
            if (chinese_end >= 0) {
                unit_start = end;
                unit_end = chinese_end;
            }
        }
        if (unit_end >= 0)
            end = unit_end;

        token.size = 0;
        int naming = 1, fits = 1;
        Py_ssize_t label_end = -1, label_start = -1;
        if (unit_start >= 0) {
            fits = token_append(&token, &text, start, token_end) == 0 &&
                   token_append(&token, &text, unit_start, unit_end) == 0;
        }
        else if (token_end - start == 1 && TEXT_AT(text, start) == '0') {
            at = end;
            continue;
        }
        else if ((label_start = label_before(&text, start, &labels, &chinese_labels,
                                             &label_end)) >= 0) {
            fits = token_append(&token, &text, label_start, label_end) == 0 &&
                   token_append(&token, &text, start, token_end) == 0;
        }
        else {
            fits = token_append(&token, &text, start, token_end) == 0;
            /* digits and spaces only; or an ordinal (20th) or a decade (70s, 1990s) */
            int digits = 0, others_seen = 0;
            for (Py_ssize_t index = start; index < token_end; index++) {
                Py_UCS4 code_point = TEXT_AT(text, index);
                if (ascii_digit(code_point))
                    digits++;
                else if (code_point != ' ')
                    others_seen++;
            }
            Py_ssize_t digits_end = start;
            while (digits_end < token_end && ascii_digit(TEXT_AT(text, digits_end)))
                digits_end++;
            Py_ssize_t tail = token_end - digits_end;
            int ordinal = 0, decade = 0;
            if (digits_end > start && tail == 2) {
                Py_UCS4 a = TEXT_AT(text, digits_end), b = TEXT_AT(text, digits_end + 1);
                ordinal = (a == 's' && b == 't') || (a == 'n' && b == 'd') ||
                          (a == 'r' && b == 'd') || (a == 't' && b == 'h');
            }
            if (tail == 1 && digits_end > start && TEXT_AT(text, digits_end) == 's' &&
                TEXT_AT(text, digits_end - 1) == '0')
                decade = 1;
            if ((digits && !others_seen) || ordinal || decade)
                naming = 0;
        }
        if (!fits) {
            token_clear(&token);
            PyBuffer_Release(&map.cache);
            return NULL;
        }
        uint64_t digest = xxh64(token.data, token.size, seed);
        if (naming) {
            counters[digest % NUMBERS_COUNTERS]++;
            count++;
            digest_sum += digest >> 32;
        }
        else {
            others |= 1ULL << (digest % NUMBERS_OTHER_BITS);
        }
        at = end;
    }
    token_clear(&token);
    PyBuffer_Release(&map.cache);
    if (PyErr_Occurred())
        return NULL;

    uint64_t high = 0;
    for (int counter = NUMBERS_COUNTERS - 1; counter >= 0; counter--)
        high = high << NUMBERS_COUNTER_BITS | (counters[counter] % (1 << NUMBERS_COUNTER_BITS));
    high = high << NUMBERS_COUNT_BITS | (count % (1 << NUMBERS_COUNT_BITS));
    high = high << NUMBERS_SUM_BITS | (digest_sum % (1 << NUMBERS_SUM_BITS));
    return PyLong_FromUnsignedLongLong(high << NUMBERS_OTHER_BITS | others);
}

/* ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(nfkc_doc,
"nfkc(text, inert, normalize, /)\n--\n\n"
"crawler.content.unicode_forms.nfkc: *text* with each run of the characters that *inert*\n"
"(a table of flags) does not mark, and the character before the run, passed through\n"
"*normalize* (unicodedata.normalize) in NFKC; *text* itself when every character is\n"
"inert (every ASCII character must be).");

/* The first position from *from* on whose character NFKC may change (*inert* says which
   do not; every ASCII character is inert), or the text's length. */
#define FIRST_CHANGING_OF_KIND(type, text, inert, from)                                     \
    {                                                                                       \
        const type *characters_ = (text)->data;                                             \
        for (Py_ssize_t at_ = (from); at_ < (text)->length; at_++)                          \
            if (characters_[at_] >= 128 && !table_flag((inert), characters_[at_]))          \
                return at_;                                                                 \
        return (text)->length;                                                              \
    }

static Py_ssize_t
first_changing(const Text *text, const Table *inert, Py_ssize_t from)
{
    switch (text->kind) {
    case PyUnicode_1BYTE_KIND:
        FIRST_CHANGING_OF_KIND(Py_UCS1, text, inert, from)
    case PyUnicode_2BYTE_KIND:
        FIRST_CHANGING_OF_KIND(Py_UCS2, text, inert, from)
    default:
        FIRST_CHANGING_OF_KIND(Py_UCS4, text, inert, from)
    }
}

static int
append_substring(PyObject *pieces, PyObject *object, Py_ssize_t start, Py_ssize_t end)
{
    if (end <= start)
        return 0;
    PyObject *piece = PyUnicode_Substring(object, start, end);
    if (!piece)
        return -1;
    int failed = PyList_Append(pieces, piece);
    Py_DECREF(piece);
    return failed;
}

static PyObject *
nfkc(PyObject *module, PyObject *args)
{
    PyObject *object, *inert_object, *normalize, *result = NULL, *form = NULL;
    PyObject *pieces = NULL;
    Text text;
    Table inert;

    if (!PyArg_ParseTuple(args, "UOO:nfkc", &object, &inert_object, &normalize))
        return NULL;
    if (text_open(object, &text) < 0)
        return NULL;
    if (table_open(inert_object, 1, "inert", &inert) < 0)
        return NULL;
    /* the text between the runs of characters NFKC may change is kept as it is; each run
       is normalized with the inert character before it, which a combining mark may join */
    Py_ssize_t done = 0;
    int changed = 0;
    for (Py_ssize_t run_start = first_changing(&text, &inert, 0); run_start < text.length;
         run_start = first_changing(&text, &inert, done)) {
        Py_ssize_t run_end = run_start + 1;
        while (run_end < text.length && !table_flag(&inert, TEXT_AT(text, run_end)))
            run_end++;
        if (!pieces) {
            pieces = PyList_New(0);
            form = PyUnicode_FromString("NFKC");
            if (!pieces || !form)
                goto done;
        }
        Py_ssize_t start = run_start > 0 ? run_start - 1 : 0;
        if (append_substring(pieces, object, done, start) < 0)
            goto done;
        PyObject *piece = PyUnicode_Substring(object, start, run_end);
        PyObject *normalized =
            piece ? PyObject_CallFunctionObjArgs(normalize, form, piece, NULL) : NULL;
        if (!normalized) {
            Py_XDECREF(piece);
            goto done;
        }
        if (!PyUnicode_Check(normalized)) {
            Py_DECREF(piece);
            Py_DECREF(normalized);
            PyErr_SetString(PyExc_TypeError, "normalize did not return a str");
            goto done;
        }
        if (!changed)
            changed = PyUnicode_Compare(normalized, piece) != 0;
        Py_DECREF(piece);
        int failed = PyList_Append(pieces, normalized);
        Py_DECREF(normalized);
        if (failed)
            goto done;
        done = run_end;
    }
    if (!changed) {  /* the text was in NFKC already: the caller may test identity */
        result = Py_NewRef(object);
        goto done;
    }
    if (append_substring(pieces, object, done, text.length) < 0)
        goto done;
    PyObject *empty = PyUnicode_FromStringAndSize(NULL, 0);
    if (empty) {
        result = PyUnicode_Join(empty, pieces);
        Py_DECREF(empty);
    }

done:
    Py_XDECREF(pieces);
    Py_XDECREF(form);
    PyBuffer_Release(&inert.view);
    return result;
}

/* ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(casefolded_doc,
"casefolded(text, known, folds, /)\n--\n\n"
"text.casefold(), folding ASCII letters here and asking Python once a process for each\n"
"other character: *known* (a bytearray of 65,536) says of each character of the Basic\n"
"Multilingual Plane whether its folding is known to leave it as it is (1) or to change it\n"
"(2, then *folds* maps its code point to its folding), *folds* (a dict) holds the\n"
"foldings of those and of the characters of the other planes. Both fill up as texts come.");

/* The folding of *code_point*, from *folds* or from Python (then kept there): a new
   reference, or NULL with an exception set. */
static PyObject *
folding_of(Py_UCS4 code_point, PyObject *folds)
{
    PyObject *key = PyLong_FromUnsignedLong(code_point);
    if (!key)
        return NULL;
    PyObject *folded = PyDict_GetItemWithError(folds, key);
    if (folded) {
        Py_DECREF(key);
        return Py_NewRef(folded);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *character = PyUnicode_FromOrdinal((int)code_point);
    folded = character ? PyObject_CallMethod(character, "casefold", NULL) : NULL;
    Py_XDECREF(character);
    if (folded && PyDict_SetItem(folds, key, folded) < 0)
        Py_CLEAR(folded);
    Py_DECREF(key);
    return folded;
}

static PyObject *
casefolded(PyObject *module, PyObject *args)
{
    PyObject *object, *known_object, *folds, *result = NULL;
    Py_buffer known;
    Text text;

    if (!PyArg_ParseTuple(args, "UOO!:casefolded", &object, &known_object, &PyDict_Type, &folds))
        return NULL;
    if (text_open(object, &text) < 0)
        return NULL;
    if (PyObject_GetBuffer(known_object, &known, PyBUF_WRITABLE) < 0)
        return NULL;
    if (known.len != 0x10000) {
        PyErr_SetString(PyExc_ValueError, "known: a bytearray of 65,536 was expected");
        PyBuffer_Release(&known);
        return NULL;
    }
    uint8_t *flags = known.buf;
    /* a character folds to three at most: room for the text and 64 such characters,
       more when the text needs it */
    Py_ssize_t capacity = text.length + 192;
    Py_UCS4 *out = PyMem_Malloc(capacity * sizeof(Py_UCS4));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t written = 0;
    FOR_EACH_CHARACTER(text, at, code_point, {
        if (code_point < 128) {
            out[written++] = code_point - (Py_UCS4)'A' < 26 ? code_point + 32 : code_point;
            continue;
        }
        if (code_point < 0x10000 && flags[code_point] == 1) {
            out[written++] = code_point;
            continue;
        }
        PyObject *folded = folding_of(code_point, folds);
        if (!folded)
            goto done;
        if (written + 3 + (text.length - at) > capacity) {
            capacity = 2 * capacity + 3;
            Py_UCS4 *larger = PyMem_Realloc(out, capacity * sizeof(Py_UCS4));
            if (!larger) {
                Py_DECREF(folded);
                PyErr_NoMemory();
                goto done;
            }
            out = larger;
        }
        Py_ssize_t size = PyUnicode_GET_LENGTH(folded);
        if (size > 3) {
            Py_DECREF(folded);
            PyErr_SetString(PyExc_ValueError, "a folding of more than three characters");
            goto done;
        }
        for (Py_ssize_t index = 0; index < size; index++)
            out[written++] = PyUnicode_READ_CHAR(folded, index);
        if (code_point < 0x10000)
            flags[code_point] = size == 1 && PyUnicode_READ_CHAR(folded, 0) == code_point ? 1 : 2;
        Py_DECREF(folded);
    })
    result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, written);

done:
    PyMem_Free(out);
    PyBuffer_Release(&known);
    return result;
}

/* ---------------------------------------------------------------------------------- */
/* crawler.content.page_size */

#define ELEMENT_SLOTS 1024
#define ELEMENT_SLOT_BYTES 16
#define ELEMENT_NAME_MAX 14
#define ELEMENT_HIDDEN 1
#define ELEMENT_BLOCK 2

PyDoc_STRVAR(markup_text_chars_doc,
"markup_text_chars(page, elements, /)\n--\n\n"
"The characters of text *page* shows, read from its markup:\n"
"crawler.content.page_size._markup_text_chars. *elements* (bytes) is the table of the\n"
"element names that hide their content or part words, built by _element_table: 1,024\n"
"slots of 16 bytes, found by the FNV-1a hash of the lowercase name, each the name\n"
"(NUL-padded, at most 14 bytes) and in its last byte 1 (hidden) or 2 (block).");

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Markup;

static inline Py_ALWAYS_INLINE Py_UCS4
markup_at(const Markup *page, Py_ssize_t index)
{
    return PyUnicode_READ(page->kind, page->data, index);
}

static inline int
is_ascii_letter(Py_UCS4 character)
{
    return (character | 0x20) >= 'a' && (character | 0x20) <= 'z';
}

static inline int
is_ascii_alnum(Py_UCS4 character)
{
    return is_ascii_letter(character) || (character >= '0' && character <= '9');
}

static inline Py_UCS4
ascii_lower(Py_UCS4 character)
{
    return is_ascii_letter(character) ? character | 0x20 : character;
}

static inline int
is_hex_digit(Py_UCS4 character)
{
    return (character >= '0' && character <= '9')
        || ((character | 0x20) >= 'a' && (character | 0x20) <= 'f');
}

/* Where the next *character* at or after *start* is, or -1. */
static inline Py_ALWAYS_INLINE Py_ssize_t
markup_find(const Markup *page, Py_UCS4 character, Py_ssize_t start)
{
    if (start >= page->length)
        return -1;
    if (page->kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *chars = page->data;
        const Py_UCS1 *at = memchr(chars + start, (int)character, (size_t)(page->length - start));
        return at ? at - chars : -1;
    }
    for (Py_ssize_t index = start; index < page->length; index++)
        if (markup_at(page, index) == character)
            return index;
    return -1;
}

/* Where the tag that starts with *name_end* (just after its name) ends: after its '>', or
   the page's end. */
static inline Py_ALWAYS_INLINE Py_ssize_t
tag_end(const Markup *page, Py_ssize_t name_end)
{
    Py_ssize_t closing = markup_find(page, '>', name_end);
    return closing < 0 ? page->length : closing + 1;
}

/* Where the first "</" + *name* (lowercase, *size* characters; in any case) at or after
   *start* begins, or -1. */
static inline Py_ALWAYS_INLINE Py_ssize_t
end_tag_start(const Markup *page, const char *name, Py_ssize_t size, Py_ssize_t start)
{
    for (Py_ssize_t index = markup_find(page, '<', start); index >= 0;
         index = markup_find(page, '<', index + 1)) {
        if (index + 1 + size >= page->length)
            return -1;
        if (markup_at(page, index + 1) != '/')
            continue;
        Py_ssize_t at = 0;
        while (at < size && ascii_lower(markup_at(page, index + 2 + at)) == (Py_UCS4)name[at])
            at++;
        if (at == size)
            return index;
    }
    return -1;
}

static uint32_t
fnv1a(const char *bytes, Py_ssize_t size)
{
    uint32_t hash = 2166136261U;
    for (Py_ssize_t index = 0; index < size; index++)
        hash = (hash ^ (uint8_t)bytes[index]) * 16777619U;
    return hash;
}

/* The class of element *name* (lowercase, *size* bytes) in *elements*: 0 (another
   element), ELEMENT_HIDDEN or ELEMENT_BLOCK. */
static inline Py_ALWAYS_INLINE int
element_class(const uint8_t *elements, const char *name, Py_ssize_t size)
{
    if (size > ELEMENT_NAME_MAX)
        return 0;
    const uint8_t *slot = elements + (fnv1a(name, size) % ELEMENT_SLOTS) * ELEMENT_SLOT_BYTES;
    if (memcmp(slot, name, (size_t)size) != 0 || (size < ELEMENT_NAME_MAX && slot[size] != 0))
        return 0;
    return slot[ELEMENT_SLOT_BYTES - 1];
}

/* Whether the '<' at *start* opens a comment or a tag; if so, where it ends (a hidden
   element: after its end tag, if it has one) and whether it parts words. */
static inline Py_ALWAYS_INLINE int
markup_piece(const Markup *page, const uint8_t *elements, Py_ssize_t start,
             Py_ssize_t *after, int *parts_words)
{
    Py_ssize_t length = page->length;
    if (start + 3 < length && markup_at(page, start + 1) == '!'
        && markup_at(page, start + 2) == '-' && markup_at(page, start + 3) == '-') {
        for (Py_ssize_t index = start + 4; index + 2 < length; index++) {
            if (markup_at(page, index) == '-' && markup_at(page, index + 1) == '-'
                && markup_at(page, index + 2) == '>') {
                *after = index + 3;
                *parts_words = 0;
                return 1;
            }
        }
    }
    Py_ssize_t index = start + 1;
    Py_UCS4 mark = index < length ? markup_at(page, index) : 0;
    if (mark == '/' || mark == '!' || mark == '?')
        index++;
    if (index >= length || !is_ascii_letter(markup_at(page, index)))
        return 0;
    char name[ELEMENT_NAME_MAX];
    Py_ssize_t size = 0;
    for (; index < length && is_ascii_alnum(markup_at(page, index)); index++, size++) {
        if (size < ELEMENT_NAME_MAX)
            name[size] = (char)ascii_lower(markup_at(page, index));
    }
    int class = element_class(elements, name, size);
    *after = tag_end(page, index);
    if (class == ELEMENT_HIDDEN && mark != '/') {
        Py_ssize_t closing = end_tag_start(page, name, size, *after);
        if (closing >= 0)
            *after = tag_end(page, closing + 2 + size);
    }
    *parts_words = class == ELEMENT_BLOCK;
    return 1;
}

/* Where the character reference at *start* (an '&') ends, or -1 when it starts none. */
static inline Py_ALWAYS_INLINE Py_ssize_t
reference_end(const Markup *page, Py_ssize_t start)
{
    Py_ssize_t length = page->length, index = start + 1;
    if (index < length && markup_at(page, index) == '#') {
        if (index + 1 < length && (markup_at(page, index + 1) | 0x20) == 'x') {
            Py_ssize_t end = index + 2;
            while (end < length && is_hex_digit(markup_at(page, end)))
                end++;
            if (end > index + 2)
                index = end;
        }
        if (index == start + 1) {
            Py_ssize_t end = index + 1;
            while (end < length && markup_at(page, end) >= '0' && markup_at(page, end) <= '9')
                end++;
            if (end == index + 1)
                return -1;
            index = end;
        }
    }
    else if (index < length && is_ascii_letter(markup_at(page, index))) {
        while (index < length && is_ascii_alnum(markup_at(page, index)))
            index++;
    }
    else
        return -1;
    return index < length && markup_at(page, index) == ';' ? index + 1 : index;
}

/* The count of markup_text_chars, written once and compiled for each kind of str (the
   kind a constant in each, so that reading a character is one load). */
static inline Py_ALWAYS_INLINE Py_ssize_t
count_markup_text(int kind, const void *data, Py_ssize_t length, const uint8_t *elements)
{
    Markup page = {kind, data, length};
    Py_ssize_t count = 0, index = 0;
    int space = 0;
    while (index < length) {
        Py_UCS4 character = markup_at(&page, index);
        if (character == '<') {
            Py_ssize_t after;
            int parts_words;
            if (markup_piece(&page, elements, index, &after, &parts_words)) {
                space |= parts_words;
                index = after;
                continue;
            }
            index++;
        }
        else if (character == '&') {
            Py_ssize_t end = reference_end(&page, index);
            index = end < 0 ? index + 1 : end;
        }
        else if (Py_UNICODE_ISSPACE(character)) {
            space = 1;
            index++;
            continue;
        }
        else
            index++;
        count += space && count ? 2 : 1;
        space = 0;
    }
    return count;
}

static PyObject *
markup_text_chars(PyObject *module, PyObject *args)
{
    PyObject *text;
    Py_buffer elements;
    if (!PyArg_ParseTuple(args, "Uy*:markup_text_chars", &text, &elements))
        return NULL;
    if (elements.len != ELEMENT_SLOTS * ELEMENT_SLOT_BYTES) {
        PyBuffer_Release(&elements);
        PyErr_SetString(PyExc_ValueError, "the table of elements has the wrong size");
        return NULL;
    }
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), count;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        count = count_markup_text(PyUnicode_1BYTE_KIND, data, length, elements.buf);
        break;
    case PyUnicode_2BYTE_KIND:
        count = count_markup_text(PyUnicode_2BYTE_KIND, data, length, elements.buf);
        break;
    default:
        count = count_markup_text(PyUnicode_4BYTE_KIND, data, length, elements.buf);
    }
    PyBuffer_Release(&elements);
    return PyLong_FromSsize_t(count);
}

/* ---------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"simhash_and_minhash", simhash_and_minhash, METH_VARARGS, simhash_and_minhash_doc},
    {"translated", translated, METH_VARARGS, translated_doc},
    {"spaced", spaced, METH_VARARGS, spaced_doc},
    {"number_candidates", number_candidates, METH_VARARGS, number_candidates_doc},
    {"numbers_signature", numbers_signature, METH_VARARGS, numbers_signature_doc},
    {"xxh64", xxh64_digest, METH_VARARGS, xxh64_doc},
    {"nfkc", nfkc, METH_VARARGS, nfkc_doc},
    {"casefolded", casefolded, METH_VARARGS, casefolded_doc},
    {"markup_text_chars", markup_text_chars, METH_VARARGS, markup_text_chars_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "crawler.content._speedups",
    "Compiled forms of the fingerprints' loops (see crawler.content.speedups).",
    0,
    methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module_definition);
}
