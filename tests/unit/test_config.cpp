// The deck loader's contract: every bad deck is an InputError whose message names the file,
// the line, the key path and what is allowed.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kpmap/config/config.hpp"
#include "kpmap/core/error.hpp"

namespace {

std::string write_deck(const std::string& name, const std::string& text) {
  const std::string path = std::string(KPMAP_TEST_TMPDIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The message of the InputError that loading `text` raises ("" when it loads).
std::string load_error(const std::string& text, std::vector<std::string> overrides = {}, int ranks = 4) {
  const auto path = write_deck("deck.yaml", text);
  try {
    kpmap::load_config(path, overrides, ranks);
  } catch (const kpmap::InputError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

TEST(Config, MissingFileNamesThePath) {
  try {
    kpmap::load_config("/nonexistent/deck.yaml", {}, 1);
    FAIL() << "no error";
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/deck.yaml: cannot open"), std::string::npos) << e.what();
  }
}

TEST(Config, MalformedYamlNamesFileAndLine) {
  const auto msg = load_error("mode: info\nmesh: {axes: {data: 2\nfoo: [1, 2\n");
  EXPECT_NE(msg.find("deck.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed YAML"), std::string::npos) << msg;
  // The parser stops at line 3 or later (after the unclosed brace), never at line 1.
  EXPECT_EQ(msg.find("deck.yaml:1:"), std::string::npos) << msg;
}

TEST(Config, UnknownModeListsTheAllowedOnesAndSuggests) {
  const auto msg = load_error("mesh: {axes: {data: 4}}\nmode: colectives\n");
  EXPECT_NE(msg.find("deck.yaml:2:7: mode: 'colectives' is not allowed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train | collectives | bench | info"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'collectives'"), std::string::npos) << msg;
}

TEST(Config, UnknownKeySuggestsTheClosest) {
  const auto msg = load_error("mode: info\nouput: {every: 3}\n");
  EXPECT_NE(msg.find("deck.yaml:2:1: ouput: unknown key; did you mean 'output'?"), std::string::npos) << msg;
}

TEST(Config, MeshProductMustMatchRanks) {
  const auto msg = load_error("mode: info\nmesh: {axes: {data: 3, model: 1}}\n", {}, 4);
  EXPECT_NE(msg.find("mesh.axes: product 3 != 4 ranks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("deck.yaml:2:"), std::string::npos) << msg;
}

TEST(Config, AtMostOneInferredAxis) {
  const auto msg = load_error("mode: info\nmesh: {axes: {data: -1, model: -1}}\n");
  EXPECT_NE(msg.find("'data' and 'model' are both -1"), std::string::npos) << msg;
}

TEST(Config, InferredAxisAndOrderAreKept) {
  const auto path = write_deck("ok.yaml", "mode: info\nmesh: {axes: {model: 2, data: -1}}\n");
  const auto c = kpmap::load_config(path, {}, 4);
  ASSERT_EQ(c.mesh.axes.size(), 2u);
  EXPECT_EQ(c.mesh.axes[0].name, "model");
  EXPECT_EQ(c.mesh.axes[0].size, 2);
  EXPECT_EQ(c.mesh.axes[1].name, "data");
  EXPECT_EQ(c.mesh.axes[1].size, 2);
  EXPECT_EQ(c.resolved["mesh"]["axes"].begin().key(), "model");
}

TEST(Config, WrongTypeNamesKeyAndValue) {
  const auto msg = load_error("mode: info\noutput: {every: often}\n");
  EXPECT_NE(msg.find("deck.yaml:2:17: output.every: 'often' is not an integer"), std::string::npos) << msg;
}

TEST(Config, SetOverridesAndValidatesLikeTheDeck) {
  const auto path = write_deck("set.yaml", "mode: info\noutput: {every: 3}\n");
  const auto c = kpmap::load_config(path, {"output.every=7", "mesh.axes.data=4"}, 4);
  EXPECT_EQ(c.output.every, 7);
  EXPECT_EQ(c.mesh.axes[0].size, 4);
  const auto msg = load_error("mode: info\n", {"output.evry=7"});
  EXPECT_NE(msg.find("output.evry: unknown key; did you mean 'every'?"), std::string::npos) << msg;
  const auto bad = load_error("mode: info\n", {"output.every"});
  EXPECT_NE(bad.find("--set output.every: expected key.path=value"), std::string::npos) << bad;
}

}  // namespace
