// Reading a YAML deck with the key path, file and line of every value at hand, so that every
// message names them. Internal to the config layer (the only user of yaml-cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kpmap/core/error.hpp"

namespace kpmap::config {

// Loads `path` and applies `--set key.path=value` overrides (value parsed as YAML).
// Throws InputError naming the file and line (missing file, malformed YAML, bad override).
YAML::Node load_deck(const std::string& path, const std::vector<std::string>& overrides);

// The allowed values of a real key: [lo, hi], with either end open; infinite ends are unbounded.
struct Interval {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;

  bool contains(double x) const;
  std::string str() const;  // "> 0", ">= 0", "[0, 1)", ...
};

// No upper bound for Section::integer.
inline constexpr long long unbounded = std::numeric_limits<long long>::max();

// A map in the deck, read key by key. Every key read is remembered; finish() rejects the rest
// with a "did you mean" suggestion.
class Section {
 public:
  Section(YAML::Node node, std::string path, std::string file);

  bool has(const std::string& key) const;
  Section section(const std::string& key);  // a nested map; an absent key reads as empty
  std::string string(const std::string& key, const std::string& fallback);
  // One of `allowed`. A value in `not_yet` is part of the schema but not implemented: it is
  // rejected with a message that says so (never silently accepted or ignored).
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed,
                     const std::vector<std::string>& not_yet = {});
  long long integer(const std::string& key, long long fallback, long long min, long long max);
  double number(const std::string& key, double fallback, double min, double max);
  double number(const std::string& key, double fallback, const Interval& allowed);  // finite
  bool boolean(const std::string& key, bool fallback);
  YAML::Node raw(const std::string& key);  // for shapes the helpers above do not cover

  // Throws InputError for every key of this map that nobody read.
  void finish() const;

  // "deck.yaml:3:7: train.lr" for the value under `key` (or the map itself when key is empty).
  std::string where(const std::string& key = "") const;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // The same at a value inside the one under a key (a list element): `item` names it after this
  // section's path ("dtypes[1]" gives "deck.yaml:4:19: bench.dtypes[1]: ...").
  [[noreturn]] void fail_at(const YAML::Node& node, const std::string& item, const std::string& what) const;

  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

 private:
  std::string key_path(const std::string& key) const;
  std::string scalar(const std::string& key, const char* expected);

  YAML::Node node_;
  std::string path_;
  std::string file_;
  std::set<std::string> read_;
};

// A value as one line of YAML ("[1, 2]", "{a: 1}"), for messages.
std::string flow(const YAML::Node& node);

// "a | b | c"
std::string join(const std::vector<std::string>& words, const std::string& separator = " | ");

// The closest of `candidates` to `word` by edit distance, or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace kpmap::config
