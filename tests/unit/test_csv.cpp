// The CSV reader (data/csv.hpp): the values it returns and the place every refusal names.
#include <gtest/gtest.h>

#include <string>

#include "kpmap/core/error.hpp"
#include "kpmap/data/csv.hpp"

namespace {

// The InputError message parse_csv throws for `text` ("" when it accepts it).
std::string refusal(const std::string& text) {
  try {
    kpmap::parse_csv(text, "t.csv");
  } catch (const kpmap::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Csv, ValuesWithHeaderInRowMajorOrder) {
  const auto t = kpmap::parse_csv("a,b,y\r\n0.5, -1.25 ,3\n\n  \n0x1p-3,1e2,-0\n", "t.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b", "y"}));
  ASSERT_EQ(t.rows, 2);
  ASSERT_EQ(t.cols, 3);
  EXPECT_EQ(t.values, (std::vector<double>{0.5, -1.25, 3.0, 0.125, 100.0, -0.0}));
  EXPECT_EQ(t.at(1, 0), 0.125);
}

TEST(Csv, NoHeaderWhenTheFirstLineHoldsNumbers) {
  const auto t = kpmap::parse_csv("1,2\n3,4", "t.csv");
  EXPECT_TRUE(t.header.empty());
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 3, 4}));
}

TEST(Csv, RefusalsNameLineAndColumn) {
  EXPECT_EQ(refusal("x,y\n1,2\n3,abc\n"),
            "t.csv:3: column 2 ('y'): 'abc' is not a number (allowed: a finite number)");
  EXPECT_EQ(refusal("1,2\n3,\n"), "t.csv:2: column 2: empty cell (allowed: a finite number)");
  EXPECT_EQ(refusal("1,2,3\n4,5\n"),
            "t.csv:2: column 3: 2 cells where line 1 has 3 (allowed: the same number of "
            "cells on every line)");
  EXPECT_EQ(refusal("1,2\n4,5,6\n"),
            "t.csv:2: column 3: 3 cells where line 1 has 2 (allowed: the same number of "
            "cells on every line)");
  EXPECT_EQ(refusal("1,inf\n"), "t.csv:1: column 2: 'inf' is not finite (allowed: a finite number)");
  EXPECT_EQ(refusal("1,NaN\n"), "t.csv:1: column 2: 'NaN' is not finite (allowed: a finite number)");
  EXPECT_EQ(refusal("1,1e999\n"), "t.csv:1: column 2: '1e999' is not finite (allowed: a finite number)");
  EXPECT_EQ(
      refusal("x,2\n"),
      "t.csv:1: column 1: 'x' is not a number (allowed: a finite number; a header line holds names only)");
  EXPECT_EQ(refusal("1,2\n3,\"4\"\n"),
            "t.csv:2: column 2: '\"4\"' is not a number (allowed: a finite number)");
  EXPECT_EQ(refusal("a,b\n"), "t.csv:1: no data lines (allowed: at least one line of numbers)");
  EXPECT_EQ(refusal(""), "t.csv: no data lines (allowed: at least one line of numbers)");
  EXPECT_EQ(refusal("1\n2\n"), "t.csv:1: 1 column (allowed: at least two: the features, then y)");
  EXPECT_EQ(refusal(std::string("1,2\n3,\x01\xff\n")),
            "t.csv:2: column 2: '\\x01\\xff' is not a number (allowed: a finite number)");
}

TEST(Csv, MissingFile) {
  try {
    kpmap::read_csv("/nonexistent/kpmap.csv");
    FAIL() << "no error";
  } catch (const kpmap::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/kpmap.csv: cannot open the CSV file (No such file or directory)");
  }
}

}  // namespace
