/* bench/peak_util.h - the measured one-core FMA peak (peak_util.c). */
#ifndef KILN_BENCH_PEAK_UTIL_H
#define KILN_BENCH_PEAK_UTIL_H

/* GFLOP/s of float32 FMAs on one core; 0 if it cannot be measured. */
double bench_measure_peak(void);

#endif
