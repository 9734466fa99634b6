// A strict reader of numeric CSV tables (data files, docs/decks.md "problem.source"): one row of
// numbers per line, separated by commas, with an optional header line of names. Every cell must
// be a finite number; anything else is refused with the line and the column. Needs neither Kokkos
// nor MPI at run time, so that the fuzz target (tests/fuzz) builds it alone.
#pragma once

#include <string>
#include <vector>

namespace kpmap {

struct CsvTable {
  std::vector<std::string> header;  // the names of the header line (empty without one)
  long long rows = 0;               // data lines
  long long cols = 0;               // cells per line
  std::vector<double> values;       // rows x cols, row-major
  double at(long long row, long long col) const { return values[static_cast<std::size_t>(row * cols + col)]; }
};

// Parses `text` (the contents of the file `name`, which messages start with). Rules:
// - lines end with \n or \r\n; lines holding only spaces and tabs are skipped;
// - cells are separated by ',' and trimmed of spaces and tabs; a cell is a number as strtod reads
//   it in the C locale (decimal, exponent, hexadecimal float), which must be finite;
// - the first line is a header when none of its cells is a number; a line that mixes names and
//   numbers there is refused at its first name;
// - every line has as many cells as the first; at least one data line and two columns.
// Throws InputError "NAME:LINE: column C[ (HEADER NAME)]: what is wrong (what is allowed)".
CsvTable parse_csv(const std::string& text, const std::string& name);

// parse_csv on the file's contents; InputError naming the path when it cannot be read.
CsvTable read_csv(const std::string& path);

}  // namespace kpmap
