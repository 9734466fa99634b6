// libFuzzer target for the deck parser: load_config() on hostile decks and --set overrides.
//
// Input: the deck's bytes up to the first NUL; each further NUL-separated piece is one
// `--set key.path=value` override. The rank count (1-4) comes from the input's length, so a
// mesh section meets more than one world size.
//
// The contract under test (docs/reliability.md): a deck is either accepted, with a resolved echo
// that serialises to JSON, or refused with kpmap::InputError (exit code 2). Anything else — another
// exception type, a crash, a sanitizer report, a hang — is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kpmap/config/config.hpp"
#include "kpmap/core/error.hpp"

namespace {

const std::string& deck_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/kpmap_fuzz_deck." +
           std::to_string(::getpid()) + ".yaml";
  }();
  return path;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_deck: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> pieces;
  std::size_t begin = 0;
  while (true) {
    const std::size_t nul = input.find('\0', begin);
    pieces.push_back(input.substr(begin, nul == std::string::npos ? std::string::npos : nul - begin));
    if (nul == std::string::npos) break;
    begin = nul + 1;
  }
  {
    std::ofstream out(deck_path(), std::ios::binary | std::ios::trunc);
    out << pieces.front();
  }
  const std::vector<std::string> overrides(pieces.begin() + 1, pieces.end());
  const int ranks = 1 + static_cast<int>(size % 4);
  try {
    const kpmap::Config config = kpmap::load_config(deck_path(), overrides, ranks);
    (void)config.resolved.dump();  // the echo goes into every report
  } catch (const kpmap::Error& e) {
    if (e.exit_code() != kpmap::exit_bad_input) fail("a bad deck is not exit code 2", e.what());
  } catch (const std::exception& e) {
    fail("an exception other than kpmap::InputError escaped", e.what());
  } catch (...) {
    fail("a non-std exception escaped", "");
  }
  return 0;
}
