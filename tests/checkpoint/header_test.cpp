#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "checkpoint/safetensors_header.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "checkpoint_test_util.hpp"
#include "util/error.hpp"

namespace cg::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::raw_file;

SafetensorsHeader parse(const std::string& file, const HeaderLimits& limits = {}) {
  return parse_safetensors_header(file, file.size(), "model.safetensors", limits);
}

std::string error_of(const std::string& file, const HeaderLimits& limits = {}) {
  try {
    parse(file, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Header, ReadsTensorsSortedWithMetadata) {
  auto h = parse(raw_file(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("a":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})",
      32));
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].dtype, "BF16");
  EXPECT_THAT(h.tensors[1].shape, ElementsAre(2u, 3u));
  EXPECT_EQ(h.metadata.at("format"), "pt");
  ASSERT_NE(h.find("b"), nullptr);
  EXPECT_EQ(h.find("c"), nullptr);
}

TEST(Header, EveryDtypeHasItsSize) {
  const std::vector<std::pair<std::string, std::uint64_t>> cases = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2},
      {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},     {"U32", 4},     {"F32", 4},
      {"F64", 8},  {"I64", 8}, {"U64", 8},  {"C64", 8},     {"F8_E8M0", 1},
  };
  for (const auto& [dtype, size] : cases) {
    const std::string json = R"({"t":{"dtype":")" + dtype + R"(","shape":[3],"data_offsets":[0,)" +
                             std::to_string(3 * size) + "]}}";
    EXPECT_EQ(parse(raw_file(json, 3 * size)).tensors[0].dtype, dtype);
    // One byte short is a size error for every dtype.
    const std::string bad = R"({"t":{"dtype":")" + dtype + R"(","shape":[3],"data_offsets":[0,)" +
                            std::to_string(3 * size - 1) + "]}}";
    EXPECT_THAT(error_of(raw_file(bad, 3 * size - 1)),
                HasSubstr("needs " + std::to_string(3 * size)))
        << dtype;
  }
}

TEST(Header, SubByteDtypesCountBits) {
  // F4: 4 elements = 2 bytes; 3 elements = 12 bits, not a whole number of bytes.
  EXPECT_EQ(parse(raw_file(R"({"t":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", 2))
                .tensors[0]
                .shape[0],
            4u);
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2)),
              HasSubstr("not a whole number of bytes"));
  EXPECT_EQ(parse(raw_file(R"({"t":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}})", 3))
                .tensors.size(),
            1u);
}

TEST(Header, UnknownDtypeIsNamed) {
  EXPECT_EQ(error_of(raw_file(R"({"t":{"dtype":"F12","shape":[1],"data_offsets":[0,2]}})", 2)),
            R"(model.safetensors: tensor "t": unknown dtype "F12")");
}

TEST(Header, SizeMismatchMessageNamesFileTensorAndRule) {
  EXPECT_EQ(
      error_of(raw_file(
          R"({"model.embed.weight":{"dtype":"F32","shape":[4,4],"data_offsets":[0,10]}})", 10)),
      R"(model.safetensors: tensor "model.embed.weight": data_offsets [0, 10) hold 10 )"
      R"(bytes but shape [4, 4] of F32 needs 64)");
}

TEST(Header, ShapesMustBeNonNegativeIntegers) {
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})")),
              HasSubstr("shape entries must be non-negative integers"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}})")),
              HasSubstr("shape entries must be non-negative integers"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":"2","data_offsets":[0,0]}})")),
              HasSubstr("shape must be an array"));
  // Zero-sized and scalar tensors are valid.
  EXPECT_EQ(parse(raw_file(R"({"z":{"dtype":"F32","shape":[0,7],"data_offsets":[0,0]},)"
                           R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
                           4))
                .tensors.size(),
            2u);
}

TEST(Header, ShapeProductOverflowIsRejected) {
  EXPECT_THAT(error_of(raw_file(
                  R"({"t":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})")),
              HasSubstr("more bytes than any file holds"));
}

TEST(Header, MissingAndUnexpectedFields) {
  EXPECT_THAT(error_of(raw_file(R"({"t":{"shape":[1],"data_offsets":[0,1]}})", 1)),
              HasSubstr("tensor \"t\": missing dtype"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","data_offsets":[0,1]}})", 1)),
              HasSubstr("missing shape"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[1]}})", 1)),
              HasSubstr("missing data_offsets"));
  EXPECT_THAT(
      error_of(raw_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}})", 1)),
      HasSubstr("unexpected field \"x\""));
  EXPECT_THAT(error_of(raw_file(R"({"t":[1]})")), HasSubstr("tensor \"t\": expected an object"));
}

TEST(Header, DataOffsetsMustBeAPairWithinTheDataSection) {
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1)),
              HasSubstr("two non-negative integers"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1)),
              HasSubstr("two non-negative integers"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}})", 2)),
              HasSubstr("ends before it begins"));
  EXPECT_THAT(error_of(raw_file(R"({"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 3)),
              HasSubstr("exceeds the data section of 3 bytes"));
}

TEST(Header, OverlapsHolesAndTrailingBytesAreRejected) {
  EXPECT_THAT(error_of(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                6)),
              HasSubstr(R"(tensor "b": data_offsets [2, 6) overlap tensor "a" [0, 4))"));
  EXPECT_THAT(error_of(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6)),
              HasSubstr("leaving bytes [0, 2) of the data section unused"));
  EXPECT_THAT(error_of(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 5)),
              HasSubstr("tensors cover 4 of the 5 data bytes"));
}

TEST(Header, DuplicateTensorNamesAreRejected) {
  EXPECT_THAT(error_of(raw_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                                2)),
              HasSubstr("tensor \"a\" appears twice"));
}

TEST(Header, MetadataMustBeAStringMap) {
  EXPECT_THAT(error_of(raw_file(R"({"__metadata__":{"n":1}})")),
              HasSubstr("__metadata__ \"n\": values must be strings"));
  EXPECT_THAT(error_of(raw_file(R"({"__metadata__":[]})")), HasSubstr("__metadata__ must be"));
}

TEST(Header, TrailingSpacePaddingIsAllowedLeadingIsNot) {
  EXPECT_TRUE(parse(raw_file(R"({"__metadata__":{}}     )")).tensors.empty());
  EXPECT_THAT(error_of(raw_file(R"(  {})")), HasSubstr("must begin with '{'"));
}

TEST(Header, BadJsonAndNonObjects) {
  EXPECT_THAT(error_of(raw_file(R"({"a":)")), HasSubstr("header is not valid JSON"));
  EXPECT_THAT(error_of(raw_file(R"({"a":1} x)")), HasSubstr("header is not valid JSON"));
  EXPECT_THAT(error_of(raw_file("")), HasSubstr("must begin with '{'"));
}

TEST(Header, ShortFilesAndLengthsPastTheEnd) {
  EXPECT_EQ(error_of(std::string(5, '\0')),
            "model.safetensors: file of 5 bytes is too short for the 8-byte header length");
  std::string f = raw_file("{}");
  f[0] = 100;  // claims 100 header bytes, file holds 2
  EXPECT_THAT(error_of(f), HasSubstr("header length 100 runs past the end of the file (10 bytes)"));
}

TEST(Header, PrefixShorterThanTheAnnouncedHeaderIsAnError) {
  // The fuzzing entry point gets bytes and a file size separately; it must not read past `bytes`.
  const std::string full = raw_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1);
  try {
    parse_safetensors_header(full.substr(0, 20), full.size(), "x");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("only 12 of"));
  }
}

// Limits: one test per bound, each at the bound (accepted) and one past it (rejected).
TEST(HeaderLimits, HeaderCap) {
  HeaderLimits limits;
  limits.max_header_bytes = 16;
  EXPECT_NO_THROW(parse(raw_file("{}              "), limits));
  EXPECT_THAT(error_of(raw_file("{}               "), limits),
              HasSubstr("header length 17 exceeds the limit of 16 bytes"));
  // The default is the format's 100 MB cap, checked before anything is allocated.
  std::string f(16, '\0');
  const std::uint64_t n = 100'000'001;
  for (std::size_t i = 0; i < 8; ++i)
    f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  try {
    parse_safetensors_header(f, 1ull << 40, "big");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("exceeds the limit of 100000000 bytes"));
  }
}

TEST(HeaderLimits, MaxTensors) {
  HeaderLimits limits;
  limits.max_tensors = 2;
  const std::string two = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                          R"("b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  EXPECT_NO_THROW(parse(raw_file(two, 2), limits));
  const std::string three = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                            R"("b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                            R"("c":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})";
  EXPECT_THAT(error_of(raw_file(three, 3), limits), HasSubstr("more than 2 tensors"));
}

TEST(HeaderLimits, MaxDims) {
  HeaderLimits limits;
  limits.max_dims = 3;
  EXPECT_NO_THROW(
      parse(raw_file(R"({"t":{"dtype":"U8","shape":[1,1,1],"data_offsets":[0,1]}})", 1), limits));
  EXPECT_THAT(
      error_of(raw_file(R"({"t":{"dtype":"U8","shape":[1,1,1,1],"data_offsets":[0,1]}})", 1),
               limits),
      HasSubstr("shape has more than 3 dimensions"));
}

TEST(HeaderLimits, MaxNameLength) {
  HeaderLimits limits;
  limits.max_name_bytes = 8;
  EXPECT_NO_THROW(parse(
      raw_file(R"({"abcdefgh":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1), limits));
  EXPECT_THAT(
      error_of(raw_file(R"({"abcdefghi":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
               limits),
      HasSubstr("tensor name of 9 bytes exceeds the limit of 8"));
}

TEST(Writer, RoundTripsThroughTheReaderFromDisk) {
  const auto path = testing::scratch_dir() / "model.safetensors";
  write_safetensors(path, {{"w", "BF16", {4096, 4096}}, {"b", "F32", {4096}}, {"e", "F4", {6}}},
                    {{"format", "pt"}});
  const auto h = read_safetensors_header(path);
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.find("w")->end - h.find("w")->begin, 4096u * 4096u * 2u);
  EXPECT_EQ(h.find("e")->dtype, "F4");
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.header_bytes % 8, 0u);  // padded with spaces to 8 bytes
}

TEST(Writer, ReadingAFileReadsOnlyItsHeader) {
  // A header whose data section is a 1 GiB sparse hole: read_safetensors_header must not touch it.
  const auto path = testing::scratch_dir() / "big.safetensors";
  write_safetensors(path, {{"w", "F32", {1u << 28}}});
  EXPECT_EQ(read_safetensors_header(path).find("w")->end, 1ull << 30);
}

TEST(Reader, FileErrorsNameThePath) {
  const auto dir = testing::scratch_dir();
  try {
    read_safetensors_header(dir / "absent.safetensors");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("absent.safetensors: cannot read file"));
  }
  std::ofstream(dir / "short.safetensors") << "abc";
  EXPECT_THROW(
      {
        try {
          read_safetensors_header(dir / "short.safetensors");
        } catch (const InputError& e) {
          EXPECT_THAT(e.what(), HasSubstr("short.safetensors: file of 3 bytes is too short"));
          throw;
        }
      },
      InputError);
}

}  // namespace
}  // namespace cg::checkpoint
