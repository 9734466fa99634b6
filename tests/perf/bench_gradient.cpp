// Bytes of X read per second by each gradient path (fused, team, kokkos_kernels) next to a STREAM-like
// read of the same X, for fp64, fp32 and 16-bit storage (bf16, fp16: LinearModel<S, float>), on a
// problem several times the last-level cache.
//
//   OMP_NUM_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads build/default/tests/perf/bench_gradient
//   [--x_mib=1024] [--features=256[,N...]] [--keep_x] [benchmark flags]
//
// Every benchmark is registered once per width in --features (its name ends in /<features>), so
// one run with --benchmark_enable_random_interleaving=true interleaves the stream read and the
// kernels at every width. --keep_x keeps every X built alive (x_mib per type, layout and width)
// instead of building one at a time, so that interleaving does not rebuild X at every switch.
//
// Counters: GBps = 1e9 bytes of X per second (X only: y, w and the gradient are ~1/F of it);
// of_stream = GBps / the stream_read GBps measured on the same View in the same run, except in
// the fused_paired rows, which time a stream read and a fused call back to back in every
// iteration and give the median of the per-pair ratios (see paired). Where the fused kernel runs
// its AVX2 or AVX-512 version (model/host_isa.hpp; context host_isa), fused_paired_baseline rows
// time its baseline SSE2 loops the same way, and where it runs the AVX-512 version,
// fused_paired_avx2 rows its AVX2 version (the same loops as fused_paired where the AVX-512
// version runs the AVX2 one: fp32 rows below 2048 features, fp64 below 512, fp16).
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kpmap/core/half.hpp"
#include "kpmap/data/shard.hpp"
#include "kpmap/model/host_isa.hpp"
#include "kpmap/model/linear_model.hpp"
#include "quantile.hpp"

namespace {

long long x_mib = 1024;                    // size of X per benchmark; lscpu: 300 MiB L3 on the reference machine
std::vector<long long> feature_list{256};  // columns of X, one set of benchmarks per width
bool keep_x = false;

// X is built on first use for a (type, layout, width). Without --keep_x one X at a time is alive
// (1 GiB each): building one frees the previous one.
std::vector<std::function<void()>> free_shards;

template <class T, class Layout>
const kpmap::Shard<T, Layout>& shard(long long features) {
  static std::map<long long, std::unique_ptr<kpmap::Shard<T, Layout>>> cached;
  auto& s = cached[features];
  if (!s) {
    if (!keep_x) {
      for (auto& free_one : free_shards) free_one();
      free_shards.clear();
    }
    free_shards.push_back([features] { cached.erase(features); });
    const long long rows = x_mib * 1024 * 1024 / (features * static_cast<long long>(sizeof(T)));
    const kpmap::SyntheticProblem p{rows, features, true, 0.1, 2024};
    s = std::make_unique<kpmap::Shard<T, Layout>>(
        kpmap::make_shard<T, Layout>(kpmap::execution_space(), p, kpmap::make_batch_plan(rows, rows, 0, 1), {0, features}));
  }
  return *s;
}

std::map<std::string, double> stream_gbps;  // by "type/layout/features"

// The word the stream read adds: the element itself for fp64 and fp32; for 16-bit types a
// 32-bit word holding two elements, loaded with memcpy (a plain load, well-defined for any
// object), so the read does the same work per byte as fp32's and no conversion.
template <class T, class = void>
struct StreamWord {
  using type = T;
  KOKKOS_INLINE_FUNCTION static T load(const T* p, long long i) { return p[i]; }
};
template <class H>
struct StreamWord<H, std::enable_if_t<kpmap::is_half<H>::value>> {
  using type = std::uint32_t;
  KOKKOS_INLINE_FUNCTION static std::uint32_t load(const H* p, long long i) {
    std::uint32_t word;
    std::memcpy(&word, p + 2 * i, sizeof word);
    return word;
  }
};

// A read-only reduction over every word: each work item sums a chunk into `lanes` register
// accumulators (independent adds the compiler vectorises), so the loop is limited by memory, not
// by the latency of one dependent add. An array reducer carries the lanes across threads.
template <class T>
struct StreamSum {
  using Word = typename StreamWord<T>::type;
  static constexpr int lanes = 64 / sizeof(Word);
  enum : long long { chunk = 4096 };  // words per work item, a multiple of lanes
  using value_type = Word[];
  using size_type = std::size_t;
  size_type value_count = lanes;
  const T* x = nullptr;
  long long words = 0;

  KOKKOS_INLINE_FUNCTION void operator()(long long c, value_type sum) const {
    const long long end = (c + 1) * chunk < words ? (c + 1) * chunk : words;
    const T* KOKKOS_RESTRICT p = x;
    Word part[lanes] = {};
    long long i = c * chunk;
    for (; i + lanes <= end; i += lanes) {
      for (int k = 0; k < lanes; ++k) part[k] += StreamWord<T>::load(p, i + k);
    }
    for (int k = 0; i + k < end; ++k) part[k] += StreamWord<T>::load(p, i + k);
    for (int k = 0; k < lanes; ++k) sum[k] += part[k];
  }
  KOKKOS_INLINE_FUNCTION void init(value_type sum) const {
    for (int k = 0; k < lanes; ++k) sum[k] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type dst, const value_type src) const {
    for (int k = 0; k < lanes; ++k) dst[k] += src[k];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile Word* dst, const volatile Word* src) const {
    for (int k = 0; k < lanes; ++k) dst[k] += src[k];
  }
#endif
};

// On a device: one word per work item, so that neighbouring threads read neighbouring words
// (coalesced loads); StreamSum's chunk per work item suits a CPU thread and not a warp. X is read
// through a pointer to its words (for 16-bit storage, 32-bit integers over the same bytes, which
// start at X's aligned allocation), so a GPU loads each word with one 4-byte load (StreamWord's
// memcpy from a 2-byte-aligned pointer compiles to narrower loads there). Reading 16-bit objects
// as integers is outside the aliasing rules; it is deliberate: only the time counts, not the sum.
template <class Word>
struct StreamSumFlat {
  using value_type = Word;
  const Word* x = nullptr;
  KOKKOS_INLINE_FUNCTION void operator()(long long i, Word& sum) const { sum += x[i]; }
};

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, kpmap::bf16>) return "bf16";
  if constexpr (std::is_same_v<T, kpmap::fp16>) return "fp16";
  return sizeof(T) == 8 ? "fp64" : "fp32";
}
// The trainer's pairing: 16-bit storage accumulates in float, the others in their own type.
template <class T>
using acc_t = std::conditional_t<kpmap::is_half<T>::value, float, T>;
template <class Layout>
std::string layout_name() {
  return std::is_same_v<Layout, Kokkos::LayoutRight> ? "LayoutRight" : "LayoutLeft";
}

// Rates come from wall-clock time measured here: Google Benchmark's rate counters divide by the
// main thread's CPU time, which is not the time of a multi-threaded kernel.
double set_counters(benchmark::State& state, double bytes, double seconds, const std::string& stream_key = "") {
  const double gbps = bytes * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.counters["GBps"] = gbps;
  const auto it = stream_gbps.find(stream_key);
  if (it != stream_gbps.end()) state.counters["of_stream"] = gbps / it->second;
  return gbps;
}

template <class Layout>
std::string key(const std::string& type, long long features) {
  return type + "/" + layout_name<Layout>() + "/" + std::to_string(features);
}

// One stream read of the X of a shard: the read-only reduction over every word of it.
template <class T, class Layout>
class StreamRead {
 public:
  using Word = typename StreamSum<T>::Word;
  explicit StreamRead(const kpmap::Shard<T, Layout>& s) {
    f_.x = s.X.data();
    f_.words = static_cast<long long>(s.X.span() * sizeof(T) / sizeof(Word));
  }
  double bytes() const { return static_cast<double>(f_.words) * sizeof(Word); }
  void operator()() {
    using Range = Kokkos::RangePolicy<kpmap::execution_space, Kokkos::IndexType<long long>>;
    if constexpr (!kpmap::host_execution_v) {
      Word sum{};
      const StreamSumFlat<Word> words{reinterpret_cast<const Word*>(f_.x)};
      Kokkos::parallel_reduce("kpmap::bench::stream_read", Range(0, f_.words), words, sum);
      benchmark::DoNotOptimize(sum);
    } else {
      const long long chunks = (f_.words + StreamSum<T>::chunk - 1) / StreamSum<T>::chunk;
      const Kokkos::View<Word*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> result(
          sums_, StreamSum<T>::lanes);
      Kokkos::parallel_reduce("kpmap::bench::stream_read", Range(0, chunks), f_, result);
      benchmark::DoNotOptimize(sums_);
    }
  }

 private:
  StreamSum<T> f_;
  Word sums_[StreamSum<T>::lanes];
};

// One gradient call of kernel K on the X of a shard, as the trainer makes it. Constructing it
// makes one untimed call, which allocates the model's workspace (for 16-bit storage on the
// kokkos_kernels path, a float copy of X), as the train loop does once per run.
template <class T, class Layout, kpmap::GradientKernel K>
class GradientCall {
 public:
  explicit GradientCall(const kpmap::Shard<T, Layout>& s)
      : s_(s),
        model_(K),
        params_("params", s.X.extent(1) + 1),
        grads_("grads", s.X.extent(1) + 1),
        wb_(kpmap::split_params(params_, static_cast<long long>(s.X.extent(1)))),
        gwb_(kpmap::split_params(grads_, static_cast<long long>(s.X.extent(1)))) {
    Kokkos::deep_copy(params_, T(0.01));
    (*this)();
  }
  double bytes() const { return static_cast<double>(s_.X.span() * sizeof(T)); }
  void operator()() {
    // returns after its kernels completed
    const double loss = model_.fused(exec_, s_.X, s_.y, wb_.first, wb_.second, gwb_.first, gwb_.second);
    benchmark::DoNotOptimize(loss);
  }

 private:
  const kpmap::Shard<T, Layout>& s_;
  kpmap::execution_space exec_;
  kpmap::LinearModel<T, acc_t<T>> model_;
  kpmap::View1<T> params_;
  kpmap::View1<acc_t<T>> grads_;
  decltype(kpmap::split_params(params_, 0)) wb_;   // {w, b}: views into params_
  decltype(kpmap::split_params(grads_, 0)) gwb_;   // {grad w, grad b}: views into grads_
};

template <class T, class Layout>
void stream_read(benchmark::State& state, long long features) {
  StreamRead<T, Layout> read(shard<T, Layout>(features));
  double seconds = 0;
  for (auto _ : state) {
    Kokkos::Timer timer;
    read();
    seconds += timer.seconds();
  }
  stream_gbps[key<Layout>(type_name<T>(), features)] = set_counters(state, read.bytes(), seconds);
}

template <class T, class Layout, kpmap::GradientKernel K>
void gradient(benchmark::State& state, long long features) {
  const auto& s = shard<T, Layout>(features);
  GradientCall<T, Layout, K> call(s);
  double seconds = 0;
  for (auto _ : state) {
    Kokkos::Timer timer;
    call();
    seconds += timer.seconds();
  }
  state.SetLabel(std::to_string(s.X.extent(0)) + " x " + std::to_string(features));
  set_counters(state, call.bytes(), seconds, key<Layout>(type_name<T>(), features));
}

// Each iteration times one stream read and one call of kernel K on the same X, back to back, the
// one or the other first in alternate iterations. of_stream = the median over iterations of the
// kernel's rate over the stream read's, each pair measured within a few tens of milliseconds, so
// that the host's bandwidth, which moves over seconds, is the same for both terms of each ratio;
// of_stream_q1 and of_stream_q3: the quartiles. GBps and stream_GBps: the two rates over all
// iterations. version (at most one): the fused kernel's loops to run in place of the CPU's own
// (model/host_isa.hpp), for the fused_paired_baseline and fused_paired_avx2 rows.
template <class T, class Layout, kpmap::GradientKernel K, kpmap::model_detail::HostIsa... version>
void paired(benchmark::State& state, long long features) {
  namespace md = kpmap::model_detail;
  const md::HostIsa isa = md::host_isa();
  (md::set_host_isa(version), ...);
  const auto& s = shard<T, Layout>(features);
  StreamRead<T, Layout> read(s);
  GradientCall<T, Layout, K> call(s);
  std::vector<double> ratios;
  double stream_seconds = 0, seconds = 0;
  for (auto _ : state) {
    double t[2];  // stream read, kernel
    for (int k = 0; k < 2; ++k) {
      const bool stream = (k == 0) == (ratios.size() % 2 == 0);
      Kokkos::Timer timer;
      if (stream) {
        read();
      } else {
        call();
      }
      t[stream ? 0 : 1] = timer.seconds();
    }
    stream_seconds += t[0], seconds += t[1];
    ratios.push_back(t[0] / read.bytes() * call.bytes() / t[1]);
  }
  state.SetLabel(std::to_string(s.X.extent(0)) + " x " + std::to_string(features));
  set_counters(state, call.bytes(), seconds);
  state.counters["stream_GBps"] = read.bytes() * static_cast<double>(state.iterations()) / stream_seconds / 1e9;
  state.counters["of_stream"] = kpmap_perf::quantile(ratios, 0.5);
  state.counters["of_stream_q1"] = kpmap_perf::quantile(ratios, 0.25);
  state.counters["of_stream_q3"] = kpmap_perf::quantile(ratios, 0.75);
  md::set_host_isa(isa);
}

template <class T, class Layout>
void register_layout(bool with_rows, bool with_blas) {
  using kpmap::GradientKernel;
  for (const long long features : feature_list) {
    const std::string suffix = "/" + key<Layout>(type_name<T>(), features);
    const auto add = [&](const std::string& name, void (*run)(benchmark::State&, long long)) {
      benchmark::RegisterBenchmark((name + suffix).c_str(), [run, features](benchmark::State& state) {
        run(state, features);
      })->UseRealTime();
    };
    // Registration order is run order: stream first, so of_stream can refer to it.
    add("stream_read", stream_read<T, Layout>);
    if (with_rows) {  // the kernels that read LayoutRight rows
      // the fused kernel where this backend takes that width (a GPU: kpmap::fused_max_features)
      if (kpmap::fused_fits(features, sizeof(acc_t<T>))) {
        add("fused", gradient<T, Layout, GradientKernel::fused>);
        add("fused_paired", paired<T, Layout, GradientKernel::fused>);
        using kpmap::model_detail::HostIsa;
        const HostIsa isa = kpmap::model_detail::host_isa();
        if (isa == HostIsa::avx512) {
          add("fused_paired_avx2", paired<T, Layout, GradientKernel::fused, HostIsa::avx2>);
        }
        if (isa == HostIsa::avx2 || isa == HostIsa::avx512) {
          add("fused_paired_baseline", paired<T, Layout, GradientKernel::fused, HostIsa::baseline>);
        }
      }
      add("team", gradient<T, Layout, GradientKernel::team>);
    }
    if (with_blas) add("kokkos_kernels", gradient<T, Layout, GradientKernel::kokkos_kernels>);
  }
}

// Consumes --x_mib=N, --features=N[,N...] and --keep_x, leaves the rest to Google Benchmark.
void parse_own_flags(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--x_mib=", 8) == 0) {
      x_mib = std::atoll(argv[i] + 8);
    } else if (std::strncmp(argv[i], "--features=", 11) == 0) {
      feature_list.clear();
      for (const char* p = argv[i] + 11; *p != '\0';) {
        char* end = nullptr;
        feature_list.push_back(std::strtoll(p, &end, 10));
        if (end == p || feature_list.back() < 1 || (*end != ',' && *end != '\0')) {
          std::fprintf(stderr, "bench_gradient: --features: '%s' is not a list of positive integers (e.g. 16,64,256)\n",
                       argv[i] + 11);
          std::exit(2);
        }
        p = *end == ',' ? end + 1 : end;
      }
    } else if (std::strcmp(argv[i], "--keep_x") == 0) {
      keep_x = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  parse_own_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_layout<double, Kokkos::LayoutRight>(true, true);
  register_layout<double, Kokkos::LayoutLeft>(false, true);
  register_layout<float, Kokkos::LayoutRight>(true, true);
  register_layout<float, Kokkos::LayoutLeft>(false, true);
  register_layout<kpmap::bf16, Kokkos::LayoutRight>(true, false);
  register_layout<kpmap::bf16, Kokkos::LayoutLeft>(false, true);
  register_layout<kpmap::fp16, Kokkos::LayoutRight>(true, false);
  benchmark::AddCustomContext("kokkos_threads", std::to_string(kpmap::execution_space().concurrency()));
  benchmark::AddCustomContext("x_mib", std::to_string(x_mib));
  benchmark::AddCustomContext("host_isa", kpmap::model_detail::host_isa_name(kpmap::model_detail::host_isa()));
  benchmark::RunSpecifiedBenchmarks();
  for (auto& free_one : free_shards) free_one();  // before Kokkos finalizes
  free_shards.clear();
  benchmark::Shutdown();
  return 0;
}
