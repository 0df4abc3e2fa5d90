// Hub downloads against a local server that speaks the Hub's /{repo}/resolve/{revision}/{file}
// protocol (X-Repo-Commit, X-Linked-Etag = sha256, X-Linked-Size, Range) on 127.0.0.1.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "checkpoints/hub_cache.h"
#include "checkpoints/hub_download.h"
#include "core/error.h"
#include "core/sha256.h"
#include "kiln/kiln.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kRepo = "acme/effnet-b0";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FakeHub {
 public:
  FakeHub() {
    std::string dir = test::data_path("checkpoints/efficientnet_b0.tfhub-transplant");
    files_["config.json"] = read_file(dir + "/config.json");
    files_["model.safetensors"] = read_file(dir + "/model.safetensors");
    sha_ = sha256_hex(
        {reinterpret_cast<const uint8_t*>(files_["model.safetensors"].data()), files_["model.safetensors"].size()});
    server_.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
                [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    server_.stop();
    thread_.join();
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<int64_t> cut_after{-1};  // first weights GET stops after this many bytes
  std::atomic<bool> corrupt{false};    // serve weights with one byte flipped
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> l(mu_);
    return log_;
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
    std::string file = req.matches[4];
    {
      std::lock_guard<std::mutex> l(mu_);
      log_.push_back(req.method + " " + file + (req.has_header("Range") ? " " + req.get_header_value("Range") : ""));
    }
    if (repo != kRepo || !files_.count(file) || (req.matches[3] != "main" && req.matches[3] != kCommit)) {
      res.status = 404;
      return;
    }
    res.set_header("X-Repo-Commit", kCommit);
    std::string body = files_[file];
    if (file == "model.safetensors") {
      res.set_header("X-Linked-Etag", "\"" + sha_ + "\"");
      res.set_header("X-Linked-Size", std::to_string(body.size()));
      if (corrupt) body[body.size() / 2] ^= 0x40;
    } else {
      res.set_header("ETag", "\"cafe0000000000000000000000000000000000" + std::to_string(body.size() % 100) + "\"");
    }
    int64_t cut = req.method == "GET" && file == "model.safetensors" ? cut_after.exchange(-1) : -1;
    auto shared = std::make_shared<std::string>(std::move(body));
    res.set_content_provider(shared->size(), "application/octet-stream",
                             [shared, cut](size_t offset, size_t length, httplib::DataSink& sink) {
                               size_t n = length;
                               if (cut >= 0) {
                                 if (offset >= static_cast<size_t>(cut)) return false;  // drop the connection
                                 n = std::min(length, static_cast<size_t>(cut) - offset);
                               }
                               sink.write(shared->data() + offset, n);
                               return true;
                             });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::map<std::string, std::string> files_;
  std::string sha_;
  std::mutex mu_;
  std::vector<std::string> log_;
};

class HubDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = test::binary_dir() + "/hub-cache-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(cache_);
    opts_.endpoint = hub_.endpoint();
    opts_.cache_dir = cache_;
    opts_.timeout_s = 10;
  }
  std::string blob() const {
    return cache_ + "/models--acme--effnet-b0/blobs/" +
           sha256_file_hex(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant/model.safetensors"));
  }

  FakeHub hub_;
  HubOptions opts_;
  std::string cache_;
};

TEST_F(HubDownload, FreshDownloadLaysOutTheCacheLikeHuggingFaceHub) {
  std::string snap = fetch_snapshot(kRepo, "main", opts_);
  EXPECT_EQ(snap, cache_ + "/models--acme--effnet-b0/snapshots/" + kCommit);
  EXPECT_TRUE(fs::is_symlink(snap + "/model.safetensors"));
  EXPECT_EQ(fs::read_symlink(snap + "/model.safetensors").string().substr(0, 12), "../../blobs/");
  EXPECT_TRUE(fs::exists(blob()));
  EXPECT_EQ(read_file(cache_ + "/models--acme--effnet-b0/refs/main"), kCommit);
  // A second fetch finds the blobs and downloads nothing.
  size_t before = hub_.log().size();
  fetch_snapshot(kRepo, "main", opts_);
  for (size_t i = before; i < hub_.log().size(); ++i) EXPECT_EQ(hub_.log()[i].substr(0, 4), "HEAD");
}

TEST_F(HubDownload, ResumesAfterACutConnection) {
  hub_.cut_after = 5 << 20;
  std::string snap = fetch_snapshot(kRepo, "main", opts_);
  EXPECT_EQ(sha256_file_hex(snap + "/model.safetensors"),
            sha256_file_hex(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant/model.safetensors")));
  bool resumed = false;
  for (const auto& l : hub_.log()) resumed |= l.find("GET model.safetensors bytes=5242880-") != std::string::npos;
  EXPECT_TRUE(resumed) << "no ranged GET after the cut";
}

TEST_F(HubDownload, RejectsACorruptedFileByItsChecksum) {
  hub_.corrupt = true;
  const std::string error = test::error_message([&] { fetch_snapshot(kRepo, "main", opts_); });
  EXPECT_NE(error.find("checksum mismatch"), std::string::npos)
      << (error.empty() ? "a corrupted download was accepted" : error);
  EXPECT_FALSE(fs::exists(blob()));
  EXPECT_FALSE(fs::exists(blob() + ".incomplete"));
}

TEST_F(HubDownload, OfflineModeUsesOnlyTheCache) {
  opts_.offline = true;
  const std::string error = test::error_message([&] { fetch_snapshot(kRepo, "main", opts_); });
  EXPECT_NE(error.find("HF_HUB_OFFLINE"), std::string::npos)
      << (error.empty() ? "offline fetch without a cache succeeded" : error);
  opts_.offline = false;
  fetch_snapshot(kRepo, "main", opts_);
  opts_.offline = true;
  size_t before = hub_.log().size();
  EXPECT_EQ(fetch_snapshot(kRepo, "main", opts_), cache_ + "/models--acme--effnet-b0/snapshots/" + kCommit);
  EXPECT_EQ(hub_.log().size(), before) << "offline mode made requests";
}

TEST_F(HubDownload, UnknownRepositoryIsAClearError) {
  const std::string error = test::error_message([&] { fetch_snapshot("acme/nope", "main", opts_); });
  EXPECT_NE(error.find("no config.json"), std::string::npos)
      << (error.empty() ? "an unknown repository was accepted" : error);
}

TEST_F(HubDownload, BuildFromAHubIdThroughTheEnvironment) {
  setenv("HF_ENDPOINT", hub_.endpoint().c_str(), 1);
  setenv("HF_HUB_CACHE", cache_.c_str(), 1);
  unsetenv("HF_HUB_OFFLINE");
  BuildResult r;
  std::string out = test::binary_dir() + "/hub-built.bundle";
  Status s = build(kRepo, out, BuildOptions{}, &r);
  unsetenv("HF_ENDPOINT");
  unsetenv("HF_HUB_CACHE");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.revision, kCommit);
  EXPECT_EQ(r.architecture, "efficientnet_b0");
  std::unique_ptr<Classifier> model;
  ASSERT_TRUE(Classifier::load(out, &model).ok());
  EXPECT_EQ(model->info().model_id, kRepo);
  EXPECT_EQ(model->info().revision, kCommit);
}

}  // namespace
}  // namespace kiln
