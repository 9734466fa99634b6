// libFuzzer target for the CSV reader of problem.source csv:PATH (data/csv.hpp).
//
// The contract under test (docs/reliability.md): a table is either accepted, with at least one
// row and two columns, rows x cols finite values and a header of cols names or none, or refused
// with kpmap::InputError (exit code 2) whose message starts with the file's name. Anything else —
// another exception type, a crash, a sanitizer report, a hang — is a bug.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kpmap/core/error.hpp"
#include "kpmap/data/csv.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_csv: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const kpmap::CsvTable t = kpmap::parse_csv(text, "fuzz.csv");
    if (t.rows < 1 || t.cols < 2)
      fail("an accepted table is too small", std::to_string(t.rows) + " x " + std::to_string(t.cols));
    if (t.values.size() != static_cast<std::size_t>(t.rows * t.cols))
      fail("values are not rows x cols", text);
    if (!t.header.empty() && static_cast<long long>(t.header.size()) != t.cols)
      fail("header is not cols names", text);
    for (const double v : t.values) {
      if (!std::isfinite(v)) fail("an accepted value is not finite", text);
    }
  } catch (const kpmap::Error& e) {
    if (e.exit_code() != kpmap::exit_bad_input) fail("a bad table is not exit code 2", e.what());
    if (std::string(e.what()).rfind("fuzz.csv", 0) != 0) fail("a refusal does not name the file", e.what());
  } catch (const std::exception& e) {
    fail("an exception that is not kpmap::InputError", e.what());
  }
  return 0;
}
