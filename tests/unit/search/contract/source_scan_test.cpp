#include "contract/source_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace kd::search {
namespace {

TEST(StripComments, BlanksCommentsAndLiteralsButKeepsLinesAndExternC) {
  const std::string src = "a // qqq\nb /* www\nz */ c \"str\" 'q' extern \"C\" R\"d(raw \" )d\" 1'000\n";
  const std::string out = strip_comments(src, StringLiterals::blank);
  ASSERT_EQ(out.size(), src.size());
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  EXPECT_EQ(out.find("qqq"), std::string::npos);
  EXPECT_EQ(out.find("www"), std::string::npos);
  EXPECT_EQ(out.find("str"), std::string::npos);
  EXPECT_EQ(out.find("raw"), std::string::npos);
  EXPECT_NE(out.find("extern \"C\""), std::string::npos);
  EXPECT_NE(out.find(" c "), std::string::npos);
  EXPECT_NE(out.find("1'000"), std::string::npos);
}

TEST(StripComments, KeepModeKeepsLiterals) {
  EXPECT_EQ(strip_comments("#include \"x.h\" // c", StringLiterals::keep), "#include \"x.h\"     ");
}

TEST(StripComments, LineCommentContinuesOverBackslashNewline) {
  const std::string out = strip_comments("// a \\\nhidden\nseen", StringLiterals::blank);
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_NE(out.find("seen"), std::string::npos);
}

TEST(Tokenize, MarksDirectivesAndLines) {
  const auto tokens = tokenize("#define X \\\n  y\nint z;\n");
  ASSERT_GE(tokens.size(), 6u);
  EXPECT_TRUE(tokens[0].in_directive);
  EXPECT_EQ(tokens[3].text, "y");
  EXPECT_TRUE(tokens[3].in_directive);
  EXPECT_EQ(tokens[3].line, 2u);
  EXPECT_EQ(tokens[4].text, "int");
  EXPECT_FALSE(tokens[4].in_directive);
  EXPECT_EQ(tokens[4].line, 3u);
}

}  // namespace
}  // namespace kd::search
