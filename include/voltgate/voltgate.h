/*
 * voltgate — quantized-weight GEMM kernels for Volta-class GPUs and later,
 * the tuning runtime that picks a plan per shape, and the golden-data
 * harness.  One include for the whole public API.
 */
#ifndef VOLTGATE_H
#define VOLTGATE_H

#include "voltgate/status.h"
#include "voltgate/types.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"
#include "voltgate/runtime.h"
#include "voltgate/golden.h"

#endif
