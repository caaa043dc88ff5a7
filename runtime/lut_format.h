/*
 * The LUT file format, shared by its writer (lut_export.c) and its reader
 * (lut_import.c), and by the build stamp (lut.c).  Internal to runtime/.
 *
 * Format (text, version 1), one entry per line, then a checksum line:
 *
 *   voltgate-lut 1
 *   entry arch=70 policy=<16 hex> family=fp8 path=grouped n=1024 k=4096 groups=8 rows=3 plan=<id> us=12.345
 *   ...
 *   checksum fnv1a64=<16 hex>
 *
 * arch is the device arch (0 = cpu).  rows is the shape bucket
 * (vg_tune_bucket_rows of dense M, else of the rows per group: the rows
 * themselves inside the exact limits, a power of two above).  us is the median time the plan won with.  The
 * checksum is FNV-1a 64 over every byte before the checksum line.  Entries
 * are sorted, so the same cache always gives the same bytes.
 *
 * Version 2 (written now) adds build=<16 hex> planset=<16 hex> at the end
 * of each entry: the stamps of the kernel build and plan table that
 * measured it.
 */
#ifndef VOLTGATE_RUNTIME_LUT_FORMAT_H
#define VOLTGATE_RUNTIME_LUT_FORMAT_H

#include <stdint.h>

#define LUT_MAGIC "voltgate-lut"
#define LUT_VERSION 2          /* written; 1 is still read */
#define LUT_VERSION_OLDEST 1

/* Stamp of a version-1 entry, which says nothing about its build. */
#define LUT_UNSTAMPED UINT64_MAX

#endif
