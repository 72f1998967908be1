/*
 * bolt_reduce.h: the reduction kernels collectives apply to data: one
 * function per datatype and operation, destination = left op right,
 * element by element.
 */
#ifndef BOLT_REDUCE_H
#define BOLT_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_ext_bolt.h>

/*
 * destination[i] = left[i] op right[i] for count elements. destination may be
 * left or right itself (in place), but must not overlap them otherwise.
 */
typedef void (*bolt_reduce_function)(void *destination, const void *left, const void *right,
				     size_t count);

/* The kernel for datatype and op; NULL when bolt does not reduce that pair. */
bolt_reduce_function bolt_reduce_lookup(enum fi_datatype datatype, enum fi_op op);
/* Bytes of one element of datatype; 0 for a datatype bolt does not know. */
size_t bolt_reduce_datatype_size(enum fi_datatype datatype);

/* IEEE binary16 and bfloat16 from and to float32, rounding to nearest even. */
float bolt_float16_to_float(uint16_t half);
uint16_t bolt_float_to_float16(float value);
float bolt_bfloat16_to_float(uint16_t bfloat);
uint16_t bolt_float_to_bfloat16(float value);

#endif /* BOLT_REDUCE_H */
