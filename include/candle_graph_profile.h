/* candle-graph runtime profiler, C ABI.
 *
 * A stable C surface over the C++ library (include/candle_graph/profile.hpp) for other languages;
 * the Rust crate bindings/rust/candle-graph-profile is built on it. Opaque handles, status codes,
 * no C++ types. Strings are (pointer, length) pairs and need not be NUL-terminated, so Rust's
 * &str passes through without a copy. Every function that returns CGP_OK on success leaves a
 * message for cgp_last_error() on failure (per thread). The trace formats are documented in
 * docs/runtime-4.md. */
#ifndef CANDLE_GRAPH_PROFILE_H
#define CANDLE_GRAPH_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cgp_status {
  CGP_OK = 0,
  CGP_ERR_IO = 1,                /* creating, writing or closing the trace failed */
  CGP_ERR_UNKNOWN_OPERATION = 2, /* end of an event id that is not open */
  CGP_ERR_INVALID_ARGUMENT = 3,  /* NULL where a value is required, buffer too small, ... */
  CGP_ERR_FINISHED = 4,          /* the session was already finished */
  CGP_ERR_UNBALANCED = 5         /* a handle was ended on a thread where it is not open */
} cgp_status;

typedef enum cgp_phase { CGP_PHASE_TRAIN = 0, CGP_PHASE_INFER = 1 } cgp_phase;
typedef enum cgp_format {
  CGP_FORMAT_RUNTIME_V4 = 0,
  CGP_FORMAT_RUNTIME_V3 = 1,
  CGP_FORMAT_RUNTIME_V4_COMPACT = 2 /* candle-graph/runtime/4-compact/1 (docs/runtime-4.md) */
} cgp_format;
typedef enum cgp_backpressure {
  CGP_BACKPRESSURE_BLOCK = 0, /* wait for the writer: never lose an event (default) */
  CGP_BACKPRESSURE_DROP = 1   /* discard and count in the end record's `dropped` */
} cgp_backpressure;

typedef struct cgp_str {
  const char* ptr; /* may be NULL when len is 0 */
  size_t len;
} cgp_str;

/* Longest event id the profiler produces ("infer-edge-" + two u64 + '-'), plus a NUL. */
#define CGP_EVENT_ID_MAX 64

typedef struct cgp_config {
  cgp_str entrypoint;
  cgp_phase phase;
  cgp_str profile; /* NULL ptr: "release" */
  const cgp_str* cargo_features;
  size_t cargo_features_len;
  cgp_str analysis_id; /* NULL ptr: absent */
  cgp_str build_id;    /* NULL ptr: absent */
  cgp_format format;
  cgp_backpressure backpressure;
  uint64_t buffer_records_per_thread; /* 0: the default (65,536) */
  /* Optional device synchronisation (CUDA/Metal, where a host timestamp measures only a kernel's
   * launch): when not NULL it is called with device_sync_user before the clock read at every
   * module scope's begin and end, and `meta` ends with "device_sync":true. NULL: module durations
   * are host-side and meta has no such field. */
  void (*device_sync)(void* user);
  void* device_sync_user;
} cgp_config;

/* Options added after cgp_config's layout was fixed (it stays as it is, so programs built against
 * an older header keep working). Size-prefixed: `struct_size` is sizeof(cgp_open_options) as the
 * caller compiled it, and the library reads only the fields that fit in it, so later versions
 * can append fields. Fill it with cgp_open_options_init, then set what you need. */
typedef struct cgp_open_options {
  size_t struct_size;
  /* Distinct (static id, op, inputs), edges and module paths the session interns, at most
   * CGP_MAX_DISTINCT_IDS (also the default; 0 means the default). Past it a new id is refused:
   * cgp_begin_operation, cgp_record_edge_timing and cgp_session_op return
   * CGP_ERR_INVALID_ARGUMENT, a module scope records nothing, and every refusal is counted in the
   * `end` record's `errors` (docs/runtime-4.md, "Bound"). Ids interned before keep working. */
  uint32_t max_distinct_ids;
  /* Tensor statistics schedule (cgp_session_stats_due; docs/runtime-4.md, "Additions: tensor
   * statistics"): every stats_every steps (0: never on schedule), and whenever a tensor holds a
   * non-finite value when stats_on_non_finite is not 0. Since candle-graph-profile 0.3.0. */
  uint64_t stats_every;
  uint32_t stats_on_non_finite;
} cgp_open_options;

/* The largest max_distinct_ids (4,194,304) and its default. */
#define CGP_MAX_DISTINCT_IDS 4194304u

typedef struct cgp_session cgp_session;
/* An interned operation: valid for the session that returned it. */
typedef uint32_t cgp_op;
/* An open module scope (its event counter); 0 is a scope that records nothing. */
typedef uint64_t cgp_module_scope;

/* Fills `config` with the seed's defaults for `entrypoint` and `phase`. */
void cgp_config_init(cgp_config* config, cgp_str entrypoint, cgp_phase phase);

/* Creates parent directories, truncates `path`, writes `meta`. On success *out owns the session;
 * release it with cgp_session_finish or cgp_session_free. */
cgp_status cgp_session_open(cgp_str path, const cgp_config* config, cgp_session** out);

/* Sets struct_size and the defaults (max_distinct_ids = CGP_MAX_DISTINCT_IDS). */
void cgp_open_options_init(cgp_open_options* options);
/* cgp_session_open with options (NULL: the defaults). CGP_ERR_INVALID_ARGUMENT, naming the field,
 * for a struct_size too small to hold `struct_size` itself or a max_distinct_ids above
 * CGP_MAX_DISTINCT_IDS. */
cgp_status cgp_session_open_with(cgp_str path, const cgp_config* config,
                                 const cgp_open_options* options, cgp_session** out);

cgp_phase cgp_session_phase(const cgp_session* session);
uint64_t cgp_session_step(const cgp_session* session);
void cgp_session_set_step(cgp_session* session, uint64_t step);

/* Fast path: intern once, then begin/end from any thread (per-thread nesting like scopes). */
cgp_status cgp_session_op(cgp_session* session, cgp_str static_id, cgp_str op,
                          const cgp_str* inputs, size_t inputs_len, cgp_op* out);
void cgp_op_begin(cgp_session* session, cgp_op op);
void cgp_op_end(cgp_session* session, cgp_op op);

/* Module scopes keyed by VarBuilder path (`vb.prefix()`, e.g. "model.layers.3.self_attn"): one
 * `module` record per closed scope (docs/runtime-4.md, "Additions: module scopes"). The path is
 * interned once per session (cached per thread by address and length, then by content), so
 * begin/end cost a clock read and a store. Scopes nest per thread; end a scope on the thread that
 * began it, innermost first: anything else is a counted error (ending on another thread is also
 * sticky, returned by finish), never a crash. Writes *out = 0 and returns CGP_OK in runtime/3
 * sessions (module scopes are not part of the seed's format); CGP_ERR_FINISHED after finish.
 * cgp_module_end with 0 does nothing. */
cgp_status cgp_module_begin(cgp_session* session, cgp_str path, cgp_module_scope* out);
void cgp_module_end(cgp_session* session, cgp_module_scope scope);
/* A scope for the child `child` of the module at `parent` (`cgp_module_begin` with the path
 * `parent.child`, or `child` when `parent` is empty): times a library layer a module calls
 * (`q_proj` of `model.layers.3.self_attn`) without a path of its own. The pair is joined the first
 * time a thread sees it; afterwards it is found by the addresses and lengths of both strings, so
 * pass the same buffers each time (a module's path field and a string literal). */
cgp_status cgp_module_begin_child(cgp_session* session, cgp_str parent, cgp_str child,
                                  cgp_module_scope* out);

/* Tensor statistics (docs/runtime-4.md, "Additions: tensor statistics"): a few scalars about a
 * module's output or a parameter's gradient that the program computed on the tensor's device.
 * Size-prefixed like cgp_open_options: fill with cgp_tensor_stats_init. */
typedef enum cgp_stats_of { CGP_STATS_OUTPUT = 0, CGP_STATS_GRAD = 1 } cgp_stats_of;
typedef enum cgp_stats_reason {
  CGP_STATS_SAMPLED = 0,   /* the schedule asked for it */
  CGP_STATS_NON_FINITE = 1 /* the tensor held a NaN or +-Inf */
} cgp_stats_reason;
typedef enum cgp_stats_due {
  CGP_STATS_DUE_NONE = 0,            /* compute nothing */
  CGP_STATS_DUE_NON_FINITE_ONLY = 1, /* count non-finite elements; record only when some */
  CGP_STATS_DUE_FULL = 2             /* compute and record everything */
} cgp_stats_due;
typedef struct cgp_tensor_stats {
  size_t struct_size;
  uint32_t of;     /* cgp_stats_of */
  uint32_t reason; /* cgp_stats_reason */
  uint64_t index;  /* which of a module's outputs (0: the only or first) */
  cgp_str dtype;   /* Candle's name, lower case: "f32", "bf16", "u32" */
  const uint64_t* shape;
  size_t rank;
  uint64_t nan, pos_inf, neg_inf, zeros;
  /* Over the finite elements; read only when has_finite is not 0 (some element is finite). */
  uint32_t has_finite;
  double min, max, mean, rms, abs_max;
} cgp_tensor_stats;

void cgp_tensor_stats_init(cgp_tensor_stats* stats);
/* What to compute now: FULL when stats_every > 0 divides the session step, else NON_FINITE_ONLY
 * with stats_on_non_finite, else NONE (also for runtime/3 sessions, after finish, and NULL). */
cgp_stats_due cgp_session_stats_due(const cgp_session* session);
/* One `stats` line for `path` (a module path; for a gradient the parameter's VarBuilder key).
 * CGP_ERR_INVALID_ARGUMENT, naming the field, for an inconsistent record (counted in the end
 * record's `errors`, never written); CGP_OK and nothing written in runtime/3 sessions. */
cgp_status cgp_record_stats(cgp_session* session, cgp_str path, const cgp_tensor_stats* stats);
/* The same for the child `child` of the module at `parent` (path `parent.child`). */
cgp_status cgp_record_child_stats(cgp_session* session, cgp_str parent, cgp_str child,
                                  const cgp_tensor_stats* stats);

/* The seed's string API. The event id is written to id_buf (NUL-terminated; CGP_EVENT_ID_MAX
 * bytes always suffice) and its length to *id_len. Bytes of id_buf past the terminator (within
 * id_buf_len) may be overwritten. */
cgp_status cgp_begin_operation(cgp_session* session, cgp_str static_id, cgp_str op,
                               const cgp_str* inputs, size_t inputs_len, char* id_buf,
                               size_t id_buf_len, size_t* id_len);
/* output: NULL for none. duration_ns may be NULL. */
cgp_status cgp_end_operation(cgp_session* session, cgp_str event_id, const cgp_str* output,
                             uint64_t* duration_ns);
cgp_status cgp_record_edge_timing(cgp_session* session, cgp_str from_static_id,
                                  cgp_str to_static_id, uint64_t duration_ns);

cgp_status cgp_session_flush(cgp_session* session);
/* Drains, writes the end record, closes the file and frees the session (also on error). */
cgp_status cgp_session_finish(cgp_session* session);
/* Finishes the session like cgp_session_finish but does not free it: for sessions that live until
 * the process exits (an atexit hook). Idempotent: later calls return the first call's status (and
 * message). Afterwards scopes and handles record nothing and the string API returns
 * CGP_ERR_FINISHED; free it with cgp_session_free (or never, for a process-lifetime session). */
cgp_status cgp_session_close(cgp_session* session);
/* Frees a session that was not finished, finishing it and ignoring errors. NULL is allowed. */
void cgp_session_free(cgp_session* session);

/* The message of the last failure on the calling thread ("" if none). Valid until the next call
 * into this library on the same thread. */
const char* cgp_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CANDLE_GRAPH_PROFILE_H */
