// The compact encoding as the writer produces it (runtime/4-compact/1, docs/runtime-4.md): each
// operation defined once, short records that leave out what repeats, and under 60 bytes a pair.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "candle_graph/profile.hpp"
#include "profile/trace_files.hpp"

namespace cg = candle_graph;
namespace fs = std::filesystem;

namespace {

using profile_test::read_lines;

fs::path scratch(const std::string& name) {
  return profile_test::scratch_file("cg-profile-compact", name);
}

// Durations and instants vary from run to run.
std::string mask(const std::string& line) {
  static const std::regex d(R"("d":\d+,"t":\d+)");
  static const std::regex end(R"("duration_ns":\d+)");
  return std::regex_replace(std::regex_replace(line, d, R"("d":D,"t":T)"), end,
                            R"("duration_ns":D)");
}

cg::ProfileConfig compact_config() {
  auto config = cg::ProfileConfig::infer("model::forward");
  config.format = cg::TraceFormat::runtime_v4_compact;
  return config;
}

}  // namespace

TEST(ProfileCompact, WritesDefinitionsOnceAndLeavesOutWhatRepeats) {
  const fs::path path = scratch("scripted.jsonl");
  auto opened = cg::ProfileSession::open(path, compact_config());
  ASSERT_TRUE(opened) << opened.status().message();
  auto session = std::move(opened).value();
  const std::vector<std::string> inputs = {"tensor:x"};
  auto block = session.op("operation:infer:f:0", "block").value();
  auto matmul = session.op("operation:infer:f:1", "matmul", inputs).value();
  block.begin();
  matmul.begin();
  matmul.end();
  matmul.begin();
  matmul.end();
  block.end();
  session.set_step(2);
  auto id = session.begin_operation("operation:infer:f:2", "softmax").value();
  EXPECT_EQ(id, "infer-op-2-4");
  ASSERT_TRUE(session.end_operation(id, "tensor:y"));
  ASSERT_TRUE(session.record_edge_timing("operation:infer:f:1", "operation:infer:f:2", 40));
  std::thread([&] {
    matmul.begin();
    matmul.end();
  }).join();
  ASSERT_TRUE(session.finish());

  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[0].rfind(R"({"kind":"meta","schema":"candle-graph/runtime/4-compact/1",)", 0), 0u)
      << lines[0];
  std::vector<std::string> body;
  for (std::size_t i = 1; i < lines.size(); ++i)
    body.push_back(mask(profile_test::without_clock_check(lines[i])));
  const std::vector<std::string> expected = {
      R"({"kind":"def","h":1,"op":"matmul","static_id":"operation:infer:f:1","inputs":["tensor:x"]})",
      R"({"kind":"o","h":1,"c":2,"d":D,"t":T,"p":1})",
      R"({"kind":"o","h":1,"d":D,"t":T,"p":2})",
      R"({"kind":"def","h":0,"op":"block","static_id":"operation:infer:f:0","inputs":[]})",
      R"({"kind":"o","h":0,"c":1,"d":D,"t":T})",
      R"({"kind":"def","h":2,"op":"softmax","static_id":"operation:infer:f:2","inputs":[]})",
      R"({"kind":"o","h":2,"c":4,"s":2,"d":D,"t":T,"o":"tensor:y"})",
      R"({"kind":"def","h":3,"from_static_id":"operation:infer:f:1","to_static_id":"operation:infer:f:2"})",
      R"({"kind":"e","h":3,"d":D,"t":T})",
      R"({"kind":"o","h":1,"th":1,"c":4097,"s":2,"d":D,"t":T})",
      R"({"kind":"end","operations":5,"edge_timings":1,"dropped":0,"errors":0,"open_operations":0,"threads":2,"duration_ns":D})",
  };
  EXPECT_EQ(body, expected);
}

// The benchmark's workload (64 ids, one input, a step every 64 operations): under 60 bytes a
// pair, against ~240 in runtime/4.
TEST(ProfileCompact, APairTakesUnder60Bytes) {
  const fs::path path = scratch("size.jsonl");
  auto session = cg::ProfileSession::open(path, compact_config()).value();
  const std::vector<std::string> inputs = {"tensor:a"};
  std::vector<cg::OpHandle> handles;
  for (int i = 0; i < 64; ++i)
    handles.push_back(
        session
            .op("operation:train:function%3Amodel%253A%253AModel%253A%253Aforward%3A:" +
                    std::to_string(i),
                "matmul", inputs)
            .value());
  constexpr std::uint64_t kPairs = 200'000;
  for (std::uint64_t i = 0; i < kPairs; ++i) {
    if (i % 64 == 0) session.set_step(i / 64);
    handles[i % 64].begin();
    handles[i % 64].end();
  }
  ASSERT_TRUE(session.finish());
  const double per_pair = static_cast<double>(fs::file_size(path)) / kPairs;
  EXPECT_LE(per_pair, 60.0);
  EXPECT_EQ(read_lines(path).size(), 2 + 64 + kPairs);
}
