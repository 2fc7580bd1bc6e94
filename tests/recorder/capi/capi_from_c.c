/*
 * Role: see capi_from_c.h. Compiled as C11 with the C warning set, in the
 * capi_c_test_helpers library that unit_tests links.
 */
#include "tests/recorder/capi/capi_from_c.h"

tracecorn_status capi_test_create_with_raw_enums(uc_engine* engine, int level, int policy, char* error,
                                                 size_t error_size) {
  tracecorn_options options;
  tracecorn_recorder* recorder = NULL;
  tracecorn_status status;
  tracecorn_options_init(&options);
  options.arch = "x86_64";
  options.level = (tracecorn_level)level;
  options.policy = (tracecorn_policy)policy;
  status = tracecorn_recorder_create(engine, &options, &recorder, error, error_size);
  tracecorn_recorder_destroy(recorder);
  return status;
}
