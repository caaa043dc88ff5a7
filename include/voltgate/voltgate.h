/*
 * voltgate — quantized-weight GEMM kernels for Volta-class GPUs and later,
 * and the tuning runtime that picks a plan per shape.  One include for the
 * whole public API of libvoltgate, the library a serving engine links.
 * The golden-data harness (voltgate/golden.h) is not part of it: it lives in
 * libvoltgate_harness.a (HDF5), and its users include it themselves.
 */
#ifndef VOLTGATE_H
#define VOLTGATE_H

#include "voltgate/status.h"
#include "voltgate/types.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"
#include "voltgate/runtime.h"

#endif
