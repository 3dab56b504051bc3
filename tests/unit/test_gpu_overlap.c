/* detectors/gpu_overlap.c: correlation, interval arithmetic and the GPU-side
 * interference verdict, on synthetic CUPTI-like records (the fake driver
 * cannot emulate CUPTI). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "detectors/gpu_overlap.h"

static struct tg_gpu_corr corr; /* 1.5 MB: static */

#define US 1000ull

static struct tg_gpu_kernel K(uint64_t s, uint64_t e, uint64_t launch, pid_t tid, int dev, uint32_t stream,
                              const char *name)
{
    struct tg_gpu_kernel k = {.start = s * US, .end = e * US, .launch = launch * US, .tid = tid, .dev = dev,
                              .stream = stream, .name = name};
    return k;
}

Test(gpu_overlap, merge_and_intersect)
{
    struct tg_gpu_ival a[] = {{50, 60}, {0, 10}, {5, 20}, {20, 25}, {30, 30}};
    size_t n = tg_gpu_merge(a, 5);
    cr_assert_eq(n, 2);
    cr_assert_eq(a[0].lo, 0);
    cr_assert_eq(a[0].hi, 25);
    cr_assert_eq(a[1].lo, 50);
    struct tg_gpu_ival b[] = {{10, 55}, {58, 100}};
    cr_assert_eq(tg_gpu_intersect(a, n, b, 2), 15 + 5 + 2);
    cr_assert_eq(tg_gpu_intersect(a, n, b, 0), 0);
}

Test(gpu_overlap, correlation_table)
{
    memset(&corr, 0, sizeof corr);
    tg_gpu_corr_enter(&corr, 7, 1234, 100);
    tg_gpu_corr_exit(&corr, 7, 140);
    struct tg_gpu_kernel k = {.corr = 7, .name = "k"};
    cr_assert_eq(tg_gpu_correlate(&corr, &k), 1);
    cr_assert_eq(k.tid, 1234);
    cr_assert_eq(k.launch, 100);
    cr_assert_eq(k.launch_end, 140);
    /* id 7 + SLOTS reuses the slot: id 7 is gone, the newer one is found */
    tg_gpu_corr_enter(&corr, 7 + TG_GPU_CORR_SLOTS, 99, 500);
    struct tg_gpu_kernel k2 = {.corr = 7, .name = "k"};
    cr_assert_eq(tg_gpu_correlate(&corr, &k2), 0);
    cr_assert_eq(k2.tid, 0);
    /* a late exit for the old id does not touch the new entry */
    tg_gpu_corr_exit(&corr, 7, 999);
    pid_t tid;
    uint64_t a, b;
    cr_assert_eq(tg_gpu_corr_get(&corr, 7 + TG_GPU_CORR_SLOTS, &tid, &a, &b), 1);
    cr_assert_eq(tid, 99);
    cr_assert_eq(b, 0);
    cr_assert_eq(tg_gpu_corr_get(&corr, 0, &tid, &a, &b), 0);
}

/* A quiet benchmark: only own kernels (and Triton's L2 flush) on the device,
 * foreign work on another device. */
Test(gpu_overlap, quiet_benchmark_not_skewed)
{
    struct tg_gpu_kernel k[] = {
        K(100, 110, 90, 10, 0, 7, "zero_"),  K(111, 130, 92, 10, 0, 7, "matmul"),
        K(131, 140, 94, 10, 0, 7, "zero_"),  K(141, 160, 96, 10, 0, 7, "matmul"),
        K(100, 200, 80, 20, 1, 9, "hammer"), /* other device */
    };
    struct tg_gpu_ival scratch[10];
    struct tg_gpu_window w = {.tid = 10, .dev = 0, .t0 = 50 * US, .t1 = 300 * US};
    struct tg_gpu_verdict v;
    cr_assert_eq(tg_gpu_verdict(k, 5, &w, scratch, &v), 0);
    cr_assert_eq(v.own_kernels, 4);
    cr_assert_eq(v.skewed, 0);
    cr_assert_eq(v.overlap_ns, 0);
    cr_assert_eq(v.nby, 0);
    /* spans: [90,110] then queued behind the predecessor: [110,130], [130,140], [140,160] */
    cr_assert_eq(v.timed_ns, 70 * US);
}

/* Launched by others but executed outside the timed spans: not skewed (the
 * launch-count detector would have reported it). */
Test(gpu_overlap, foreign_outside_spans_not_skewed)
{
    struct tg_gpu_kernel k[] = {
        K(100, 110, 95, 10, 0, 7, "matmul"),
        K(200, 210, 195, 10, 0, 7, "matmul"),
        K(120, 150, 118, 20, 0, 9, "hammer"), /* in the gap: own kernel 2 launched at 195 */
        K(300, 400, 250, 20, 0, 9, "hammer"), /* after */
    };
    struct tg_gpu_ival scratch[8];
    struct tg_gpu_window w = {.tid = 10, .dev = 0, .t0 = 0, .t1 = 1000 * US};
    struct tg_gpu_verdict v;
    cr_assert_eq(tg_gpu_verdict(k, 4, &w, scratch, &v), 0);
    cr_assert_eq(v.own_kernels, 2);
    cr_assert_eq(v.skewed, 0);
    cr_assert_eq(v.foreign_kernels, 0);
}

/* Foreign kernels concurrent with, and delaying, own kernels: skewed, the
 * overlap counted once where foreign kernels overlap each other. */
Test(gpu_overlap, concurrent_and_delaying_foreign_skewed)
{
    struct tg_gpu_kernel k[] = {
        K(100, 120, 100, 10, 0, 7, "matmul"),  /* span [100,120] */
        K(150, 170, 125, 10, 0, 7, "matmul"),  /* queued at 125 behind the hammer: span [125,170] */
        K(110, 118, 105, 20, 0, 9, "hammer"),  /* concurrent: 8 us */
        K(115, 119, 106, 21, 0, 11, "hammer"), /* overlaps the previous one: +1 us of union */
        K(121, 150, 119, 20, 0, 9, "hammer"),  /* delays own kernel 2: [125,150] = 25 us */
        K(500, 600, 490, 0, 0, 3, "unknown"),  /* after the benchmark: ignored */
    };
    struct tg_gpu_ival scratch[12];
    struct tg_gpu_window w = {.tid = 10, .dev = 0, .t0 = 90 * US, .t1 = 200 * US};
    struct tg_gpu_verdict v;
    cr_assert_eq(tg_gpu_verdict(k, 6, &w, scratch, &v), 0);
    cr_assert_eq(v.own_kernels, 2);
    cr_assert_eq(v.skewed, 1);
    cr_assert_eq(v.foreign_kernels, 3);
    cr_assert_eq(v.timed_ns, (20 + 45) * US);
    cr_assert_eq(v.overlap_ns, (9 + 25) * US, "overlap %llu", (unsigned long long)v.overlap_ns);
    cr_assert_eq(v.nby, 2);
    /* tid 20 on stream 9: 8 + 25 us, first */
    cr_assert_eq(v.by[0].tid, 20);
    cr_assert_eq(v.by[0].count, 2);
    cr_assert_eq(v.by[0].overlap_ns, 33 * US);
    cr_assert_str_eq(v.by[0].name, "hammer");
    cr_assert_eq(v.by[1].tid, 21);
    cr_assert_eq(v.by[1].overlap_ns, 4 * US);
}

/* Own kernels launched outside the window, or none at all: no GPU evidence. */
Test(gpu_overlap, no_own_kernels)
{
    struct tg_gpu_kernel k[] = {
        K(100, 120, 10, 10, 0, 7, "matmul"), /* launched before the window */
        K(100, 130, 95, 20, 0, 9, "hammer"),
    };
    struct tg_gpu_ival scratch[4];
    struct tg_gpu_window w = {.tid = 10, .dev = 0, .t0 = 50 * US, .t1 = 200 * US};
    struct tg_gpu_verdict v;
    cr_assert_eq(tg_gpu_verdict(k, 2, &w, scratch, &v), -1);
    cr_assert_eq(v.own_kernels, 0);
    cr_assert_eq(tg_gpu_verdict(k, 0, &w, scratch, &v), -1);
}

/* The thread's own kernels before the window are neither own nor foreign;
 * a kernel without a known launcher (tid 0) counts as foreign. */
Test(gpu_overlap, own_outside_window_and_unknown_launcher)
{
    struct tg_gpu_kernel k[] = {
        K(100, 200, 100, 10, 0, 7, "matmul"),
        K(150, 160, 20, 10, 0, 7, "old_own"),
        K(170, 180, 0, 0, 0, 5, "graph_node"),
    };
    struct tg_gpu_ival scratch[6];
    struct tg_gpu_window w = {.tid = 10, .dev = 0, .t0 = 50 * US, .t1 = 300 * US};
    struct tg_gpu_verdict v;
    cr_assert_eq(tg_gpu_verdict(k, 3, &w, scratch, &v), 0);
    cr_assert_eq(v.own_kernels, 1);
    cr_assert_eq(v.overlap_ns, 10 * US);
    cr_assert_eq(v.nby, 1);
    cr_assert_str_eq(v.by[0].name, "graph_node");
    cr_assert_eq(v.by[0].tid, 0);
}

/* More than TG_GPU_MAX_BY distinct foreign kernels: the biggest are kept. */
Test(gpu_overlap, by_keeps_biggest)
{
    static const char *names[12] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
    struct tg_gpu_kernel k[13];
    k[0] = K(0, 1000, 1, 10, 0, 7, "matmul"); /* launch 0 would mean "unknown" */
    for (int i = 0; i < 12; i++)
        k[1 + i] = K(20 * (uint64_t)i, 20 * (uint64_t)i + 1 + (uint64_t)i, 1, 20, 0, 9, names[i]);
    struct tg_gpu_ival scratch[26];
    struct tg_gpu_window w = {.tid = 10, .dev = 0, .t0 = 0, .t1 = 10 * US};
    struct tg_gpu_verdict v;
    cr_assert_eq(tg_gpu_verdict(k, 13, &w, scratch, &v), 0);
    cr_assert_eq(v.foreign_kernels, 12);
    cr_assert_eq(v.nby, TG_GPU_MAX_BY);
    cr_assert_str_eq(v.by[0].name, "l");
    cr_assert_str_eq(v.by[7].name, "e");
    uint64_t sum = 0;
    for (int i = 0; i < 12; i++)
        sum += (uint64_t)(1 + i) * US;
    cr_assert_eq(v.overlap_ns, sum);
}
