// A started non-blocking collective (ipsum, ipsum_scatter, iall_gather; docs/collectives.md).
//
//   kpmap::Request r = kpmap::ipsum(mesh, "data", grad, grad);
//   compute_something_else();      // overlaps the reduction, as far as MPI progresses it
//   r.wait();                      // now `grad` holds the sum
//
// Ownership: the Request owns its MPI_Request and every staging buffer the call needed (packed
// copies of non-row-major Views, host mirrors of device Views, the block-swap buffer of
// iall_gather) and holds the execution space instance and a reference to the caller's Views
// until it completes, so the caller may drop its own handles. Until wait() (or a test() that
// returned true) the caller must not write the input, nor read or write the output: MPI may be
// reading and writing them. An unmanaged View's memory, and the Mesh, must outlive the Request.
//
// Progress: MPICH advances a non-blocking collective only inside MPI calls made by this process
// (no background thread by default). test() and progress() are such calls: call one now and then
// during long computations, or the whole collective may run inside wait(). With MPICH_ASYNC_PROGRESS=1 in the
// environment MPICH starts a progress thread (and raises the thread level to
// MPI_THREAD_MULTIPLE), which progresses requests without test(), at the cost of a core.
//
// Completion work (copy out of a host mirror, unpack into a LayoutLeft or strided View, the block
// swap of iall_gather) runs inside wait(), or inside the test() that sees the request complete,
// and ends with a fence, so the output is ready when either returns; progress() never runs it.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kpmap/core/error.hpp"

namespace kpmap {

class Request;
void wait_all(std::vector<Request>& requests);

namespace detail {

// What a request does once MPI has completed it; the object also keeps the buffers alive.
class Completion {
 public:
  virtual ~Completion() = default;
  virtual void finish() = 0;
};

template <class Plan, class Exec, class... Views>
class PlanCompletion final : public Completion {
 public:
  PlanCompletion(Plan&& plan, const Exec& exec, const Views&... views)
      : plan_(std::move(plan)), exec_(exec), views_(views...) {}
  void finish() override { plan_.finish(exec_); }

 private:
  Plan plan_;
  Exec exec_;
  std::tuple<Views...> views_;  // the caller's Views, whose memory MPI may be using
};

// The MPI requests one collective started: the first inline, those of further chunks
// (chunk.hpp) in a vector, so that an unchunked collective allocates nothing for them.
struct Requests {
  MPI_Request first = MPI_REQUEST_NULL;
  std::vector<MPI_Request> more;
  bool started = false;

  void push(MPI_Request request) {
    if (started) {
      more.push_back(request);
    } else {
      first = request;
      started = true;
    }
  }
};

}  // namespace detail

// A started non-blocking collective. Move-only. A default-constructed or moved-from Request is
// empty: done() is true, test() and wait() return at once.
class Request {
 public:
  Request() = default;

  // Takes over a request MPI has started on `comm`. `plan` (any movable type with a
  // `void finish(const Exec&)`) keeps the staging buffers MPI uses alive and does the completion
  // work on `exec`; the instance and `views` (the collective's input and output) are held until
  // the Request completes.
  template <class Plan, class Exec, class... Views>
  Request(MPI_Request request, MPI_Comm comm, Plan&& plan, const Exec& exec, const Views&... views)
      : request_(request),
        comm_(comm),
        completion_(std::make_unique<detail::PlanCompletion<std::decay_t<Plan>, Exec, Views...>>(
            std::forward<Plan>(plan), exec, views...)) {}

  // A collective started as several MPI operations (a message split into chunks, see
  // chunk.hpp): complete when all of them are.
  template <class Plan, class Exec, class... Views>
  Request(detail::Requests requests, MPI_Comm comm, Plan&& plan, const Exec& exec, const Views&... views)
      : Request(requests.first, comm, std::forward<Plan>(plan), exec, views...) {
    more_ = std::move(requests.more);
  }

  Request(Request&& other) noexcept
      : request_(std::exchange(other.request_, MPI_REQUEST_NULL)),
        more_(std::move(other.more_)),
        comm_(other.comm_),
        completion_(std::move(other.completion_)) {
    other.more_.clear();
  }

  // An active request on the left is completed first (never dropped).
  Request& operator=(Request&& other) {
    if (this != &other) {
      wait();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      more_ = std::move(other.more_);
      other.more_.clear();
      comm_ = other.comm_;
      completion_ = std::move(other.completion_);
    }
    return *this;
  }

  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // A still-active request is waited on. A failure there cannot leave a destructor: the message
  // goes to stderr and MPI_Abort ends the job (a rank must not continue with a collective half
  // done).
  ~Request() {
    if (done()) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
      std::fprintf(stderr, "kpmap::Request: destroyed after MPI_Finalize while still active\n");
      return;
    }
    try {
      wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kpmap::Request: completing in the destructor failed: %s\n", e.what());
      MPI_Abort(comm_, exit_runtime);
    }
  }

  // One MPI_Test (a progress call). True once the collective is complete, and then its results
  // are in the output View, as after wait().
  bool test() {
    if (done()) return true;
    if (!progress()) return false;
    complete();
    return true;
  }

  // One MPI_Test (a progress call) that leaves the completion work to wait() (or test()): true
  // once MPI has finished the collective. The Request keeps its staging buffers until then, so a
  // loop of progress() calls holds the same buffers whatever MPI's timing (the trainer's overlap
  // allocates nothing after its first step).
  bool progress() {
    if (request_ != MPI_REQUEST_NULL) {
      int flag = 0;
      check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
      if (!flag) return false;
    }
    if (!more_.empty()) {
      int flag = 0;
      check_mpi(MPI_Testall(static_cast<int>(more_.size()), more_.data(), &flag,
                            MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (!flag) return false;
      more_.clear();
    }
    return true;
  }

  // MPI_Wait, then the completion work. Idempotent.
  void wait() {
    if (done()) return;
    if (request_ != MPI_REQUEST_NULL) {
      check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    }
    if (!more_.empty()) {
      check_mpi(MPI_Waitall(static_cast<int>(more_.size()), more_.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitall");
      more_.clear();
    }
    complete();
  }

  // True when nothing is pending: empty, or completed and finished.
  bool done() const { return request_ == MPI_REQUEST_NULL && more_.empty() && !completion_; }

 private:
  friend void wait_all(std::vector<Request>& requests);

  // Runs the completion work once and releases the buffers (even if it throws).
  void complete() {
    std::unique_ptr<detail::Completion> completion = std::move(completion_);
    if (completion) completion->finish();
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request> more_;  // a chunked collective's other operations; usually empty
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<detail::Completion> completion_;
};

// Completes every request: one MPI_Waitall, then each one's completion work in vector order. The
// first exception of a completion is rethrown after all of them ran.
inline void wait_all(std::vector<Request>& requests) {
  std::vector<MPI_Request> handles;
  handles.reserve(requests.size());
  for (const Request& r : requests) {
    handles.push_back(r.request_);
    handles.insert(handles.end(), r.more_.begin(), r.more_.end());
  }
  const int rc =
      MPI_Waitall(static_cast<int>(handles.size()), handles.data(), MPI_STATUSES_IGNORE);
  std::size_t h = 0;
  for (Request& r : requests) {
    r.request_ = handles[h++];
    for (MPI_Request& m : r.more_) m = handles[h++];
  }
  check_mpi(rc, "MPI_Waitall");
  for (Request& r : requests) {
    if (std::all_of(r.more_.begin(), r.more_.end(),
                    [](MPI_Request m) { return m == MPI_REQUEST_NULL; })) {
      r.more_.clear();
    }
  }
  std::exception_ptr first;
  for (Request& r : requests) {
    try {
      r.complete();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace kpmap
