// Module scopes (docs/runtime-4.md, "Additions: module scopes"): what a Candle-style program that
// times `model.layers.N.self_attn` by VarBuilder path gets in its trace, through the C++ API and
// the C ABI, in every format, and what happens when it closes scopes wrongly.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "candle_graph/profile.hpp"
#include "candle_graph_profile.h"
#include "profile/trace_files.hpp"

namespace cg = candle_graph;
namespace fs = std::filesystem;

namespace {

using profile_test::field;
using profile_test::is_kind;
using profile_test::number;
using profile_test::read_lines;

fs::path scratch(const std::string& name) {
  return profile_test::scratch_file("cg-profile-module", name);
}

std::vector<std::string> of_kind(const std::vector<std::string>& lines, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& line : lines)
    if (is_kind(line, kind)) out.push_back(line);
  return out;
}

// The field names of a flat record, in order.
std::vector<std::string> keys(const std::string& line) {
  static const std::regex key(R"re("([a-z_]+)":)re");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), key); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

std::string mask_timing(const std::string& line) {
  static const std::regex timing(R"re("(duration_ns|start_ns|at_ns|start_unix_ns|pid)":\d+)re");
  return std::regex_replace(line, timing, R"("$1":X)");
}

cg::ProfileSession open_or_die(const fs::path& path, cg::ProfileConfig config) {
  auto session = cg::ProfileSession::open(path, std::move(config));
  if (!session) throw std::runtime_error("open failed: " + session.status().message());
  return std::move(session).value();
}

}  // namespace

// The model/layer/attention nesting of a forward pass: every closed scope is one `module` line
// with its path, an event id from the shared counter, and its enclosing scope as parent; the
// operation inside keeps its own (operation) parent and the end record counts the modules.
TEST(ProfileModule, NestedScopesNameTheirParentAndEnclosure) {
  const fs::path path = scratch("nested.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::infer("model::forward"));
  auto matmul = session.op("operation:infer:attn:0", "matmul").value();
  {
    auto model = session.module_scope("model");
    for (int layer = 0; layer < 2; ++layer) {
      const std::string prefix = "model.layers." + std::to_string(layer);
      auto block = session.module_scope(prefix);
      const int value = session.time_module(prefix + ".self_attn", [&] {
        cg::ScopedOperation op(matmul);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 40 + layer;
      });
      EXPECT_EQ(value, 40 + layer);  // time_module returns the closure's value
    }
  }
  ASSERT_TRUE(session.finish());

  const auto lines = read_lines(path);
  const auto modules = of_kind(lines, "module");
  ASSERT_EQ(modules.size(), 5u);
  // Closed innermost first: attn, layer 0, attn, layer 1, model.
  EXPECT_EQ(field(modules[0], "path"), "model.layers.0.self_attn");
  EXPECT_EQ(field(modules[1], "path"), "model.layers.0");
  EXPECT_EQ(field(modules[2], "path"), "model.layers.1.self_attn");
  EXPECT_EQ(field(modules[3], "path"), "model.layers.1");
  EXPECT_EQ(field(modules[4], "path"), "model");
  EXPECT_EQ(keys(modules[0]),
            (std::vector<std::string>{"kind", "event_id", "path", "step", "duration_ns", "start_ns",
                                      "thread", "parent"}));
  // Counters: model 1, layer0 2, attn0 3, matmul 4, layer1 5, attn1 6, matmul 7.
  EXPECT_EQ(field(modules[4], "event_id"), "infer-mod-0-1");
  EXPECT_FALSE(field(modules[4], "parent").has_value());
  EXPECT_EQ(field(modules[1], "event_id"), "infer-mod-0-2");
  EXPECT_EQ(field(modules[1], "parent"), "infer-mod-0-1");
  EXPECT_EQ(field(modules[0], "event_id"), "infer-mod-0-3");
  EXPECT_EQ(field(modules[0], "parent"), "infer-mod-0-2");
  EXPECT_EQ(field(modules[2], "parent"), "infer-mod-0-5");
  EXPECT_GE(number(modules[0], "duration_ns"), 1'000'000u);
  // A scope's interval encloses its children's.
  for (auto [child, parent] : {std::pair{0, 1}, std::pair{1, 4}, std::pair{2, 3}}) {
    const auto& c = modules[static_cast<std::size_t>(child)];
    const auto& p = modules[static_cast<std::size_t>(parent)];
    EXPECT_LE(number(p, "start_ns"), number(c, "start_ns"));
    EXPECT_GE(number(p, "start_ns") + number(p, "duration_ns"),
              number(c, "start_ns") + number(c, "duration_ns"));
  }
  // Operations are untouched by module scopes: no module parent, their own ids.
  const auto ops = of_kind(lines, "operation");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(field(ops[0], "event_id"), "infer-op-0-4");
  EXPECT_FALSE(field(ops[0], "parent").has_value());
  const std::string& end = lines.back();
  ASSERT_TRUE(is_kind(end, "end"));
  EXPECT_EQ(keys(profile_test::without_clock_check(end)),
            (std::vector<std::string>{"kind", "operations", "edge_timings", "dropped", "errors",
                                      "open_operations", "threads", "duration_ns", "modules",
                                      "open_modules"}));
  EXPECT_EQ(number(end, "operations"), 2u);
  EXPECT_EQ(number(end, "modules"), 5u);
  EXPECT_EQ(number(end, "open_modules"), 0u);
  EXPECT_EQ(number(end, "errors"), 0u);
  // No device synchronisation configured: host-side timings, no meta field.
  EXPECT_FALSE(field(lines[0], "device_sync").has_value());
}

// Scopes on many threads: each thread's scopes nest among themselves only, a path is one string
// whatever buffer it comes from, and scopes left open are counted.
TEST(ProfileModule, ThreadsNestIndependentlyAndOpenScopesAreCounted) {
  const fs::path path = scratch("threads.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("model::train_step"));
  constexpr int kThreads = 4, kLayers = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&session] {
      for (int i = 0; i < kLayers; ++i) {
        // A fresh copy each time (as `format!` would give): cached by content, not address.
        std::string layer = "model.layers." + std::to_string(i % 5);
        auto outer = session.module_scope(layer);
        auto inner = session.module_scope(layer + ".mlp");
      }
    });
  }
  for (auto& t : threads)
    t.join();
  auto left_open = session.module_scope("model");
  ASSERT_TRUE(left_open.active());
  ASSERT_TRUE(session.finish());
  left_open.end();  // after finish: records nothing, no error, no crash

  const auto lines = read_lines(path);
  const auto modules = of_kind(lines, "module");
  ASSERT_EQ(modules.size(), static_cast<std::size_t>(kThreads * kLayers * 2));
  std::map<std::string, std::string> thread_of;  // event id -> thread
  std::set<std::string> paths;
  for (const auto& m : modules) {
    thread_of[*field(m, "event_id")] = *field(m, "thread");
    paths.insert(*field(m, "path"));
  }
  EXPECT_EQ(thread_of.size(), modules.size()) << "event ids must be unique";
  EXPECT_EQ(paths.size(), 10u);
  for (const auto& m : modules) {
    const std::string p = *field(m, "path");
    if (p.ends_with(".mlp")) {
      auto parent = field(m, "parent");
      ASSERT_TRUE(parent.has_value()) << m;
      EXPECT_EQ(thread_of[*parent], *field(m, "thread")) << "parent on another thread: " << m;
    } else {
      EXPECT_FALSE(field(m, "parent").has_value()) << m;
    }
  }
  EXPECT_EQ(number(lines.back(), "modules"), modules.size());
  EXPECT_EQ(number(lines.back(), "open_modules"), 1u);
}

// A program that never opens a module scope writes exactly what it wrote before module scopes
// existed: no `device_sync` in meta, the same eight `end` fields. In runtime/3 (the seed's
// format) module scopes are invisible: the trace is byte for byte that of the same program
// without them (timings masked), and the event counter does not advance for them.
TEST(ProfileModule, TracesWithoutScopesAndRuntime3TracesAreUnchanged) {
  auto script = [](cg::ProfileSession& s, bool scopes) {
    auto h = s.op("operation:train:f:0", "linear").value();
    for (std::uint64_t step = 0; step < 3; ++step) {
      s.set_step(step);
      cg::ModuleScope m = scopes ? s.module_scope("model.layers.0") : cg::ModuleScope();
      h.begin();
      auto id = s.begin_operation("operation:train:f:1", "matmul");
      ASSERT_TRUE(id);
      ASSERT_TRUE(s.end_operation(id.value(), "tensor:out"));
      h.end();
      ASSERT_TRUE(s.record_edge_timing("operation:train:f:0", "operation:train:f:1", 7));
    }
  };
  const fs::path plain4 = scratch("plain4.jsonl");
  {
    auto s = open_or_die(plain4, cg::ProfileConfig::train("model::train_step"));
    script(s, false);
    ASSERT_TRUE(s.finish());
  }
  const auto lines = read_lines(plain4);
  EXPECT_FALSE(field(lines.front(), "device_sync").has_value());
  EXPECT_EQ(keys(lines.front()).back(), "writer");
  EXPECT_EQ(keys(profile_test::without_clock_check(lines.back())),
            (std::vector<std::string>{"kind", "operations", "edge_timings", "dropped", "errors",
                                      "open_operations", "threads", "duration_ns"}));
  EXPECT_TRUE(of_kind(lines, "module").empty());

  std::vector<std::string> v3[2];
  for (int scopes = 0; scopes < 2; ++scopes) {
    const fs::path p = scratch("v3-" + std::to_string(scopes) + ".jsonl");
    auto config = cg::ProfileConfig::train("model::train_step");
    config.format = cg::TraceFormat::runtime_v3;
    auto s = open_or_die(p, config);
    if (scopes) {
      EXPECT_FALSE(s.module_scope("model").active());
    }
    script(s, scopes != 0);
    ASSERT_TRUE(s.finish());
    for (const auto& line : read_lines(p))
      v3[scopes].push_back(mask_timing(line));
  }
  EXPECT_EQ(v3[0], v3[1]);
  ASSERT_GE(v3[1].size(), 2u);
  EXPECT_EQ(field(v3[1][1], "event_id"), "train-op-0-2");  // counters not spent on scopes
}

// With a device-synchronise callback, it runs before each scope's begin and end clock read (and
// never for operations), and meta says the timings include the device's work.
TEST(ProfileModule, DeviceSyncIsCalledAroundScopesAndAnnouncedInMeta) {
  const fs::path path = scratch("sync.jsonl");
  auto config = cg::ProfileConfig::infer("model::forward");
  std::atomic<int> syncs{0};
  config.device_synchronize = [&syncs] { syncs.fetch_add(1); };
  auto session = open_or_die(path, config);
  auto h = session.op("operation:infer:f:0", "matmul").value();
  {
    auto a = session.module_scope("model");
    auto b = session.module_scope("model.embed_tokens");
    cg::ScopedOperation op(h);
  }
  EXPECT_EQ(syncs.load(), 4);
  ASSERT_TRUE(session.finish());
  const auto lines = read_lines(path);
  EXPECT_EQ(field(lines.front(), "device_sync"), "true");
  EXPECT_EQ(keys(lines.front()).back(), "device_sync");
  EXPECT_EQ(of_kind(lines, "module").size(), 2u);
}

// Compact encoding: a module path is one `def` (h in the handles' number space), scopes are `m`
// lines with o's implied-value rules, and m lines advance the thread's implied counter.
TEST(ProfileModule, CompactWritesPathDefsAndMLines) {
  const fs::path path = scratch("compact.jsonl");
  auto config = cg::ProfileConfig::infer("model::forward");
  config.format = cg::TraceFormat::runtime_v4_compact;
  auto session = open_or_die(path, config);
  auto h = session.op("operation:infer:f:0", "matmul").value();  // h 0
  for (int i = 0; i < 2; ++i) {
    auto m = session.module_scope("model");  // h 1; counters 1,(2 op),3,(4 op)
    cg::ScopedOperation op(h);
  }
  {
    auto outer = session.module_scope("model");           // counter 5
    auto inner = session.module_scope("model.layers.0");  // h 2, counter 6, parent 5
  }
  ASSERT_TRUE(session.finish());
  auto lines = read_lines(path);
  static const std::regex dt(R"("d":\d+,"t":\d+)");
  for (auto& line : lines)
    line = std::regex_replace(line, dt, R"("d":D,"t":T)");
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[1],
            R"({"kind":"def","h":0,"op":"matmul","static_id":"operation:infer:f:0","inputs":[]})");
  EXPECT_EQ(lines[2], R"({"kind":"o","h":0,"c":2,"d":D,"t":T})");
  EXPECT_EQ(lines[3], R"({"kind":"def","h":1,"path":"model"})");
  EXPECT_EQ(lines[4], R"({"kind":"m","h":1,"c":1,"d":D,"t":T})");
  EXPECT_EQ(lines[5], R"({"kind":"o","h":0,"c":4,"d":D,"t":T})");
  EXPECT_EQ(lines[6], R"({"kind":"m","h":1,"c":3,"d":D,"t":T})");
  EXPECT_EQ(lines[7], R"({"kind":"def","h":2,"path":"model.layers.0"})");
  EXPECT_EQ(lines[8], R"({"kind":"m","h":2,"c":6,"d":D,"t":T,"p":1})");
  EXPECT_EQ(lines[9], R"({"kind":"m","h":1,"c":5,"d":D,"t":T})");
  EXPECT_TRUE(is_kind(lines[10], "end"));
  EXPECT_EQ(number(lines[10], "operations"), 2u);
  EXPECT_EQ(number(lines[10], "modules"), 4u);
}

// The C ABI: begin returns a token, end takes it; runtime/3 gives token 0 and CGP_OK; close is
// idempotent and later begins report CGP_ERR_FINISHED.
TEST(ProfileModule, CAbiScopesAndIdempotentClose) {
  const fs::path path = scratch("c.jsonl");
  const std::string p = path.string();
  cgp_config config;
  cgp_config_init(&config, cgp_str{"model::forward", 14}, CGP_PHASE_INFER);
  int syncs = 0;
  config.device_sync = [](void* user) { ++*static_cast<int*>(user); };
  config.device_sync_user = &syncs;
  cgp_session* s = nullptr;
  ASSERT_EQ(cgp_session_open(cgp_str{p.data(), p.size()}, &config, &s), CGP_OK);
  cgp_module_scope outer = 0, inner = 0;
  const std::string layer = "model.layers.0";
  ASSERT_EQ(cgp_module_begin(s, cgp_str{"model", 5}, &outer), CGP_OK);
  ASSERT_EQ(cgp_module_begin(s, cgp_str{layer.data(), layer.size()}, &inner), CGP_OK);
  EXPECT_NE(outer, 0u);
  EXPECT_NE(inner, outer);
  cgp_module_end(s, inner);
  cgp_module_end(s, outer);
  cgp_module_end(s, 0);  // a scope that records nothing
  EXPECT_EQ(syncs, 4);
  ASSERT_EQ(cgp_session_close(s), CGP_OK);
  ASSERT_EQ(cgp_session_close(s), CGP_OK);  // idempotent
  cgp_module_scope late = 7;
  EXPECT_EQ(cgp_module_begin(s, cgp_str{"model", 5}, &late), CGP_ERR_FINISHED);
  EXPECT_EQ(late, 0u);
  cgp_session_free(s);
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(field(lines[1], "path"), "model.layers.0");
  EXPECT_EQ(field(lines[1], "parent"), "infer-mod-0-1");
  EXPECT_EQ(field(lines[0], "device_sync"), "true");
  EXPECT_EQ(number(lines[3], "modules"), 2u);

  const fs::path path3 = scratch("c3.jsonl");
  const std::string p3 = path3.string();
  cgp_config_init(&config, cgp_str{"model::forward", 14}, CGP_PHASE_INFER);
  config.format = CGP_FORMAT_RUNTIME_V3;
  ASSERT_EQ(cgp_session_open(cgp_str{p3.data(), p3.size()}, &config, &s), CGP_OK);
  cgp_module_scope token = 7;
  EXPECT_EQ(cgp_module_begin(s, cgp_str{"model", 5}, &token), CGP_OK);
  EXPECT_EQ(token, 0u);
  cgp_module_end(s, token);
  EXPECT_EQ(cgp_session_finish(s), CGP_OK);
  EXPECT_EQ(read_lines(path3).size(), 1u);  // meta only: /3 has no module lines, no end
}

// Wrong use never crashes: a scope closed before one it encloses is written and counted; a scope
// closed on another thread is a sticky `unbalanced` error returned by finish(), and the scope
// stays open (counted in open_modules).
TEST(ProfileModule, OutOfOrderAndForeignThreadEndsAreCountedErrors) {
  const fs::path path = scratch("bad.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::train("model::train_step"));
  {
    auto outer = session.module_scope("model");
    auto inner = session.module_scope("model.layers.0");
    outer.end();  // out of order: inner is still open
    EXPECT_FALSE(outer.active());
  }
  auto foreign = session.module_scope("model.norm");
  std::thread([&] { foreign.end(); }).join();
  ASSERT_TRUE(session.flush());
  auto done = session.finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.status().code(), cg::Errc::unbalanced);
  EXPECT_NE(done.status().message().find("not open"), std::string::npos);
  const auto lines = read_lines(path);
  const auto modules = of_kind(lines, "module");
  ASSERT_EQ(modules.size(), 2u);
  EXPECT_EQ(field(modules[0], "path"), "model");
  EXPECT_EQ(field(modules[1], "path"), "model.layers.0");
  EXPECT_EQ(field(modules[1], "parent"), field(modules[0], "event_id"));
  EXPECT_EQ(number(lines.back(), "errors"), 2u);
  EXPECT_EQ(number(lines.back(), "open_modules"), 1u);
}

// A library layer a module calls is timed as `parent.child` (the root's children by their own
// segment), through the C++ API and the C ABI; the joined path is the same string a module scope
// with that path gets (one interned path), and a parent buffer whose text changed is never taken
// for the old path.
TEST(ProfileModule, ChildScopesJoinParentAndChild) {
  const fs::path path = scratch("child.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::infer("model::forward"));
  std::string parent = "model.layers.0.self_attn";
  static const char kQ[] = "q_proj";
  {
    auto attn = session.module_scope(parent);
    for (int i = 0; i < 3; ++i) {
      auto q = session.child_scope(parent, kQ);
      EXPECT_TRUE(q.active());
    }
    auto direct = session.module_scope("model.layers.0.self_attn.q_proj");
  }
  {
    auto head = session.child_scope("", "lm_head");  // the root's child: no leading dot
  }
  parent[13] = '1';  // same buffer, new text: model.layers.1.self_attn
  { auto q = session.child_scope(parent, kQ); }
  ASSERT_TRUE(session.finish());
  const auto modules = of_kind(read_lines(path), "module");
  std::vector<std::string> paths;
  for (const auto& m : modules)
    paths.push_back(*field(m, "path"));
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.q_proj",
                       "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.q_proj",
                       "model.layers.0.self_attn", "lm_head", "model.layers.1.self_attn.q_proj"}));
  // The children of the attention scope name it as their parent.
  EXPECT_EQ(field(modules[0], "parent"), field(modules[4], "event_id"));
}

// A 10 MiB module path used to be recorded as given, writing a line the trace readers refuse
// ("line is longer than 1048576 bytes"), so the whole trace was lost. The limit is applied where
// the record is made: the scope records nothing, the end record counts it, every line stays
// readable.
TEST(ProfileModule, AnIdPastTheLimitIsRefusedAndTheTraceStaysReadable) {
  // Every byte escaped as \u00XX is 6 bytes: a refused id could never have fit anyway, and an
  // accepted one always fits the readers' 1 MiB line bound.
  static_assert(6 * cg::kMaxIdBytes + 4096 <= std::size_t{1} << 20);
  const fs::path path = scratch("long-path.jsonl");
  auto session = open_or_die(path, cg::ProfileConfig::infer("model::forward"));
  const std::string huge(std::size_t{10} << 20, 'x');
  { auto scope = session.module_scope(huge); }
  { auto scope = session.module_scope("model.norm"); }
  auto op = session.op(std::string(cg::kMaxIdBytes + 1, 'o'), "matmul");
  EXPECT_FALSE(op) << "an over-long static id is refused when it is interned";
  ASSERT_TRUE(session.finish());
  const auto lines = read_lines(path);
  for (const auto& line : lines)
    EXPECT_LE(line.size(), std::size_t{1} << 20);
  const auto modules = of_kind(lines, "module");
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_EQ(field(modules[0], "path").value_or(""), "model.norm");
  const auto end = of_kind(lines, "end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_GE(number(end[0], "errors"), 1u);
}
