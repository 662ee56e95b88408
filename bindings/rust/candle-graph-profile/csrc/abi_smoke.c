/* Drives the C ABI from C (compiled -std=c99 -Wpedantic -Werror by build.rs) so the header is
 * proven to be C. Called from the crate's tests; returns 0 when every step behaved. */
#include <string.h>

#include "candle_graph_profile.h"

static cgp_str s(const char* text) {
  cgp_str out;
  out.ptr = text;
  out.len = strlen(text);
  return out;
}

int cgp_test_c_abi_smoke(const char* path);

int cgp_test_c_abi_smoke(const char* path) {
  cgp_config config;
  cgp_session* session = NULL;
  cgp_op op = 0;
  cgp_str inputs[1];
  char id[CGP_EVENT_ID_MAX];
  size_t id_len = 0;
  uint64_t duration = 0;

  cgp_config_init(&config, s("c::main"), CGP_PHASE_INFER);
  config.format = CGP_FORMAT_RUNTIME_V3;
  if (cgp_session_open(s(path), &config, &session) != CGP_OK) return 1;
  if (cgp_session_phase(session) != CGP_PHASE_INFER) return 2;
  inputs[0] = s("tensor:x");
  if (cgp_session_op(session, s("operation:infer:c:0"), s("matmul"), inputs, 1, &op) != CGP_OK)
    return 3;
  cgp_op_begin(session, op);
  cgp_op_end(session, op);
  cgp_session_set_step(session, 2);
  if (cgp_begin_operation(session, s("operation:infer:c:1"), s("add"), NULL, 0, id, sizeof id,
                          &id_len) != CGP_OK)
    return 4;
  if (strcmp(id, "infer-op-2-2") != 0 || id_len != 12) return 5;
  if (cgp_end_operation(session, s(id), NULL, &duration) != CGP_OK) return 6;
  if (cgp_end_operation(session, s(id), NULL, &duration) != CGP_ERR_UNKNOWN_OPERATION) return 7;
  if (strcmp(cgp_last_error(), "unknown profile operation `infer-op-2-2`") != 0) return 8;
  if (cgp_record_edge_timing(session, s("operation:infer:c:0"), s("operation:infer:c:1"), 9) !=
      CGP_OK)
    return 9;
  /* Module scopes in a runtime/3 session record nothing (token 0) and are not an error. */
  {
    cgp_module_scope scope = 1;
    if (cgp_module_begin(session, s("model.layers.0"), &scope) != CGP_OK || scope != 0) return 11;
    cgp_module_end(session, scope);
  }
  if (cgp_session_close(session) != CGP_OK) return 12;
  if (cgp_session_close(session) != CGP_OK) return 13; /* idempotent */
  if (cgp_session_finish(session) != CGP_OK) return 10;
  return 0;
}
