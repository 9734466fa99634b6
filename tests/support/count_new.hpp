// A counting global operator new for the tests that assert "no heap allocation": include it in
// exactly one source file of a test binary (it replaces operator new for the whole binary) and
// read kpmap::test::heap_allocations.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace kpmap::test {
inline std::atomic<long> heap_allocations{0};
}  // namespace kpmap::test

// GCC flags free() on what operator new returned; here both sides are malloc/free.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
// (nvcc makes a replacement operator new host and device: the counting is host-only.)
void* operator new(std::size_t n) {
  void* p = std::malloc(n ? n : 1);
#if !defined(__CUDA_ARCH__)
  ++kpmap::test::heap_allocations;
  if (p == nullptr) throw std::bad_alloc();
#endif
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
