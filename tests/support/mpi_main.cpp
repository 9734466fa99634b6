// GoogleTest main for kpmap's tests: initialises MPI and Kokkos once, prints from rank 0 only,
// forwards every other rank's failures to rank 0 (printed once, with the rank), and makes the
// process exit code the same on every rank: a failure on any rank fails the test everywhere.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <sstream>
#include <string>

#include "kpmap/mesh/mpi_env.hpp"

namespace {

class RankFailureForwarder : public testing::EmptyTestEventListener {
 public:
  explicit RankFailureForwarder(int rank) : rank_(rank) {}

  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::ostringstream out;
    out << "[rank " << rank_ << "] " << (r.file_name() ? r.file_name() : "?") << ':' << r.line_number()
        << ": " << r.message() << '\n';
    failures_ += out.str();
  }

  // Collective: every rank runs the same tests in the same order.
  void OnTestEnd(const testing::TestInfo& info) override {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int len = static_cast<int>(failures_.size());
    std::vector<int> lens(size);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(size, 0);
    int total = 0;
    for (int r = 0; r < size; ++r) offsets[r] = total, total += lens[r];
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Gatherv(failures_.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0,
                MPI_COMM_WORLD);
    if (rank_ == 0 && total > lens[0]) {
      // Rank 0's own failures were printed by the default printer already.
      std::cout << "Failures on other ranks in " << info.test_suite_name() << '.' << info.name()
                << ":\n"
                << all.substr(static_cast<size_t>(lens[0])) << std::flush;
    }
    failures_.clear();
  }

 private:
  int rank_;
  std::string failures_;
};

}  // namespace

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int result = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    testing::InitGoogleTest(&argc, argv);
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    if (rank != 0) delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailureForwarder(rank));
    result = RUN_ALL_TESTS();
    MPI_Allreduce(MPI_IN_PLACE, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && result != 0 && testing::UnitTest::GetInstance()->Passed()) {
      std::cout << "FAILED: tests failed on other ranks (see above)" << std::endl;
    }
  }
  return result;
}
