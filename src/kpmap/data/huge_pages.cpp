#include "kpmap/data/huge_pages.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kpmap {

#if defined(__linux__) && defined(MADV_HUGEPAGE)
namespace {

constexpr const char* thp = "/sys/kernel/mm/transparent_hugepage/";

// The transparent huge page size, 0 where the kernel has them `never`, has none, or its files
// cannot be read.
std::uintptr_t huge_page_bytes() noexcept {
  try {
    std::ifstream enabled(std::string(thp) + "enabled");
    std::string mode;
    if (!std::getline(enabled, mode) || mode.find("[never]") != std::string::npos) return 0;
    std::ifstream size(std::string(thp) + "hpage_pmd_size");
    unsigned long long bytes = 0;
    if (!(size >> bytes) || bytes == 0 || (bytes & (bytes - 1)) != 0) bytes = 2ull << 20;
    return static_cast<std::uintptr_t>(bytes);
  } catch (...) {
    return 0;
  }
}

}  // namespace
#endif

bool advise_huge_pages(void* data, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const char* setting = std::getenv("KPMAP_HUGE_PAGES");
  if (setting != nullptr && std::strcmp(setting, "0") == 0) return false;
  static const std::uintptr_t page = huge_page_bytes();
  if (page == 0 || data == nullptr) return false;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) & ~(page - 1), last = (begin + bytes) & ~(page - 1);
  if (last <= first) return false;
  return madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) == 0;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace kpmap
