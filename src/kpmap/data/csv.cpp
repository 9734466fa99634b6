#include "kpmap/data/csv.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kpmap/core/error.hpp"

namespace kpmap {

namespace {

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = line.find(',', begin);
    cells.push_back(trim(line.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin)));
    if (comma == std::string::npos) return cells;
    begin = comma + 1;
  }
}

enum class Cell { number, empty, text, not_finite };

// The whole cell must be one number; strtod's ERANGE on overflow gives an infinity.
Cell parse_number(const std::string& cell, double& value) {
  if (cell.empty()) return Cell::empty;
  if (cell.find('\0') != std::string::npos) return Cell::text;
  errno = 0;
  char* end = nullptr;
  value = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size()) return Cell::text;
  return std::isfinite(value) ? Cell::number : Cell::not_finite;
}

// A cell quoted in a message: at most 40 bytes, control and non-ASCII bytes escaped.
std::string quoted(const std::string& cell) {
  std::string out = "'";
  for (std::size_t i = 0; i < cell.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(cell[i]);
    if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + (cell.size() > 40 ? "...'" : "'");
}

class Parser {
 public:
  explicit Parser(const std::string& name) : name_(name) {}

  [[noreturn]] void fail(long long line, long long col, const std::string& what) const {
    std::string where = name_ + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": ";
    if (col > 0) {
      where += "column " + std::to_string(col);
      const auto c = static_cast<std::size_t>(col - 1);
      if (c < table_.header.size() && !table_.header[c].empty())
        where += " (" + quoted(table_.header[c]) + ")";
      where += ": ";
    }
    throw InputError(where + what);
  }

  void line(const std::string& raw, long long number) {
    const std::string text = !raw.empty() && raw.back() == '\r' ? raw.substr(0, raw.size() - 1) : raw;
    if (trim(text).empty()) return;
    const std::vector<std::string> cells = split_cells(text);
    const auto n = static_cast<long long>(cells.size());
    const bool first = !seen_first_;
    if (first) {
      seen_first_ = true;
      first_line_ = number;
      table_.cols = n;
      std::size_t names = 0;
      double v = 0;
      for (const auto& c : cells) names += parse_number(c, v) == Cell::number ? 0 : 1;
      if (names == cells.size()) {
        table_.header = cells;
        return;
      }
    } else if (n != table_.cols) {
      fail(number, n < table_.cols ? n + 1 : table_.cols + 1,
           std::to_string(n) + (n == 1 ? " cell" : " cells") + " where line " + std::to_string(first_line_) +
               " has " + std::to_string(table_.cols) + " (allowed: the same number of cells on every line)");
    }
    for (long long j = 0; j < n; ++j) {
      const std::string& c = cells[static_cast<std::size_t>(j)];
      double v = 0;
      switch (parse_number(c, v)) {
        case Cell::number:
          break;
        case Cell::empty:
          fail(number, j + 1, "empty cell (allowed: a finite number)");
        case Cell::not_finite:
          fail(number, j + 1, quoted(c) + " is not finite (allowed: a finite number)");
        case Cell::text:
          fail(number, j + 1,
               quoted(c) + " is not a number (allowed: a finite number" +
                   (first ? "; a header line holds names only" : "") + ")");
      }
      table_.values.push_back(v);
    }
    ++table_.rows;
  }

  CsvTable finish(long long lines) {
    if (table_.rows == 0) fail(lines, 0, "no data lines (allowed: at least one line of numbers)");
    if (table_.cols < 2) {
      fail(first_line_, 0,
           std::to_string(table_.cols) + " column (allowed: at least two: the features, then y)");
    }
    return std::move(table_);
  }

 private:
  std::string name_;
  CsvTable table_;
  bool seen_first_ = false;
  long long first_line_ = 0;
};

}  // namespace

CsvTable parse_csv(const std::string& text, const std::string& name) {
  Parser parser(name);
  long long number = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    parser.line(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin), ++number);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return parser.finish(number);
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the CSV file (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read the CSV file");
  return parse_csv(text.str(), path);
}

}  // namespace kpmap
