// Transparent huge pages for the shard's X on Linux hosts (docs/performance.md, "Huge pages").
#pragma once

#include <cstddef>

namespace kpmap {

// Asks Linux to back the whole huge pages (2 MiB on x86-64) of [data, data + bytes) with
// transparent huge pages (madvise MADV_HUGEPAGE), to be called before the memory is first
// touched. X streams through the TLB once per step: with 4 KiB pages that is a page walk per
// 4 KiB read. Returns whether it asked: false where the environment sets KPMAP_HUGE_PAGES=0, on
// other operating systems, where the kernel has no transparent huge pages or has them `never`,
// where the range holds no whole huge page, or where madvise refuses. Never throws; the data and
// every result are the same either way.
bool advise_huge_pages(void* data, std::size_t bytes) noexcept;

}  // namespace kpmap
