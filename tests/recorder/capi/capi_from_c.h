/*
 * Role: helpers of tracecorn_capi_test.cpp written in C (capi_from_c.c), for
 * what only C can do without undefined behaviour: store any int in an enum
 * field of tracecorn_options, as a C caller may.
 */
#ifndef TRACECORN_TESTS_RECORDER_CAPI_CAPI_FROM_C_H
#define TRACECORN_TESTS_RECORDER_CAPI_CAPI_FROM_C_H

#include <stddef.h>

#include "recorder/capi/tracecorn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates an x86_64 recorder on `engine` with options.level = `level` and
   options.policy = `policy` as raw ints; destroys it if created. Returns the
   creation status; the message goes to `error`. */
tracecorn_status capi_test_create_with_raw_enums(uc_engine* engine, int level, int policy, char* error,
                                                 size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* TRACECORN_TESTS_RECORDER_CAPI_CAPI_FROM_C_H */
