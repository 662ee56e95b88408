// The C ABI: a thin translation of include/candle_graph_profile.h onto ProfileSession. No
// exception crosses the boundary: allocation failures become CGP_ERR_IO with a message.
#include <cstddef>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "candle_graph/profile.hpp"
#include "candle_graph_profile.h"
#include "profile/session_state.hpp"

struct cgp_session {
  candle_graph::ProfileSession session;
  // cgp_session_close: done once, its status and message kept for later calls.
  std::mutex close_mu;
  bool closed = false;
  cgp_status close_status = CGP_OK;
  std::string close_error;
  // session.state_, kept here so that the string API's hit path reaches it without a call.
  candle_graph::detail::SessionState* state = nullptr;
};

namespace {

namespace cgx = candle_graph;
static_assert(CGP_MAX_DISTINCT_IDS == cgx::kMaxDistinctIds);

thread_local std::string last_error;

std::string_view view(cgp_str s) {
  return s.ptr == nullptr ? std::string_view() : std::string_view(s.ptr, s.len);
}

cgp_status to_c(cgx::Errc code) {
  switch (code) {
    case cgx::Errc::ok:
      return CGP_OK;
    case cgx::Errc::io_error:
      return CGP_ERR_IO;
    case cgx::Errc::unknown_operation:
      return CGP_ERR_UNKNOWN_OPERATION;
    case cgx::Errc::invalid_argument:
      return CGP_ERR_INVALID_ARGUMENT;
    case cgx::Errc::finished:
      return CGP_ERR_FINISHED;
    case cgx::Errc::unbalanced:
      return CGP_ERR_UNBALANCED;
  }
  return CGP_ERR_IO;
}

cgp_status report(const cgx::Status& status) {
  if (status.ok()) return CGP_OK;
  last_error = status.message();
  return to_c(status.code());
}

cgp_status invalid(const char* message) {
  last_error = message;
  return CGP_ERR_INVALID_ARGUMENT;
}

std::vector<std::string> strings(const cgp_str* items, std::size_t len) {
  std::vector<std::string> out;
  out.reserve(len);
  for (std::size_t i = 0; i < len; ++i)
    out.emplace_back(view(items[i]));
  return out;
}

// Runs `body` with the inputs as string_views, on the stack for the usual few: the string API's
// hot path copies nothing.
template <typename F>
cgp_status with_views(const cgp_str* items, std::size_t len, F&& body) {
  // Uninitialized on purpose: zeroing eight views cost more than the usual one input.
  union Small {
    Small() {}
    std::string_view items[8];
  } small;
  std::vector<std::string_view> large;
  std::string_view* views = small.items;
  if (len > std::size(small.items)) {
    large.resize(len);
    views = large.data();
  }
  for (std::size_t i = 0; i < len; ++i)
    new (&views[i]) std::string_view(view(items[i]));
  return body(std::span<const std::string_view>(views, len));
}

template <typename F>
cgp_status guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
    return CGP_ERR_IO;
  } catch (const std::exception& e) {
    last_error = e.what();
    return CGP_ERR_IO;
  }
}

// The string API's full paths (the C entry points above try the hit path first): out of line,
// so that the hit path's entry point sets up no exception guard or views.
[[gnu::noinline]] cgp_status begin_operation_full(cgp_session* session, cgp_str static_id,
                                                  cgp_str op, const cgp_str* inputs,
                                                  std::size_t inputs_len, char* id_buf,
                                                  std::size_t id_buf_len, std::size_t* id_len) {
  auto* state = cgx::detail::session_state(session->session);
  return guarded([&] {
    return with_views(inputs, inputs_len, [&](std::span<const std::string_view> views) {
      // Written straight into the caller's buffer when it holds the longest id (the usual
      // CGP_EVENT_ID_MAX one): a local copy read back at once would stall on the id's last byte.
      char local[cgx::detail::SessionState::kEventIdMax + 1];
      const bool direct = id_buf_len >= sizeof local;
      char* id = direct ? id_buf : local;
      auto length = state->begin_by_id(view(static_id), view(op), views, id);
      if (!length) return report(length.status());
      const std::size_t n = length.value();
      if (n + 1 > id_buf_len) {
        (void)state->end_by_id(std::string_view(id, n), nullptr);
        return invalid("cgp_begin_operation: id_buf is smaller than the event id");
      }
      if (!direct) std::memcpy(id_buf, id, n);
      id_buf[n] = '\0';
      if (id_len != nullptr) *id_len = n;
      return CGP_OK;
    });
  });
}

[[gnu::noinline]] cgp_status end_operation_full(cgp_session* session, cgp_str event_id,
                                                const cgp_str* output, uint64_t* duration_ns) {
  return guarded([&] {
    std::string_view out;
    if (output != nullptr) out = view(*output);
    auto duration = cgx::detail::session_state(session->session)
                        ->end_by_id(view(event_id), output != nullptr ? &out : nullptr);
    if (!duration) return report(duration.status());
    if (duration_ns != nullptr) *duration_ns = duration.value();
    return CGP_OK;
  });
}

// The C record as the C++ one; nullopt (with last_error set) when it cannot be read.
std::optional<cgx::TensorStats> tensor_stats(const cgp_tensor_stats* in, const char* caller) {
  if (in == nullptr || in->struct_size < sizeof(cgp_tensor_stats)) {
    last_error = std::string(caller) +
                 ": stats is NULL or its struct_size is too small (fill it with "
                 "cgp_tensor_stats_init)";
    return std::nullopt;
  }
  if (in->rank != 0 && in->shape == nullptr) {
    last_error = std::string(caller) + ": shape is NULL with a rank above 0";
    return std::nullopt;
  }
  cgx::TensorStats out;
  out.of = in->of == CGP_STATS_GRAD ? cgx::StatsOf::grad : cgx::StatsOf::output;
  out.reason =
      in->reason == CGP_STATS_NON_FINITE ? cgx::StatsReason::non_finite : cgx::StatsReason::sampled;
  out.index = in->index;
  out.dtype = std::string(view(in->dtype));
  out.shape.assign(in->shape, in->shape + in->rank);
  out.nan = in->nan;
  out.pos_inf = in->pos_inf;
  out.neg_inf = in->neg_inf;
  out.zeros = in->zeros;
  if (in->has_finite != 0)
    out.finite = cgx::FiniteStats{in->min, in->max, in->mean, in->rms, in->abs_max};
  return out;
}

}  // namespace

extern "C" {

void cgp_config_init(cgp_config* config, cgp_str entrypoint, cgp_phase phase) {
  if (config == nullptr) return;
  *config = cgp_config{};
  config->entrypoint = entrypoint;
  config->phase = phase;
}

cgp_status cgp_session_open(cgp_str path, const cgp_config* config, cgp_session** out) {
  return cgp_session_open_with(path, config, nullptr, out);
}

void cgp_open_options_init(cgp_open_options* options) {
  if (options == nullptr) return;
  *options = cgp_open_options{};
  options->struct_size = sizeof(cgp_open_options);
  options->max_distinct_ids = CGP_MAX_DISTINCT_IDS;
}

cgp_status cgp_session_open_with(cgp_str path, const cgp_config* config,
                                 const cgp_open_options* options, cgp_session** out) {
  if (config == nullptr || out == nullptr) return invalid("cgp_session_open: NULL argument");
  *out = nullptr;
  // Fields past the caller's struct_size are absent (an older caller): their defaults apply.
  const auto has = [options](std::size_t end_offset) {
    return options != nullptr && options->struct_size >= end_offset;
  };
  if (options != nullptr && options->struct_size < sizeof options->struct_size)
    return invalid(
        "cgp_session_open_with: options.struct_size is too small (fill the options with "
        "cgp_open_options_init)");
  return guarded([&] {
    cgx::ProfileConfig cfg = config->phase == CGP_PHASE_INFER
                                 ? cgx::ProfileConfig::infer(std::string(view(config->entrypoint)))
                                 : cgx::ProfileConfig::train(std::string(view(config->entrypoint)));
    if (config->profile.ptr != nullptr) cfg.profile = std::string(view(config->profile));
    if (config->cargo_features != nullptr)
      cfg.cargo_features = strings(config->cargo_features, config->cargo_features_len);
    if (config->analysis_id.ptr != nullptr)
      cfg.analysis_id = std::string(view(config->analysis_id));
    if (config->build_id.ptr != nullptr) cfg.build_id = std::string(view(config->build_id));
    cfg.format = config->format == CGP_FORMAT_RUNTIME_V3 ? cgx::TraceFormat::runtime_v3
                 : config->format == CGP_FORMAT_RUNTIME_V4_COMPACT
                     ? cgx::TraceFormat::runtime_v4_compact
                     : cgx::TraceFormat::runtime_v4;
    cfg.backpressure = config->backpressure == CGP_BACKPRESSURE_DROP ? cgx::Backpressure::drop
                                                                     : cgx::Backpressure::block;
    if (config->device_sync != nullptr) {
      auto* sync = config->device_sync;
      void* user = config->device_sync_user;
      cfg.device_synchronize = [sync, user] { sync(user); };
    }
    if (config->buffer_records_per_thread != 0)
      cfg.buffer_records_per_thread = static_cast<std::size_t>(config->buffer_records_per_thread);
    if (has(offsetof(cgp_open_options, max_distinct_ids) + sizeof options->max_distinct_ids) &&
        options->max_distinct_ids != 0)
      cfg.max_distinct_ids = options->max_distinct_ids;
    if (has(offsetof(cgp_open_options, stats_every) + sizeof options->stats_every))
      cfg.stats_every = options->stats_every;
    if (has(offsetof(cgp_open_options, stats_on_non_finite) + sizeof options->stats_on_non_finite))
      cfg.stats_on_non_finite = options->stats_on_non_finite != 0;
    auto session = cgx::ProfileSession::open(std::string(view(path)), std::move(cfg));
    if (!session) return report(session.status());
    *out = new cgp_session{std::move(session).value(), {}, false, CGP_OK, {}, nullptr};
    (*out)->state = cgx::detail::session_state((*out)->session);
    return CGP_OK;
  });
}

cgp_phase cgp_session_phase(const cgp_session* session) {
  return session->session.phase() == cgx::Phase::infer ? CGP_PHASE_INFER : CGP_PHASE_TRAIN;
}

uint64_t cgp_session_step(const cgp_session* session) {
  return session->session.step();
}

void cgp_session_set_step(cgp_session* session, uint64_t step) {
  session->session.set_step(step);
}

cgp_status cgp_session_op(cgp_session* session, cgp_str static_id, cgp_str op,
                          const cgp_str* inputs, size_t inputs_len, cgp_op* out) {
  if (session == nullptr || out == nullptr || (inputs == nullptr && inputs_len != 0))
    return invalid("cgp_session_op: NULL argument");
  return guarded([&] {
    return with_views(inputs, inputs_len, [&](std::span<const std::string_view> views) {
      auto* state = cgx::detail::session_state(session->session);
      if (state->finished.load(std::memory_order_acquire))
        return report(cgx::Status(cgx::Errc::finished, "profile session is already finished"));
      auto handle = state->intern_op(view(static_id), view(op), views);
      if (!handle) {
        state->count_error();  // past max_distinct_ids: counted in `end.errors`
        return report(handle.status());
      }
      *out = handle.value();
      return CGP_OK;
    });
  });
}

// cgp_op is the C++ handle's index, so begin/end need no table of their own.
// An index the session never returned for an operation does nothing (as ProfileSession::handle).
void cgp_op_begin(cgp_session* session, cgp_op op) {
  if (session->state->handles_.is_op(op)) session->state->begin(op);
}

void cgp_op_end(cgp_session* session, cgp_op op) {
  if (session->state->handles_.is_op(op)) session->state->end(op);
}

cgp_status cgp_module_begin(cgp_session* session, cgp_str path, cgp_module_scope* out) {
  if (session == nullptr || out == nullptr) return invalid("cgp_module_begin: NULL argument");
  auto* state = session->state;
  *out = state->module_begin(view(path));
  if (*out == 0 && state->finished.load(std::memory_order_relaxed))
    return report(cgx::Status(cgx::Errc::finished, "profile session is already finished"));
  return CGP_OK;
}

cgp_status cgp_module_begin_child(cgp_session* session, cgp_str parent, cgp_str child,
                                  cgp_module_scope* out) {
  if (session == nullptr || out == nullptr) return invalid("cgp_module_begin_child: NULL argument");
  auto* state = session->state;
  *out = state->module_begin_child(view(parent), view(child));
  if (*out == 0 && state->finished.load(std::memory_order_relaxed))
    return report(cgx::Status(cgx::Errc::finished, "profile session is already finished"));
  return CGP_OK;
}

void cgp_module_end(cgp_session* session, cgp_module_scope scope) {
  if (session == nullptr || scope == 0) return;
  session->state->module_end(scope);
}

cgp_status cgp_begin_operation(cgp_session* session, cgp_str static_id, cgp_str op,
                               const cgp_str* inputs, size_t inputs_len, char* id_buf,
                               size_t id_buf_len, size_t* id_len) {
  if (session == nullptr || id_buf == nullptr || (inputs == nullptr && inputs_len != 0))
      [[unlikely]]
    return invalid("cgp_begin_operation: NULL argument");
  // The hit path (id cached on this thread, its slot free): straight into the caller's buffer,
  // no views, no Result. Otherwise the full path, which gives the same result.
  if (id_buf_len > cgx::detail::SessionState::kEventIdMax) [[likely]] {
    const std::size_t n =
        session->state->begin_hit(view(static_id), view(op), inputs, inputs_len, id_buf, nullptr);
    if (n != 0) [[likely]] {
      id_buf[n] = '\0';
      if (id_len != nullptr) *id_len = n;
      return CGP_OK;
    }
  }
  return begin_operation_full(session, static_id, op, inputs, inputs_len, id_buf, id_buf_len,
                              id_len);
}

cgp_status cgp_end_operation(cgp_session* session, cgp_str event_id, const cgp_str* output,
                             uint64_t* duration_ns) {
  if (session == nullptr) [[unlikely]]
    return invalid("cgp_end_operation: NULL session");
  if (output == nullptr) [[likely]] {
    std::uint64_t duration = 0;
    if (session->state->end_hit(view(event_id), duration)) [[likely]] {
      if (duration_ns != nullptr) *duration_ns = duration;
      return CGP_OK;
    }
  }
  return end_operation_full(session, event_id, output, duration_ns);
}

cgp_status cgp_record_edge_timing(cgp_session* session, cgp_str from_static_id,
                                  cgp_str to_static_id, uint64_t duration_ns) {
  if (session == nullptr) return invalid("cgp_record_edge_timing: NULL session");
  return guarded([&] {
    return report(
        session->session.record_edge_timing(view(from_static_id), view(to_static_id), duration_ns));
  });
}

void cgp_tensor_stats_init(cgp_tensor_stats* stats) {
  if (stats == nullptr) return;
  *stats = cgp_tensor_stats{};
  stats->struct_size = sizeof(cgp_tensor_stats);
}

cgp_stats_due cgp_session_stats_due(const cgp_session* session) {
  if (session == nullptr) return CGP_STATS_DUE_NONE;
  switch (session->session.stats_due()) {
    case cgx::StatsDue::full:
      return CGP_STATS_DUE_FULL;
    case cgx::StatsDue::non_finite_only:
      return CGP_STATS_DUE_NON_FINITE_ONLY;
    case cgx::StatsDue::none:
      break;
  }
  return CGP_STATS_DUE_NONE;
}

cgp_status cgp_record_stats(cgp_session* session, cgp_str path, const cgp_tensor_stats* stats) {
  if (session == nullptr) return invalid("cgp_record_stats: NULL session");
  return guarded([&] {
    auto st = tensor_stats(stats, "cgp_record_stats");
    if (!st) return CGP_ERR_INVALID_ARGUMENT;
    return report(session->session.record_stats(view(path), *st));
  });
}

cgp_status cgp_record_child_stats(cgp_session* session, cgp_str parent, cgp_str child,
                                  const cgp_tensor_stats* stats) {
  if (session == nullptr) return invalid("cgp_record_child_stats: NULL session");
  return guarded([&] {
    auto st = tensor_stats(stats, "cgp_record_child_stats");
    if (!st) return CGP_ERR_INVALID_ARGUMENT;
    return report(session->session.record_child_stats(view(parent), view(child), *st));
  });
}

cgp_status cgp_session_flush(cgp_session* session) {
  if (session == nullptr) return invalid("cgp_session_flush: NULL session");
  return guarded([&] { return report(session->session.flush()); });
}

cgp_status cgp_session_close(cgp_session* session) {
  if (session == nullptr) return invalid("cgp_session_close: NULL session");
  return guarded([&] {
    std::lock_guard<std::mutex> lock(session->close_mu);
    if (!session->closed) {
      session->closed = true;
      auto done = session->session.finish();
      session->close_status = done ? CGP_OK : report(done.status());
      if (!done) session->close_error = done.status().message();
    }
    if (session->close_status != CGP_OK) last_error = session->close_error;
    return session->close_status;
  });
}

cgp_status cgp_session_finish(cgp_session* session) {
  if (session == nullptr) return invalid("cgp_session_finish: NULL session");
  cgp_status status = cgp_session_close(session);
  delete session;
  return status;
}

void cgp_session_free(cgp_session* session) {
  delete session;
}

const char* cgp_last_error(void) {
  return last_error.c_str();
}

}  // extern "C"
