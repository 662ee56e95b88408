// `profile --format table`: a module table beside the operation table, self before total, shares
// of wall time, and "host-side" said when the traces have no device_sync.
#include "cli/profile_text.hpp"

#include <gtest/gtest.h>

namespace {

TEST(ProfileTable, ModuleAndOperationTablesWithSharesOfWallTime) {
  cg::runtime::ProfileReport r;
  r.step_time_ns = 1600;
  r.steps = 2;
  r.thread_busy_ns = {1000, 600};
  r.has_module_scopes = true;
  cg::runtime::ProfileRow layer{"model.layers.0", "", {2, 1200, 600, 500, 700, 500, 700}, 0.5};
  layer.self_ns = 800;
  layer.total_share = 0.75;
  r.module_scopes.push_back(layer);
  cg::runtime::ProfileRow op{
      "operation:infer:f:0", "matmul", {2, 900, 450, 400, 500, 400, 500}, 0.5625};
  op.self_ns = 900;
  op.total_share = 0.5625;
  r.operations.push_back(op);
  std::string t = cg::cli::profile_table(r, 2, 50);
  EXPECT_NE(t.find("Wall time 1.6 µs over 2 traces, 2 threads"), std::string::npos) << t;
  EXPECT_NE(t.find("2 steps, 800 ns per step (all threads)"), std::string::npos) << t;
  EXPECT_NE(t.find("per step per thread: 500 ns 300 ns"), std::string::npos) << t;
  EXPECT_NE(t.find("timings are host-side"), std::string::npos) << t;
  auto module_row = t.find("model.layers.0  800 ns  50.0%  1.2 µs  75.0%      2  500 ns  700 ns");
  EXPECT_NE(module_row, std::string::npos) << t;
  auto op_row = t.find("operation:infer:f:0  matmul  900 ns  56.2%");
  EXPECT_NE(op_row, std::string::npos) << t;
  EXPECT_LT(module_row, op_row);  // the module table comes first
  r.host_side = false;
  EXPECT_EQ(cg::cli::profile_table(r, 2, 50).find("host-side"), std::string::npos);
}

// The root module's path is empty: its row is named after its type, not left blank.
TEST(ProfileTable, RootRowIsNamedAfterItsType) {
  cg::runtime::ProfileReport r;
  r.step_time_ns = 1000;
  r.thread_busy_ns = {1000};
  r.has_module_scopes = true;
  cg::runtime::ProfileRow root{"", "", {1, 1000, 1000, 1000, 1000, 1000, 1000}, 0.4};
  root.self_ns = 400;
  root.total_share = 1.0;
  root.type_name = "Llama";
  r.module_scopes.push_back(root);
  cg::runtime::ProfileRow layer{"model.layers.0", "", {1, 600, 600, 600, 600, 600, 600}, 0.6};
  layer.self_ns = 600;
  layer.total_share = 0.6;
  layer.type_name = "Block";
  r.module_scopes.push_back(layer);
  const std::string t = cg::cli::profile_table(r, 1, 50);
  EXPECT_NE(t.find("\nLlama (root)    400 ns  40.0%    1 µs  100.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("\nmodel.layers.0  600 ns  60.0%"), std::string::npos) << t;  // paths stay paths
  EXPECT_NE(t.find("over 1 trace, 1 thread\n"), std::string::npos) << t;
  r.module_scopes[0].type_name.clear();  // a trace whose root the IR does not know
  EXPECT_NE(cg::cli::profile_table(r, 1, 50).find("\n(root)  "), std::string::npos);
}

TEST(ProfileTable, Durations) {
  EXPECT_EQ(cg::cli::format_duration(850), "850 ns");
  EXPECT_EQ(cg::cli::format_duration(12300), "12.3 µs");
  EXPECT_EQ(cg::cli::format_duration(4560000), "4.56 ms");
  EXPECT_EQ(cg::cli::format_duration(1234500000), "1.234 s");
}

}  // namespace
