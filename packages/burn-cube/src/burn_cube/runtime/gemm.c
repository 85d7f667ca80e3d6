/* Matrix products of the cpu runtime: c[m, n] = a[m, k] @ b[k, n] for float and double, on
 * operands at any element strides, written row-major into c (row stride ldc).
 *
 * A register-blocked micro-kernel (up to MR rows x NV vectors of accumulators, a broadcast of
 * one element of a times NV vectors of a row of b per step of k) over blocks of KC steps of k.
 * b is packed per strip of NR columns into a k-major panel on the stack (zero-padded past the
 * matrix edge; one L1-sized buffer reused by every strip of a thread), which stays in L1
 * while the kernel walks all rows of a. Where a thread runs few strips of rows (FEW_STRIPS), a
 * whole strip of row-contiguous b is packed by the strip's first tile, which reads b in place
 * and stores each row it loads into the panel:
 * [64, 784] @ [784, 256] took 172 us packing first, 154 packing in the first tile (1 thread,
 * AVX-512; the copy alone was about 22 us). a is read in place where its rows are contiguous
 * (row pointers), else packed into k-major strips of MR rows first (a column-major a, the
 * weight gradient's x^T, copies MR contiguous elements a step, across PACK_GROUP strips at
 * each step so that its columns are read a few cache lines at a time). The kernel is
 * specialized on its row count, so the last strip of rows runs only the rows it has.
 * A row-contiguous a times a column-contiguous b with fewer rows than columns, of depth
 * TRANSPOSE_DEPTH or more, runs as c^T = b^T a^T, so that the smaller operand is the one
 * transposed in packing, into a row-major scratch copied into c by square blocks at the end
 * (the kernel's tiles stored transposed, element by element at every block of depth, took
 * 40 of the 210 us of [64, 784] @ [784, 256]^T; the scratch and the copy 178 us, 1 thread,
 * AVX-512).
 * From GEMM_THREAD_WORK multiply-adds the product runs on OpenMP threads (one parallel region
 * a product), each thread on its own range of strips of rows where c has more rows than
 * columns (packing its own strips of a, and every strip of b into its own panel; a packed
 * strip keeps the place of a whole block of depth, so a thread on the last, shorter block
 * never writes where another still reads), else of columns (a packed by all threads between
 * barriers). Few outputs of long rows, both operands contiguous along k, run as dot products
 * (`dots`).
 * A batch of products of one layout (attention's heads) runs the products on OpenMP threads
 * across the batch where each is below GEMM_THREAD_WORK (`bc_gemm_batched_T`).
 * No fast-math: NaN and infinities propagate as in any sum of products (zero padding only
 * feeds elements of c that are never stored).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define VBYTES 64
#elif defined(__AVX__)
#include <immintrin.h>
#define VBYTES 32
#else
#define VBYTES 16
#endif

#define KC 256
/* the micro-kernel's two shapes, MR rows x NV vectors of accumulators (MR x NV accumulators,
 * NV vectors of b and a broadcast must fit the vector registers: 32 with AVX-512, 16 with AVX2
 * or SSE, where 8 rows of 2 spilled: [64, 784] @ [784, 256] took 656 us at 8 rows, 377 at 6,
 * OpenBLAS 323, on an AVX2 EPYC). With AVX-512 a product of WIDE_COLUMNS columns or more
 * whose operands' rows are contiguous runs the wide shape, 6 x 4 (24 accumulators: fewer
 * loads a multiply-add), others the narrow one, 8 x 2, whose strips of at most one vector run
 * 8 x 1. Median ratios to torch's product, narrow -> wide, 1 thread, AVX-512, in shuffled
 * order: [64, 784] @ [784, 256] 1.05 -> 1.00, [1024, 128] @ [128, 512] 1.28 -> 1.12,
 * [1024, 512] @ [512, 128] 1.15 -> 1.06, 512^3 1.10 -> 1.07, in float64 [1024, 512] @
 * [512, 128] 1.32 -> 1.11; but with a packed column-major lhs [784, 64] @ [64, 256] 1.07 ->
 * 1.12, [512, 1024] @ [1024, 128] 1.13 -> 1.19, and with fewer columns [64, 120] @ [120, 84]
 * 1.51 -> 1.74, [4096, 150] @ [150, 16] 1.10 -> 1.28 */
#if defined(__AVX512F__)
#define WIDE_MR 6
#define WIDE_NV 4
#define NARROW_MR 8
#else
#define WIDE_MR 6
#define WIDE_NV 2
#define NARROW_MR 6
#endif
#define NARROW_NV 2
#define WIDE_COLUMNS 128
#define GEMM_THREAD_WORK (1 << 21)

/* whether an m x k by k x n product runs on OpenMP threads (GEMM_THREAD_WORK multiply-adds) */
static inline int gemm_threaded(int64_t m, int64_t n, int64_t k) {
    return (double)m * n * k >= GEMM_THREAD_WORK;
}
/* a thread's strips of rows up to which a strip of b is packed by its first tile (more share
 * the packing's cost; its first tile's strided reads of b then cost more than they hide) */
#define FEW_STRIPS 16
/* full strips of a column-major a packed a step at a time: PACK_GROUP strips read 2 cache lines
 * of each of its columns (the weight gradient's x^T [512, 1024] @ [1024, 128] took 1003 us
 * packed a strip at a time, 842 by 4 strips, 868 by 8, 972 by all; torch 871; 1 thread) */
#define PACK_GROUP 4
/* few outputs of long rows (a convolution's weight gradient: im2col columns times the output
 * gradient) run as dot products, in blocks of DOT_KC steps */
#define DOT_OUTPUTS 4096
#define DOT_DEPTH 1024
#define DOT_KC 2048
#define DOT_COLS 4
/* side of the square blocks a transposed product's scratch is copied into c by */
#define TRANSPOSE_BLOCK 16
/* least depth of a product run as c^T = b^T a^T: below it the scratch and its copy cost more
 * than the strided packing of b they save ([64, k] @ [k, 256]^T took 11.9 / 5.8 us at k 10,
 * 24.3 / 22.0 at 64, 66.0 / 81.0 at 256 transposed / not; 1 thread, AVX-512) */
#define TRANSPOSE_DEPTH 64

/* calls kernel(R, ...) with the row count mr (1 <= mr <= rows, rows 6 or 8) as a constant:
 * one specialization of the kernel per count */
#define BY_ROWS(kernel, mr, rows, ...)                                                        \
    switch (mr) {                                                                             \
    case 1: kernel(1, __VA_ARGS__); break;                                                    \
    case 2: kernel(2, __VA_ARGS__); break;                                                    \
    case 3: kernel(3, __VA_ARGS__); break;                                                    \
    case 4: kernel(4, __VA_ARGS__); break;                                                    \
    case 5: kernel(5, __VA_ARGS__); break;                                                    \
    case 6: kernel(6 < (rows) ? 6 : (rows), __VA_ARGS__); break;                              \
    case 7: kernel(7 < (rows) ? 7 : (rows), __VA_ARGS__); break;                              \
    default: kernel(rows, __VA_ARGS__); break;                                                \
    }

#define DEFINE_SHAPE(T, S, MR, NV)                                                            \
enum { NR_##T##_##S = NV * W_##T };                                                           \
                                                                                              \
/* c tile = or += a[rows x kc] b[kc x nv vectors]: a's row i at a + i * lda, its step p at    \
 * p * ka; b's row p at b + p * ldb (a packed panel, or b in place with pack the panel to     \
 * fill as its rows are read, nv then NV), nr of its columns kept */                          \
static inline __attribute__((always_inline)) void                                             \
tile_##T##_##S(int rows, int nv, int64_t kc, const T* restrict a, int64_t lda, int64_t ka,    \
         const T* restrict b, int64_t ldb, T* restrict c, int64_t ldc, int64_t nr, int add,   \
         T* restrict pack) {                                                                  \
    vec_##T acc[MR][NV];                                                                      \
    for (int i = 0; i < rows; i++)                                                            \
        for (int j = 0; j < NV; j++) acc[i][j] = (vec_##T){0};                                \
    for (int64_t p = 0; p < kc; p++) {                                                        \
        vec_##T bv[NV];                                                                       \
        for (int j = 0; j < nv; j++) memcpy(&bv[j], b + p * ldb + j * W_##T, VBYTES);         \
        if (pack)                                                                             \
            for (int j = 0; j < NV; j++) memcpy(pack + p * NR_##T##_##S + j * W_##T, &bv[j], VBYTES); \
        for (int i = 0; i < rows; i++) {                                                      \
            T av = a[i * lda + p * ka];                                                       \
            for (int j = 0; j < nv; j++) acc[i][j] += av * bv[j];                             \
        }                                                                                     \
    }                                                                                         \
    if (nr == NR_##T##_##S) {                                                                 \
        for (int i = 0; i < rows; i++)                                                        \
            for (int j = 0; j < NV; j++) {                                                    \
                T* row = c + i * ldc + j * W_##T;                                             \
                if (add) {                                                                    \
                    vec_##T old;                                                              \
                    memcpy(&old, row, VBYTES);                                                \
                    acc[i][j] += old;                                                         \
                }                                                                             \
                memcpy(row, &acc[i][j], VBYTES);                                              \
            }                                                                                 \
        return;                                                                               \
    }                                                                                         \
    T tile[MR][NR_##T##_##S];                                                                 \
    memcpy(tile, acc, sizeof tile);                                                           \
    for (int64_t i = 0; i < rows; i++)                                                        \
        for (int64_t j = 0; j < nr; j++) {                                                    \
            T* at = c + i * ldc + j;                                                          \
            *at = add ? *at + tile[i][j] : tile[i][j];                                        \
        }                                                                                     \
}                                                                                             \
                                                                                              \
/* tile_T specialized on the row count, on whether it packs b as it goes, and on a strip of   \
 * at most one vector (nv 1: half the multiply-adds of a narrow product's; [64, 256] @        \
 * [256, 10] took 8.6 us at NV vectors, 6.5 at one, 1 thread, AVX-512) */                     \
static void micro_##T##_##S(int64_t mr, int64_t kc, const T* a, int64_t lda, int64_t ka,      \
                      const T* b, int64_t ldb, T* c, int64_t ldc, int64_t nr, int add,        \
                      T* pack) {                                                              \
    if (nr <= W_##T) {                                                                        \
        BY_ROWS(tile_##T##_##S, mr, MR, 1, kc, a, lda, ka, b, ldb, c, ldc, nr, add, NULL)     \
    } else if (pack) {                                                                        \
        BY_ROWS(tile_##T##_##S, mr, MR, NV, kc, a, lda, ka, b, ldb, c, ldc, nr, add, pack)    \
    } else {                                                                                  \
        BY_ROWS(tile_##T##_##S, mr, MR, NV, kc, a, lda, ka, b, ldb, c, ldc, nr, add, NULL)    \
    }                                                                                         \
}                                                                                             \
                                                                                              \
/* b's strip of NR columns from j0, steps pc.. pc + kc, k-major and zero-padded, into dst */  \
static void pack_b_##T##_##S(const T* b, int64_t brs, int64_t bcs, int64_t n, int64_t j0,     \
                       int64_t pc, int64_t kc, T* restrict dst) {                             \
    int64_t nr = n - j0 < NR_##T##_##S ? n - j0 : NR_##T##_##S;                               \
    if (bcs == 1) {                                                                           \
        for (int64_t p = 0; p < kc; p++) {                                                    \
            memcpy(dst + p * NR_##T##_##S, b + (pc + p) * brs + j0, nr * sizeof(T));          \
            memset(dst + p * NR_##T##_##S + nr, 0, (NR_##T##_##S - nr) * sizeof(T));          \
        }                                                                                     \
        return;                                                                               \
    }                                                                                         \
    for (int64_t j = 0; j < NR_##T##_##S; j++) {                                              \
        const T* col = b + pc * brs + (j0 + j) * bcs;                                         \
        for (int64_t p = 0; p < kc; p++) dst[p * NR_##T##_##S + j] = j < nr ? col[p * brs] : 0; \
    }                                                                                         \
}                                                                                             \
                                                                                              \
/* a's strip of mr rows from i0, steps pc.. pc + kc, k-major (MR a step), into dst */         \
static void pack_a_##T##_##S(const T* a, int64_t ars, int64_t acs, int64_t mr, int64_t i0,    \
                       int64_t pc, int64_t kc, T* restrict dst) {                             \
    const T* at = a + i0 * ars + pc * acs;                                                    \
    if (ars == 1 && mr == MR) {                                                               \
        for (int64_t p = 0; p < kc; p++)                                                      \
            for (int i = 0; i < MR; i++) dst[p * MR + i] = at[p * acs + i];                   \
        return;                                                                               \
    }                                                                                         \
    for (int64_t i = 0; i < mr; i++)                                                          \
        for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = at[i * ars + p * acs];             \
}                                                                                             \
                                                                                              \
/* a's strips s0.. s1 of MR rows (the last may have fewer), steps pc.. pc + kc, each k-major  \
 * at dst + s * MR * kcmax (pack_a_T); a column-major a (ars == 1) is read a step at a time   \
 * across PACK_GROUP full strips, along its contiguous columns */                             \
static void pack_a_strips_##T##_##S(const T* a, int64_t ars, int64_t acs, int64_t m, int64_t s0, \
                              int64_t s1, int64_t pc, int64_t kc, int64_t kcmax,              \
                              T* restrict dst) {                                              \
    if (ars == 1) {                                                                           \
        int64_t full = m / MR < s1 ? m / MR : s1;                                             \
        for (int64_t g = s0; g < full; g += PACK_GROUP) {                                     \
            int64_t g1 = full - g < PACK_GROUP ? full : g + PACK_GROUP;                       \
            for (int64_t p = 0; p < kc; p++) {                                                \
                const T* step = a + (pc + p) * acs;                                           \
                for (int64_t s = g; s < g1; s++)                                              \
                    memcpy(dst + s * MR * kcmax + p * MR, step + s * MR, MR * sizeof(T));     \
            }                                                                                 \
        }                                                                                     \
        s0 = full > s0 ? full : s0;                                                           \
    }                                                                                         \
    for (int64_t s = s0; s < s1; s++) {                                                       \
        int64_t i0 = s * MR;                                                                  \
        pack_a_##T##_##S(a, ars, acs, m - i0 < MR ? m - i0 : MR, i0, pc, kc, dst + s * MR * kcmax); \
    }                                                                                         \
}                                                                                             \
                                                                                              \
static int gemm_##T##_##S(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs, \
                    const T* b, int64_t brs, int64_t bcs, T* c, int64_t ldc) {                \
    const int64_t nr_full = NR_##T##_##S;                                                     \
    int64_t nstrips = (n + nr_full - 1) / nr_full, mstrips = (m + MR - 1) / MR;               \
    int64_t kcmax = k < KC ? k : KC;                                                          \
    int pack_a = acs != 1;                                                                    \
    T* ap = pack_a ? aligned_alloc(64, (size_t)(mstrips * MR * kcmax * sizeof(T) + 64) / 64 * 64) \
                   : NULL;                                                                    \
    if (pack_a && ap == NULL)                                                                 \
        return 1;                                                                             \
    int threaded = gemm_threaded(m, n, k), by_rows = m > n;                                   \
    _Pragma("omp parallel if (threaded)")                                                     \
    {                                                                                         \
        int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();                         \
        /* this thread's share of the strips of rows (it packs them; it runs them by rows,    \
         * every strip by columns) and of the strips of columns (all by rows) */              \
        int64_t s0 = mstrips * t / nt, s1 = mstrips * (t + 1) / nt;                           \
        int64_t r0 = by_rows ? s0 : 0, r1 = by_rows ? s1 : mstrips;                           \
        int64_t c0 = by_rows ? 0 : nstrips * t / nt, c1 = by_rows ? nstrips : nstrips * (t + 1) / nt; \
        T bs[KC * NR_##T##_##S] __attribute__((aligned(64)));                                 \
        for (int64_t pc = 0; pc < k; pc += KC) {                                              \
            int64_t kc = k - pc < KC ? k - pc : KC;                                           \
            if (pack_a) {                                                                     \
                pack_a_strips_##T##_##S(a, ars, acs, m, s0, s1, pc, kc, kcmax, ap);           \
                if (!by_rows) { _Pragma("omp barrier") }                                      \
            }                                                                                 \
            for (int64_t js = c0; js < c1; js++) {                                            \
                int64_t j0 = js * nr_full, nr = n - j0 < nr_full ? n - j0 : nr_full;          \
                /* a whole strip of row-contiguous b is packed by its first tile as it reads  \
                 * it (the copy hides behind that tile's multiply-adds), others beforehand */ \
                int in_first = bcs == 1 && nr == nr_full && r1 > r0 && r1 - r0 <= FEW_STRIPS; \
                if (!in_first)                                                                \
                    pack_b_##T##_##S(b, brs, bcs, n, j0, pc, kc, bs);                         \
                for (int64_t s = r0; s < r1; s++) {                                           \
                    int64_t i0 = s * MR, mr = m - i0 < MR ? m - i0 : MR;                      \
                    T* tile = c + i0 * ldc + j0;                                              \
                    int packing = in_first && s == r0;                                        \
                    const T* bp = packing ? b + pc * brs + j0 : bs;                           \
                    int64_t ldb = packing ? brs : nr_full;                                    \
                    T* pack = packing ? bs : NULL;                                            \
                    if (pack_a)                                                               \
                        micro_##T##_##S(mr, kc, ap + s * MR * kcmax, 1, MR, bp, ldb, tile, ldc, nr, pc > 0, pack); \
                    else                                                                      \
                        micro_##T##_##S(mr, kc, a + i0 * ars + pc, ars, 1, bp, ldb, tile, ldc, nr, pc > 0, pack); \
                }                                                                             \
            }                                                                                 \
            if (pack_a && !by_rows) { _Pragma("omp barrier") } /* the next block repacks a */ \
        }                                                                                     \
    }                                                                                         \
    free(ap);                                                                                 \
    return 0;                                                                                 \
}                                                                                             \
                                                                                              \

#define DEFINE_GEMM(T)                                                                        \
typedef T vec_##T __attribute__((vector_size(VBYTES)));                                       \
enum { W_##T = VBYTES / sizeof(T) };                                                          \
DEFINE_SHAPE(T, wide, WIDE_MR, WIDE_NV)                                                       \
DEFINE_SHAPE(T, narrow, NARROW_MR, NARROW_NV)                                                 \
                                                                                              \
/* c = a @ b by the wide shape from WIDE_COLUMNS columns where a's rows and b's rows are      \
 * contiguous (read in place; packed, the narrow shape kept up), else the narrow one */       \
static int gemm_##T(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs,    \
                    const T* b, int64_t brs, int64_t bcs, T* c, int64_t ldc) {                \
    int wide = n >= WIDE_COLUMNS && acs == 1 && bcs == 1;                                     \
    return (wide ? gemm_##T##_wide : gemm_##T##_narrow)(                                      \
        m, n, k, a, ars, acs, b, brs, bcs, c, ldc);                                           \
}                                                                                             \
                                                                                              \
/* c = a @ b as dot products of a's rows with b's columns, both contiguous along k, in        \
 * blocks of DOT_KC steps (a's block stays in cache while b's columns stream once), DOT_COLS  \
 * columns of b at a time (each load of a feeds DOT_COLS products); column groups on OpenMP   \
 * threads from GEMM_THREAD_WORK multiply-adds */                                             \
static void dots_##T(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, const T* b,    \
                     int64_t bcs, T* c, int64_t ldc) {                                        \
    int threaded = gemm_threaded(m, n, k);                                                    \
    int64_t groups = (n + DOT_COLS - 1) / DOT_COLS;                                           \
    for (int64_t pc = 0; pc < k; pc += DOT_KC) {                                              \
        int64_t kc = k - pc < DOT_KC ? k - pc : DOT_KC, kv = kc / (2 * W_##T) * (2 * W_##T);  \
        _Pragma("omp parallel for schedule(static) if (threaded)")                            \
        for (int64_t g = 0; g < groups; g++) {                                                \
            int64_t j0 = g * DOT_COLS, nc = n - j0 < DOT_COLS ? n - j0 : DOT_COLS;            \
            const T* col[DOT_COLS];                                                           \
            for (int q = 0; q < DOT_COLS; q++) /* past n: the last column again, unused */    \
                col[q] = b + (j0 + (q < nc ? q : nc - 1)) * bcs + pc;                         \
            for (int64_t i = 0; i < m; i++) {                                                 \
                const T* row = a + i * ars + pc;                                              \
                vec_##T acc[DOT_COLS][2];                                                     \
                for (int q = 0; q < DOT_COLS; q++) acc[q][0] = acc[q][1] = (vec_##T){0};      \
                for (int64_t p = 0; p < kv; p += 2 * W_##T)                                   \
                    for (int u = 0; u < 2; u++) {                                             \
                        vec_##T x;                                                            \
                        memcpy(&x, row + p + u * W_##T, VBYTES);                              \
                        for (int q = 0; q < DOT_COLS; q++) {                                  \
                            vec_##T y;                                                        \
                            memcpy(&y, col[q] + p + u * W_##T, VBYTES);                       \
                            acc[q][u] += x * y;                                               \
                        }                                                                     \
                    }                                                                         \
                for (int64_t q = 0; q < nc; q++) {                                            \
                    vec_##T total = acc[q][0] + acc[q][1];                                    \
                    T sum = 0;                                                                \
                    for (int l = 0; l < W_##T; l++) sum += total[l];                          \
                    for (int64_t p = kv; p < kc; p++) sum += row[p] * col[q][p];              \
                    T* at = c + i * ldc + j0 + q;                                             \
                    *at = pc > 0 ? *at + sum : sum;                                           \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
}                                                                                             \
                                                                                              \
/* c[j, i] = t[i, j] for t [rows, cols] row-major into c (row stride ldc), in square blocks   \
 * (both sides stay in cache), on OpenMP threads where `threaded` */                          \
static void transpose_##T(const T* restrict t, int64_t rows, int64_t cols, T* restrict c,     \
                          int64_t ldc, int threaded) {                                        \
    _Pragma("omp parallel for schedule(static) if (threaded)")                                \
    for (int64_t j0 = 0; j0 < cols; j0 += TRANSPOSE_BLOCK)                                    \
        for (int64_t i0 = 0; i0 < rows; i0 += TRANSPOSE_BLOCK) {                              \
            int64_t j1 = cols - j0 < TRANSPOSE_BLOCK ? cols : j0 + TRANSPOSE_BLOCK;           \
            int64_t i1 = rows - i0 < TRANSPOSE_BLOCK ? rows : i0 + TRANSPOSE_BLOCK;           \
            for (int64_t j = j0; j < j1; j++)                                                 \
                for (int64_t i = i0; i < i1; i++) c[j * ldc + i] = t[i * cols + j];           \
        }                                                                                     \
}                                                                                             \
                                                                                              \
/* c = a @ b; returns 1 where a's packing buffer or the scratch of a transposed product       \
 * cannot be allocated, else 0 */                                                             \
int bc_gemm_##T(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs,        \
                const T* b, int64_t brs, int64_t bcs, T* c, int64_t ldc) {                    \
    if (acs == 1 && brs == 1 && m * n <= DOT_OUTPUTS && k >= DOT_DEPTH) {                     \
        dots_##T(m, n, k, a, ars, b, bcs, c, ldc);                                            \
        return 0;                                                                             \
    }                                                                                         \
    if (bcs != 1 && brs == 1 && acs == 1 && m < n && k >= TRANSPOSE_DEPTH) {                  \
        /* c^T = b^T a^T into a row-major scratch [n, m], then transposed into c */           \
        T* ct = aligned_alloc(64, ((size_t)m * n * sizeof(T) + 63) / 64 * 64);                \
        if (ct == NULL)                                                                       \
            return 1;                                                                         \
        int status = gemm_##T(n, m, k, b, bcs, brs, a, acs, ars, ct, m);                      \
        if (status == 0)                                                                      \
            transpose_##T(ct, n, m, c, ldc, gemm_threaded(m, n, k));                          \
        free(ct);                                                                             \
        return status;                                                                        \
    }                                                                                         \
    return gemm_##T(m, n, k, a, ars, acs, b, brs, bcs, c, ldc);                               \
}                                                                                             \
                                                                                              \
/* c + i * m * ldc = (a + aoff[i]) @ (b + boff[i]) for i < batch (element offsets, one layout \
 * for every matrix of a and one for b): products below GEMM_THREAD_WORK multiply-adds on     \
 * OpenMP threads across the batch (from GEMM_THREAD_WORK in all), larger ones one after      \
 * another, each on the threads; returns bc_gemm_T's status (1 where a buffer failed) */      \
int bc_gemm_batched_##T(int64_t batch, const int64_t* aoff, const int64_t* boff, int64_t m,   \
                        int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs,           \
                        const T* b, int64_t brs, int64_t bcs, T* c, int64_t ldc) {            \
    double work = (double)m * n * k;                                                          \
    int status = 0;                                                                           \
    if (work < GEMM_THREAD_WORK && work * batch >= GEMM_THREAD_WORK) {                        \
        _Pragma("omp parallel for schedule(static) reduction(|: status)")                     \
        for (int64_t i = 0; i < batch; i++)                                                   \
            status |= bc_gemm_##T(m, n, k, a + aoff[i], ars, acs, b + boff[i], brs, bcs,      \
                                  c + i * m * ldc, ldc);                                      \
        return status;                                                                        \
    }                                                                                         \
    /* (not one loop under `if (across)`: nested in that inactive region, each product's own  \
     * region took 7-10% longer, 4 x [512, 512] @ [512, 512] at 2 threads) */                 \
    for (int64_t i = 0; i < batch && status == 0; i++)                                        \
        status = bc_gemm_##T(m, n, k, a + aoff[i], ars, acs, b + boff[i], brs, bcs,           \
                             c + i * m * ldc, ldc);                                           \
    return status;                                                                            \
}

DEFINE_GEMM(float)
DEFINE_GEMM(double)
