#include "kpmap/config/deck.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

namespace kpmap::config {

namespace {

std::string mark_text(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return file;  // a default, or a value given with --set
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or npos. YAML text is Unicode, and the deck is
// echoed into JSON reports, which must be valid UTF-8.
size_t first_invalid_utf8(const std::string& text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = b[i];
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return i;
    if (len > 1 && (i + 1 >= n || b[i + 1] < lo || b[i + 1] > hi)) return i;
    for (size_t k = 2; k < len; ++k) {
      if (i + k >= n || b[i + k] < 0x80 || b[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string::npos;
}

std::string byte_hex(unsigned char c) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[c >> 4] + digits[c & 15];
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

// A copy without source marks: a --set value has no line in the deck, and the parser's marks
// (line 1 of the value text) would point at the deck's first line.
YAML::Node without_marks(const YAML::Node& n) {
  if (n.IsScalar()) return YAML::Node(n.Scalar());
  YAML::Node out(n.Type());
  if (n.IsSequence()) {
    for (const auto& item : n) out.push_back(without_marks(item));
  } else if (n.IsMap()) {
    for (const auto& kv : n) out[kv.first.Scalar()] = without_marks(kv.second);
  }
  return out;
}

void apply_override(YAML::Node root, const std::string& assignment) {
  if (const size_t bad = first_invalid_utf8(assignment); bad != std::string::npos) {
    throw InputError("--set: byte " + std::to_string(bad + 1) + " (" +
                     byte_hex(static_cast<unsigned char>(assignment[bad])) +
                     ") is not valid UTF-8 (allowed: UTF-8 text)");
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--set " + assignment + ": expected key.path=value");
  }
  const auto parts = split_path(assignment.substr(0, eq));
  if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
    throw InputError("--set " + assignment + ": empty component in key path");
  }
  YAML::Node value;
  try {
    value = without_marks(YAML::Load(assignment.substr(eq + 1)));
  } catch (const YAML::Exception& e) {
    throw InputError("--set " + assignment + ": value is not valid YAML: " + e.msg);
  }
  // Walk down with fresh handles (YAML::Node assignment would rebind, not descend).
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (next.IsDefined() && !next.IsMap() && !next.IsNull()) {
      throw InputError("--set " + assignment + ": '" + parts[i] + "' is not a map in the deck");
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = value;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

bool Interval::contains(double x) const {
  const bool above = lo_open ? x > lo : x >= lo;
  const bool below = hi_open ? x < hi : x <= hi;
  return above && below;
}

std::string Interval::str() const {
  std::ostringstream out;
  if (std::isinf(hi)) {
    out << (lo_open ? "> " : ">= ") << lo;
  } else if (std::isinf(lo)) {
    out << (hi_open ? "< " : "<= ") << hi;
  } else {
    out << (lo_open ? "(" : "[") << lo << ", " << hi << (hi_open ? ")" : "]");
  }
  return out.str();
}

std::string flow(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  return best;
}

YAML::Node load_deck(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the deck (no such file, or not readable)");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (const size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    const size_t newline = text.rfind('\n', bad);
    const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
    const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n') + 1;
    throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(bad - line_start + 1) +
                     ": byte " + byte_hex(static_cast<unsigned char>(text[bad])) +
                     " is not valid UTF-8 (allowed: a UTF-8 text file)");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(mark_text(path, e.mark) + ": malformed YAML: " + e.msg);
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw InputError(mark_text(path, root.Mark()) + ": the deck must be a YAML map");
  for (const auto& assignment : overrides) apply_override(root, assignment);
  return root;
}

Section::Section(YAML::Node node, std::string path, std::string file)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {
  if (!node_.IsMap()) return;
  // Every key is a plain name, once: yaml-cpp keeps a repeated key's first value only, which would
  // silently ignore what the user wrote last.
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {
      fail_at(kv.first, "", "a key must be a plain name, got '" + flow(kv.first) + "'");
    }
    const auto [first, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
    if (!fresh) {
      fail_at(kv.first, kv.first.Scalar(),
              "duplicate key (first given at " + mark_text(file_, first->second) + "; allowed: once)");
    }
  }
}

std::string Section::key_path(const std::string& key) const {
  if (key.empty()) return path_.empty() ? "(deck)" : path_;
  return path_.empty() ? key : path_ + "." + key;
}

std::string Section::where(const std::string& key) const {
  const YAML::Node n = key.empty() || !has(key) ? node_ : node_[key];
  return mark_text(file_, n.Mark()) + ": " + key_path(key);
}

void Section::fail(const std::string& key, const std::string& what) const {
  throw InputError(where(key) + ": " + what);
}

void Section::fail_at(const YAML::Node& node, const std::string& item, const std::string& what) const {
  throw InputError(mark_text(file_, node.Mark()) + ": " + key_path(item) + ": " + what);
}

bool Section::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}

Section Section::section(const std::string& key) {
  read_.insert(key);
  if (!has(key)) return Section(YAML::Node(YAML::NodeType::Map), key_path(key), file_);
  YAML::Node n = node_[key];
  if (!n.IsMap()) fail(key, "expected a map of keys, got '" + flow(n) + "'");
  return Section(n, key_path(key), file_);
}

std::string Section::scalar(const std::string& key, const char* expected) {
  const YAML::Node n = node_[key];
  if (!n.IsScalar()) fail(key, std::string("expected ") + expected + ", got '" + flow(n) + "'");
  return n.Scalar();
}

std::string Section::string(const std::string& key, const std::string& fallback) {
  read_.insert(key);
  return has(key) ? scalar(key, "a string") : fallback;
}

std::string Section::choice(const std::string& key, const std::string& fallback,
                            const std::vector<std::string>& allowed,
                            const std::vector<std::string>& not_yet) {
  const std::string value = string(key, fallback);
  const auto in = [&value](const std::vector<std::string>& set) {
    return std::find(set.begin(), set.end(), value) != set.end();
  };
  if (in(allowed)) return value;
  if (in(not_yet)) {
    fail(key, "'" + value + "' is not available in this build yet (allowed: " + join(allowed) + ")");
  }
  const std::string hint = closest(value, allowed);
  fail(key, "'" + value + "' is not allowed (allowed: " + join(allowed) + ")" +
                (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
}

long long Section::integer(const std::string& key, long long fallback, long long min, long long max) {
  read_.insert(key);
  if (!has(key)) return fallback;
  const std::string text = scalar(key, "an integer");
  long long value = 0;
  size_t used = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::out_of_range&) {
    fail(key, text + " is out of range (allowed: a 64-bit integer, at most " +
                  std::to_string(std::numeric_limits<long long>::max()) + ")");
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) fail(key, "'" + text + "' is not an integer");
  if (value < min || value > max) {
    fail(key, std::to_string(value) + " is out of range (allowed: " +
                  (max == unbounded ? ">= " + std::to_string(min)
                                    : "[" + std::to_string(min) + ", " + std::to_string(max) + "]") +
                  ")");
  }
  return value;
}

double Section::number(const std::string& key, double fallback, double min, double max) {
  return number(key, fallback, Interval{min, max});
}

double Section::number(const std::string& key, double fallback, const Interval& allowed) {
  read_.insert(key);
  if (!has(key)) return fallback;
  const std::string text = scalar(key, "a number");
  double value = 0;
  try {
    value = node_[key].as<double>();
  } catch (const YAML::Exception&) {
    fail(key, "'" + text + "' is not a number");
  }
  if (!std::isfinite(value)) fail(key, "'" + text + "' is not a finite number");
  if (!allowed.contains(value)) fail(key, text + " is out of range (allowed: " + allowed.str() + ")");
  return value;
}

bool Section::boolean(const std::string& key, bool fallback) {
  read_.insert(key);
  if (!has(key)) return fallback;
  const std::string text = scalar(key, "true or false");
  bool value = false;
  if (!YAML::convert<bool>::decode(node_[key], value)) fail(key, "'" + text + "' is not true or false");
  return value;
}

YAML::Node Section::raw(const std::string& key) {
  read_.insert(key);
  return node_[key];
}

void Section::finish() const {
  if (!node_.IsMap()) return;
  std::vector<std::string> known(read_.begin(), read_.end());
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (read_.count(key)) continue;
    const std::string hint = closest(key, known);
    throw InputError(mark_text(file_, kv.first.Mark()) + ": " + key_path(key) + ": unknown key" +
                     (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (known here: " +
                     join(known, ", ") + ")");
  }
}

}  // namespace kpmap::config
