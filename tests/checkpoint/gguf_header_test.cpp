#include "checkpoint/gguf_header.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gguf_writer.hpp"
#include "scratch.hpp"
#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using W = cg_test::GgufWriter;

GgufHeader parse(const std::string& file, const GgufLimits& limits = {}) {
  return parse_gguf_header(file, file.size(), "model.gguf", limits);
}

std::string error_of(const std::string& file, const GgufLimits& limits = {}) {
  try {
    parse(file, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// GGML type ids (ggml.h): F32 0, F16 1, Q4_0 2, Q8_0 8, Q4_K 12, Q6_K 14, BF16 30.
constexpr std::uint32_t kF32 = 0, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14;

// A small llama-like file. Bytes by hand, from the GGML block layouts:
//   token_embd.weight  [64, 32] Q4_0: 64 × 32 / 32 = 64 blocks × 18 bytes = 1,152
//   blk.0.attn_q.weight [4, 256] Q4_K: 4 × 256 / 256 = 4 super-blocks × 144 bytes = 576
//   blk.0.ffn_down.weight [2, 512] Q6_K: 2 × 512 / 256 = 4 × 210 = 840
//   blk.0.attn_k.weight [16, 64] Q8_0: 16 × 64 / 32 = 32 blocks × 34 = 1,088
//   output_norm.weight [32] F32: 32 × 4 = 128
// in all 1,152 + 576 + 840 + 1,088 + 128 = 3,784 bytes.
W small_model(std::uint32_t version = 3) {
  W w(version);
  w.kv_string("general.architecture", "llama")
      .kv_u32("llama.context_length", 4096)
      .kv_u64("llama.block_count", 1)
      .tensor("token_embd.weight", {64, 32}, kQ4_0, 1152)
      .tensor("blk.0.attn_q.weight", {4, 256}, kQ4_K, 576)
      .tensor("blk.0.ffn_down.weight", {2, 512}, kQ6_K, 840)
      .tensor("blk.0.attn_k.weight", {16, 64}, kQ8_0, 1088)
      .tensor("output_norm.weight", {32}, kF32, 128);
  return w;
}

TEST(Gguf, BlockBytesOfEveryTypeCandleReads) {
  // Bytes per block from the block structs: scales (f16 d, m; f32 for Q8_K), quant bits, sums.
  const std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>> by_hand = {
      {"F32", 1, 4},
      {"F16", 1, 2},
      {"BF16", 1, 2},
      {"Q4_0", 32, 2 + 32 / 2},                         // d + 4-bit quants = 18
      {"Q4_1", 32, 2 + 2 + 32 / 2},                     // d, m = 20
      {"Q5_0", 32, 2 + 4 + 32 / 2},                     // d, 32 high bits = 22
      {"Q5_1", 32, 2 + 2 + 4 + 32 / 2},                 // = 24
      {"Q8_0", 32, 2 + 32},                             // = 34
      {"Q8_1", 32, 2 + 2 + 32},                         // d, s = 36
      {"Q2_K", 256, 256 / 16 + 256 / 4 + 4},            // scales, 2-bit quants, d, dmin = 84
      {"Q3_K", 256, 256 / 8 + 256 / 4 + 12 + 2},        // hmask, quants, scales, d = 110
      {"Q4_K", 256, 2 + 2 + 12 + 256 / 2},              // = 144
      {"Q5_K", 256, 2 + 2 + 12 + 256 / 8 + 256 / 2},    // = 176
      {"Q6_K", 256, 256 / 2 + 256 / 4 + 256 / 16 + 2},  // = 210
      {"Q8_K", 256, 4 + 256 + 256 / 16 * 2},            // f32 d, quants, bsums = 292
  };
  for (const auto& [name, elems, bytes] : by_hand) {
    auto t = ggml_type_named(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(t->block_elements, elems) << name;
    EXPECT_EQ(t->block_bytes, bytes) << name;
  }
  EXPECT_EQ(ggml_type_named("q4k")->name, "Q4_K");
  EXPECT_EQ(ggml_type_named("q8_0")->id, 8u);
  EXPECT_EQ(ggml_type_named("bf16")->id, 30u);
  EXPECT_FALSE(ggml_type_named("q3_x"));
  EXPECT_FALSE(ggml_type(4));  // Q4_2, removed from ggml
  // A row that is not a whole number of blocks is refused, as candle's QTensor refuses it.
  EXPECT_FALSE(ggml_bytes(*ggml_type_named("Q4_0"), 48, 96));
  EXPECT_EQ(ggml_bytes(*ggml_type_named("Q4_0"), 64, 128), 4u * 18u);
}

TEST(Gguf, ReadsTensorsShapesTypesAndExactBytes) {
  for (std::uint32_t version : {1u, 2u, 3u}) {
    SCOPED_TRACE(version);
    auto h = parse(small_model(version).file());
    EXPECT_EQ(h.version, version);
    EXPECT_EQ(h.architecture(), "llama");
    EXPECT_EQ(h.metadata_integer("llama.context_length"), 4096u);
    EXPECT_EQ(h.metadata_integer("llama.block_count"), 1u);
    ASSERT_EQ(h.tensors.size(), 5u);
    EXPECT_EQ(h.tensors[0].name, "token_embd.weight");
    EXPECT_THAT(h.tensors[0].shape, ElementsAre(64u, 32u));  // outermost first, as candle
    EXPECT_EQ(h.tensors[0].type.name, "Q4_0");
    EXPECT_EQ(h.tensors[0].bytes, 1152u);
    EXPECT_EQ(h.find("blk.0.attn_q.weight")->bytes, 576u);
    EXPECT_EQ(h.find("blk.0.ffn_down.weight")->bytes, 840u);
    EXPECT_EQ(h.find("blk.0.attn_k.weight")->bytes, 1088u);
    EXPECT_EQ(h.find("output_norm.weight")->bytes, 128u);
    EXPECT_EQ(h.find("output_norm.weight")->elements, 32u);
    EXPECT_EQ(h.tensor_bytes(), 3784u);
    EXPECT_EQ(h.data_offset % 32, 0u);
  }
}

TEST(Gguf, ReadsEveryMetadataTypeAndSkipsArrays) {
  W w;
  std::string v;
  W::put(v, 0xfe, 1);
  w.kv_raw("a.u8", W::U8, v);
  v.clear();
  W::put(v, 0xff, 1);
  w.kv_raw("a.i8", W::I8, v);  // -1
  v.clear();
  W::put(v, 0x8000, 2);
  w.kv_raw("a.i16", W::I16, v);  // -32768
  v.clear();
  W::put(v, 1, 1);
  w.kv_raw("a.bool", W::BOOL, v);
  v.clear();
  W::put(v, 0x3f800000, 4);
  w.kv_raw("a.f32", W::F32, v);
  v.clear();
  W::put(v, 0, 8);
  w.kv_raw("a.f64", W::F64, v);
  v.clear();
  W::put(v, static_cast<std::uint64_t>(-5), 8);
  w.kv_raw("a.i64", W::I64, v);
  // tokenizer.ggml.tokens: an array of 3 strings.
  v.clear();
  W::put(v, W::STRING, 4);
  w.len(v, 3);
  for (const char* s : {"<s>", "</s>", "hello"})
    w.str(v, s);
  w.kv_raw("tokenizer.ggml.tokens", W::ARRAY, v);
  // An array of two arrays of u16.
  v.clear();
  W::put(v, W::ARRAY, 4);
  w.len(v, 2);
  for (int i = 0; i < 2; ++i) {
    W::put(v, W::U16, 4);
    w.len(v, 2);
    W::put(v, 7, 2);
    W::put(v, 8, 2);
  }
  w.kv_raw("a.nested", W::ARRAY, v);
  w.kv_string("general.name", "tiny");
  w.tensor("w", {32}, kF32, 128);
  auto h = parse(w.file());
  EXPECT_EQ(h.metadata.at("a.u8"), "254");
  EXPECT_EQ(h.metadata.at("a.i8"), "-1");
  EXPECT_EQ(h.metadata.at("a.i16"), "-32768");
  EXPECT_EQ(h.metadata.at("a.bool"), "true");
  EXPECT_EQ(h.metadata.at("a.i64"), "-5");
  EXPECT_EQ(h.metadata.at("general.name"), "tiny");
  EXPECT_EQ(h.metadata.count("tokenizer.ggml.tokens"), 0u);
  EXPECT_FALSE(h.metadata_integer("a.i64"));
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].bytes, 128u);
}

TEST(Gguf, HonoursTheAlignment) {
  W w(3, 64);
  w.kv_u32("general.alignment", 64).tensor("a", {32}, kF32, 128).tensor("b", {8}, kF32, 32);
  auto h = parse(w.file());
  EXPECT_EQ(h.alignment, 64u);
  EXPECT_EQ(h.data_offset % 64, 0u);
  EXPECT_EQ(h.find("b")->offset, 128u);
  EXPECT_EQ(h.tensor_bytes(), 160u);
  W bad(3, 32);
  bad.kv_u32("general.alignment", 48);
  EXPECT_THAT(error_of(bad.file()), HasSubstr("general.alignment 48 (expected a power of two)"));
}

TEST(Gguf, RefusesWhatIsNotGguf) {
  EXPECT_THAT(error_of("GG"), HasSubstr("too short for the magic"));
  EXPECT_THAT(error_of(std::string("\x10\0\0\0\0\0\0\0{}", 10)),
              HasSubstr("model.gguf: offset 0: not a GGUF file"));
  std::string be = "GGUF" + std::string("\0\0\0\3", 4) + std::string(16, '\0');
  EXPECT_THAT(error_of(be), HasSubstr("offset 4: a big-endian GGUF file (version 3)"));
  std::string v4 = "GGUF" + std::string("\4\0\0\0", 4) + std::string(16, '\0');
  EXPECT_THAT(error_of(v4), HasSubstr("GGUF version 4 (expected 1, 2 or 3)"));
}

TEST(Gguf, EveryTruncationIsAnErrorNotACrash) {
  const std::string file = small_model().file();
  for (std::size_t n = 0; n < file.size(); ++n) {
    const std::string cut = file.substr(0, n);
    EXPECT_NE(error_of(cut), "(no error)") << n;
  }
  // A file cut inside the data section: the header reads, but the tensors run past its end.
  EXPECT_THAT(error_of(file.substr(0, file.size() - 1)), HasSubstr("run past the data section"));
}

TEST(Gguf, HostileCountsAndLengthsAreRefusedBeforeAllocating) {
  // 2^40 tensors in a 24-byte file.
  std::string f = "GGUF";
  W::put(f, 3, 4);
  W::put(f, std::uint64_t{1} << 40, 8);
  W::put(f, 0, 8);
  EXPECT_THAT(error_of(f), HasSubstr("offset 8: 1099511627776 tensors exceed the limit"));
  GgufLimits big;
  big.max_tensors = UINT64_MAX;
  EXPECT_THAT(error_of(f, big), HasSubstr("tensors cannot fit in a file of 24 bytes"));
  // A metadata count the file cannot hold.
  f = "GGUF";
  W::put(f, 3, 4);
  W::put(f, 0, 8);
  W::put(f, 1000, 8);
  EXPECT_THAT(error_of(f), HasSubstr("offset 16: 1000 metadata entries cannot fit"));
  // A key of 2^60 bytes.
  f = "GGUF";
  W::put(f, 3, 4);
  W::put(f, 0, 8);
  W::put(f, 1, 8);
  W::put(f, std::uint64_t{1} << 60, 8);
  f += std::string(16, 'k');
  EXPECT_THAT(error_of(f), HasSubstr("offset 24: a metadata key of 1152921504606846976 bytes "
                                     "exceeds the limit of 4096"));
  // A string value longer than the file.
  W w;
  std::string v;
  w.len(v, 1'000'000);
  v += "abc";
  w.kv_raw("s", W::STRING, v);
  EXPECT_THAT(error_of(w.file()), HasSubstr("string of 1000000 bytes runs past the end"));
  // An array of 2^50 u64 values.
  W a;
  v.clear();
  W::put(v, W::U64, 4);
  a.len(v, std::uint64_t{1} << 50);
  a.kv_raw("arr", W::ARRAY, v + std::string(32, '\0'));
  EXPECT_THAT(error_of(a.file()), HasSubstr("array of 1125899906842624 u64 values cannot fit"));
  // Arrays nested 9 deep.
  W n;
  v.clear();
  for (int i = 0; i < 9; ++i) {
    W::put(v, W::ARRAY, 4);
    n.len(v, 1);
  }
  W::put(v, W::U8, 4);
  n.len(v, 0);
  n.kv_raw("deep", W::ARRAY, v);
  EXPECT_THAT(error_of(n.file()), HasSubstr("arrays nested more than 8 deep"));
  // Unknown value types.
  W u;
  u.kv_raw("x", 13, "");
  EXPECT_THAT(error_of(u.file()), HasSubstr("unknown metadata value type 13 (expected 0 to 12)"));
  W b;
  v.clear();
  W::put(v, 2, 1);
  b.kv_raw("flag", W::BOOL, v);
  EXPECT_THAT(error_of(b.file()), HasSubstr("a bool of value 2"));
}

TEST(Gguf, RefusesBadTensorInfos) {
  EXPECT_THAT(error_of(W().tensor("t", {32}, 16, 64).file()),
              HasSubstr("tensor \"t\" has GGML type 16, not one candle reads (F32, F16, Q4_0"));
  // A row of 33 elements is not a whole number of Q4_0 blocks (32): candle refuses it.
  EXPECT_THAT(error_of(W().tensor("t", {3, 33}, kQ4_0, 64).file()),
              HasSubstr("tensor \"t\": row length 33 is not a multiple of Q4_0's block of 32"));
  EXPECT_THAT(error_of(W().tensor("t", {}, kF32, 0).file()),
              HasSubstr("tensor \"t\" has 0 dimensions (expected 1 to 4)"));
  EXPECT_THAT(error_of(W().tensor("t", {1, 1, 1, 1, 1}, kF32, 4).file()),
              HasSubstr("has 5 dimensions"));
  EXPECT_THAT(
      error_of(W().tensor("t", {std::uint64_t{1} << 40, std::uint64_t{1} << 40}, kF32, 4).file()),
      HasSubstr("more elements than any file"));
  EXPECT_THAT(error_of(W().tensor("t", {8}, kF32, 32).tensor("t", {8}, kF32, 32).file()),
              HasSubstr("tensor \"t\" appears twice"));
  // A tensor whose bytes (4 × 1024 × 4) are not in the file: the writer is told it holds 32.
  EXPECT_THAT(error_of(W().tensor("big", {4, 1024}, kF32, 32).file()),
              HasSubstr("tensor \"big\": 16384 bytes of F32 at offset 0 run past the data section "
                        "of 32 bytes"));
  // Two tensors sharing bytes: the second is said to start where the first does.
  W o;
  o.tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 64);
  EXPECT_THAT(error_of(o.file()), HasSubstr("overlaps"));
}

TEST(Gguf, ReadsOnlyTheHeaderOfAFileAndNamesIt) {
  const auto path = cg_test::scratch_path("small.gguf");
  {
    std::ofstream out(path, std::ios::binary);
    out << small_model().file();
  }
  auto h = read_gguf_header(path);
  EXPECT_EQ(h.tensor_bytes(), 3784u);
  EXPECT_EQ(h.origin, path.string());
  {
    std::ofstream out(path, std::ios::binary);
    out << "{\"not\": \"gguf\"}";
  }
  try {
    read_gguf_header(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string() + ": offset 0: not a GGUF file"));
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cg::checkpoint
