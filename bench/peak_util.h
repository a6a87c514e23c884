/* bench/peak_util.h - the measured FMA peak of one core and of N (peak_util.c). */
#ifndef KILN_BENCH_PEAK_UTIL_H
#define KILN_BENCH_PEAK_UTIL_H

/* GFLOP/s of float32 FMAs on one core; 0 if it cannot be measured. */
double bench_measure_peak(void);
/* GFLOP/s of float32 FMAs on `threads` threads running at once (the
 * slowest thread's time); 0 if it cannot be measured. */
double bench_measure_peak_threads(int threads);

/* GFLOP/s of AVX512-BF16 VDPBF16PS on one core (2 FLOPs per bfloat16
 * product, 32 products per instruction); 0 where the CPU or the compiler
 * lacks AVX512-BF16. */
double bench_measure_peak_bf16(void);

/* GOP/s of AVX512-VNNI's VPDPBUSD on one core (2 ops per uint8 x int8
 * product, 64 products per instruction); 0 where the CPU or the compiler
 * lacks AVX512-VNNI. */
double bench_measure_peak_vnni(void);

#endif
