// Checkpoints (train/checkpoint.hpp, the trainer's TrainControl): the file round trip is exact,
// old files rotate out, the state gathered from any mesh is the learned weights, and a run
// restored from a state continues bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kpmap/core/error.hpp"
#include "kpmap/io/h5.hpp"
#include "kpmap/train/checkpoint.hpp"
#include "train_common.hpp"

namespace {

namespace fs = std::filesystem;
using kpmap::CheckpointInfo;
using kpmap::TrainState;

// A directory of this rank's own, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/kpmap-test-checkpoint-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { fs::remove_all(path); }
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const TrainState& got, const TrainState& want) {
  EXPECT_EQ(got.step, want.step);
  EXPECT_TRUE(same_bits(got.loss_scale, want.loss_scale));
  EXPECT_EQ(got.clean_steps, want.clean_steps);
  EXPECT_EQ(got.loss_exponent, want.loss_exponent);
  ASSERT_EQ(got.master.size(), want.master.size());
  for (std::size_t i = 0; i < want.master.size(); ++i) EXPECT_TRUE(same_bits(got.master[i], want.master[i])) << i;
  ASSERT_EQ(got.optimizer.size(), want.optimizer.size());
  for (std::size_t v = 0; v < want.optimizer.size(); ++v) {
    ASSERT_EQ(got.optimizer[v].size(), want.optimizer[v].size());
    for (std::size_t i = 0; i < want.optimizer[v].size(); ++i) {
      EXPECT_TRUE(same_bits(got.optimizer[v][i], want.optimizer[v][i])) << v << ", " << i;
    }
  }
  ASSERT_EQ(got.history.size(), want.history.size());
  for (std::size_t i = 0; i < want.history.size(); ++i) {
    EXPECT_EQ(got.history[i].step, want.history[i].step);
    EXPECT_TRUE(same_bits(got.history[i].loss, want.history[i].loss));
    EXPECT_TRUE(same_bits(got.history[i].scale, want.history[i].scale));
    EXPECT_EQ(got.history[i].skipped, want.history[i].skipped);
  }
}

// Adam's state over 5 features and a bias; values exact in `params` (fp32: multiples of 2^-8).
TrainState sample_state(bool fp32) {
  TrainState s;
  s.step = 3;
  s.loss_scale = 32768.0;
  s.clean_steps = 2;
  s.loss_exponent = -5;
  for (int i = 0; i < 6; ++i) {
    s.master.push_back(fp32 ? (i - 2.5) / 256.0 : 1.0 / (i + 3));
  }
  s.optimizer = {std::vector<double>(6, 0.125), std::vector<double>(6, fp32 ? 0.5 : 1e-300)};
  s.history = {{1, 0.75, 65536.0, true}, {2, 1.0 / 3, 32768.0, false}, {3, 0.25, 32768.0, false}};
  return s;
}

CheckpointInfo sample_info(bool fp32) {
  CheckpointInfo info;
  info.identity = R"({"problem":{"features":5}})";
  info.config = "{}";
  info.mesh = "{data: 1}";
  info.params = fp32 ? "fp32" : "fp64";
  info.optimizer = "adam";
  info.features = 5;
  info.bias = true;
  info.next_batch = 3;
  return info;
}

TEST(Checkpoint, FileRoundTripIsExact) {
  for (bool fp32 : {false, true}) {
    TempDir dir;
    const TrainState state = sample_state(fp32);
    const std::string path = kpmap::write_checkpoint(dir.path, state, sample_info(fp32), 2);
    EXPECT_EQ(path, dir.path + "/ckpt-00000003.h5");
    CheckpointInfo info;
    const TrainState back = kpmap::read_checkpoint(path, info);
    expect_same(back, state);
    EXPECT_EQ(info.params, fp32 ? "fp32" : "fp64");
    EXPECT_EQ(info.next_batch, 3);
    EXPECT_EQ(info.identity, sample_info(fp32).identity);
    // The master weights are stored in the master type.
    const kpmap::h5::Handle file = kpmap::h5::open_file(path);
    EXPECT_EQ(kpmap::h5::info(file.get(), "state/master").type_size, fp32 ? 4u : 8u);
    EXPECT_EQ(kpmap::h5::info(file.get(), "state/optimizer/v").dims, std::vector<long long>{6});
  }
}

TEST(Checkpoint, KeepsTheNewestAndIgnoresOtherFiles) {
  TempDir dir;
  TrainState state = sample_state(false);
  state.history.clear();
  std::ofstream(dir.path + "/notes.txt") << "not a checkpoint\n";
  std::ofstream(dir.path + "/ckpt-12.h5") << "not named like one\n";
  for (long long step = 1; step <= 5; ++step) {
    state.step = step;
    state.history.push_back({step, 1.0, 1.0, false});
    kpmap::write_checkpoint(dir.path, state, sample_info(false), 2);
  }
  const auto files = kpmap::list_checkpoints(dir.path);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].first, 4);
  EXPECT_EQ(files[1].first, 5);
  EXPECT_TRUE(fs::exists(dir.path + "/notes.txt"));
  EXPECT_TRUE(fs::exists(dir.path + "/ckpt-12.h5"));
  EXPECT_EQ(kpmap::find_checkpoint(dir.path), dir.path + "/ckpt-00000005.h5");
  EXPECT_EQ(kpmap::find_checkpoint(files[0].second), files[0].second);
}

TEST(Checkpoint, DamagedFilesAreBadInput) {
  TempDir dir;
  const std::string path = kpmap::write_checkpoint(dir.path, sample_state(false), sample_info(false), 1);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto expect_refused = [&](const std::string& content, const char* fragment) {
    const std::string bad = dir.path + "/bad.h5";
    std::ofstream(bad, std::ios::binary) << content;
    CheckpointInfo info;
    try {
      kpmap::read_checkpoint(bad, info);
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const kpmap::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_refused(bytes.substr(0, bytes.size() / 2), "cannot be read (truncated or corrupted?)");
  expect_refused(bytes.substr(0, 4), "not an HDF5 file");
  // 1/3 as a double: its bytes sit once in the file, in /state/master.
  const double third = 1.0 / 3;
  const std::string needle(reinterpret_cast<const char*>(&third), sizeof third);
  const auto at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  std::string flipped = bytes;
  flipped[at + 3] ^= 0x04;
  expect_refused(flipped, "checksum mismatch");
}

TEST(Checkpoint, BroadcastGivesEveryRankTheState) {
  const TrainState want = sample_state(false);
  TrainState state;
  if (kpmap::test::world_rank() == 0) state = want;
  kpmap::broadcast(state, MPI_COMM_WORLD);
  expect_same(state, want);
}

// The state gathered on rank 0 at the end of a run is the learned weights (which the trainer
// assembles with its own collectives), on every mesh, with allreduce and with ZeRO shards.
TEST(Checkpoint, GatheredStateIsTheLearnedWeights) {
  for (const auto& axes : kpmap::test::meshes()) {
    for (auto strategy : {kpmap::CommStrategy::allreduce, kpmap::CommStrategy::reduce_scatter}) {
      kpmap::TrainSpec spec = kpmap::test::small_spec(kpmap::Dtype::fp64);
      spec.steps = 4;
      spec.optimizer.name = "adam";
      spec.optimizer.lr = 0.05;
      spec.comm_spec.strategy = strategy;
      const kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
      std::vector<TrainState> saved;
      kpmap::TrainControl control;
      control.every = 2;
      control.save = [&](const TrainState& s) { saved.push_back(s); };
      const kpmap::TrainResult r = kpmap::train(spec, mesh, {}, control);
      const std::string what = kpmap::test::name(axes) + (strategy == kpmap::CommStrategy::allreduce ? " allreduce" : " zero");
      ASSERT_EQ(saved.size(), 2u) << what;  // after steps 2 and 4
      EXPECT_EQ(saved[0].step, 2) << what;
      if (mesh.rank() != 0) continue;
      const TrainState& last = saved.back();
      ASSERT_EQ(last.master.size(), 13u) << what;
      for (int j = 0; j < 12; ++j) EXPECT_TRUE(same_bits(last.master[j], r.weights[j])) << what << ", w" << j;
      EXPECT_TRUE(same_bits(last.master[12], r.bias)) << what;
      ASSERT_EQ(last.optimizer.size(), 2u) << what;
      ASSERT_EQ(last.history.size(), 4u) << what;
      for (int i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(last.history[i].loss, r.history[i].loss)) << what;
    }
  }
}

// Restored from the state after step 3 (any mesh's), a run continues with the uninterrupted
// run's history bit for bit on the same mesh, and within rounding on another.
TEST(Checkpoint, RestoredRunContinuesTheHistory) {
  kpmap::TrainSpec spec = kpmap::test::small_spec(kpmap::Dtype::fp64);
  spec.steps = 8;
  spec.optimizer.name = "momentum";
  spec.optimizer.lr = 0.1;
  for (const auto& axes : kpmap::test::meshes()) {
    const kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
    TrainState at3;
    kpmap::TrainControl save;
    save.every = 3;
    save.save = [&](const TrainState& s) {
      if (s.step == 3) at3 = s;
    };
    const kpmap::TrainResult full = kpmap::train(spec, mesh, {}, save);
    kpmap::broadcast(at3, MPI_COMM_WORLD);
    kpmap::TrainControl resume;
    resume.resume = &at3;
    const kpmap::TrainResult resumed = kpmap::train(spec, mesh, {}, resume);
    const std::string what = kpmap::test::name(axes);
    EXPECT_EQ(resumed.steps_run, 5) << what;
    ASSERT_EQ(resumed.history.size(), full.history.size()) << what;
    for (std::size_t i = 0; i < full.history.size(); ++i) {
      EXPECT_TRUE(same_bits(resumed.history[i].loss, full.history[i].loss)) << what << ", step " << i + 1;
    }
    // The same state continued on one rank: the sums in another order, the same to rounding.
    const kpmap::TrainResult single = [&] {
      const kpmap::Mesh self(MPI_COMM_SELF, {{"data", 1}});
      return kpmap::train(spec, self, {}, resume);
    }();
    kpmap::test::expect_same_history(single, full, 1e-12, what + " resumed on 1 rank");
  }
}

}  // namespace
