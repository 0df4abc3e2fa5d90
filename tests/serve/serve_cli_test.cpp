// `kiln serve` as a process, queried as users would: curl and the README's example script over
// HTTP, a Python gRPC client, metrics, the access log, and SIGTERM under load (every request
// answered or refused, none failed, exit status 0).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "kiln/kiln.h"
#include "tests/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// The server process; killed if a failed check leaves it running.
struct Process {
  pid_t pid = -1;
  int http_port = 0, grpc_port = 0, metrics_port = 0;
  std::string first_line;
  ~Process() {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Starts `kiln serve` and reads the ports from its first line of output.
void start_server(const std::string& root, const std::string& log, Process& p) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  std::fflush(nullptr);
  p.pid = fork();
  if (p.pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    std::string bin = test::binary_dir() + "/bin/kiln";
    execl(bin.c_str(), bin.c_str(), "serve", "--models", root.c_str(), "--http-port", "0", "--grpc-port", "0",
          "--metrics-port", "0", "--device", "cpu", "--access-log", log.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') p.first_line += c;
  close(out[0]);
  std::sscanf(p.first_line.c_str(),
              "kiln serve: %*d models; HTTP on 127.0.0.1:%d, gRPC on 127.0.0.1:%d, metrics on 127.0.0.1:%d",
              &p.http_port, &p.grpc_port, &p.metrics_port);
}

std::string curl(const std::string& args) {
  std::string out;
  EXPECT_EQ(test::run_command("curl -sS " + args, &out), 0) << out;
  return out;
}

TEST(ServeCli, CurlQueriesAndSigtermFinishesInFlightWork) {
  std::string root = test::process_dir("serve-cli-test");
  fs::create_directories(root + "/b0/1");
  BuildOptions o;
  o.batch_sizes = {1, 8};
  BuildResult r;
  ASSERT_TRUE(
      build(test::data_path("checkpoints/efficientnet_b0.tfhub-transplant"), root + "/b0/1/model.bundle", o, &r).ok());
  Process p;
  start_server(root, root + "/access.log", p);
  ASSERT_GT(p.http_port, 0) << p.first_line;
  std::string base = "http://127.0.0.1:" + std::to_string(p.http_port);

  EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + base + "/v2/health/ready"), "200");
  // An image sent raw, without the JSON header the binary tensor extension needs.
  std::string image = test::source_dir() + "/samples/coffee.webp";
  std::string answer = curl("-X POST " + base + "/v2/models/b0/infer --data-binary @" + image +
                            " -H 'Content-Type: application/octet-stream'"
                            " -H 'Inference-Header-Content-Length: 0' -o /dev/null -w '%{http_code}'");
  EXPECT_EQ(answer, "400");  // no JSON header: refused, not crashed
  // The same image as the extension wants it, for the load below.
  std::string header =
      R"({"inputs":[{"name":"image","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":)" +
      std::to_string(fs::file_size(image) + 4) +
      R"(}}],"outputs":[{"name":"probabilities","parameters":{"classification":1}}]})";
  uint32_t n = static_cast<uint32_t>(fs::file_size(image));
  std::ifstream in(image, std::ios::binary);
  std::string body = header + std::string(reinterpret_cast<const char*>(&n), 4) +
                     std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::ofstream(root + "/body.bin", std::ios::binary) << body;
  // The README's query: examples/infer_image.sh.
  ASSERT_EQ(test::run_command("bash " + test::source_dir() + "/examples/infer_image.sh " + base + " b0 " + image + " 1",
                              &answer),
            0)
      << answer;
  auto j = nlohmann::json::parse(answer);
  ASSERT_TRUE(j["outputs"][0]["data"][0].is_string()) << answer;
  EXPECT_NE(j["outputs"][0]["data"][0].get<std::string>().find(":967:espresso"), std::string::npos) << answer;
  // curl's default content type caps the body at 8 KiB in cpp-httplib: the error says what to do.
  EXPECT_NE(curl("-X POST " + base + "/v2/models/b0/infer --data-binary @" + root + "/body.bin")
                .find("send Content-Type: application/json or application/octet-stream"),
            std::string::npos);
  // A Python gRPC client (Debian's Python and grpcio, stubs generated from the .proto): the
  // logits it receives are the offline classifier's, bit for bit.
  ASSERT_GT(p.grpc_port, 0) << p.first_line;
  ASSERT_EQ(test::run_command("/usr/bin/python3 " + test::source_dir() + "/tests/serve/grpc_python_client.py " +
                                  test::source_dir() + "/serve/grpc 127.0.0.1:" + std::to_string(p.grpc_port) + " b0 " +
                                  image,
                              &answer),
            0)
      << answer;
  auto py = nlohmann::json::parse(answer.substr(answer.rfind('{')));
  std::unique_ptr<Classifier> offline;
  ASSERT_TRUE(Classifier::load(root + "/b0/1/model.bundle", &offline, "cpu").ok());
  std::vector<Classification> expected;
  ASSERT_TRUE(offline->classify_files({image}, 1, &expected).ok());
  ASSERT_EQ(py["logits"].size(), expected[0].logits.size());
  for (size_t i = 0; i < expected[0].logits.size(); ++i)
    ASSERT_EQ(std::strtof(py["logits"][i].get<std::string>().c_str(), nullptr), expected[0].logits[i]) << i;
  EXPECT_NE(py["top"].get<std::string>().find(":967:espresso"), std::string::npos);

  std::string metrics = curl("http://127.0.0.1:" + std::to_string(p.metrics_port) + "/metrics");
  EXPECT_NE(metrics.find("kiln_requests_total{model=\"b0\",version=\"1\",outcome=\"success\"} 2\n"), std::string::npos)
      << metrics;

  // Load from 8 clients, then SIGTERM: each request gets 200 or no connection, never an error status.
  std::atomic<bool> go{true};
  std::atomic<int> ok{0}, refused{0}, failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      while (go) {
        httplib::Client c("127.0.0.1", p.http_port);
        c.set_read_timeout(60, 0);
        auto res = c.Post("/v2/models/b0/infer", {{"Inference-Header-Content-Length", std::to_string(header.size())}},
                          body, "application/octet-stream");
        if (!res)
          ++refused;
        else if (res->status == 200)
          ++ok;
        else
          ++failed;
        if (!res) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_EQ(kill(p.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(p.pid, &status, 0), p.pid);
  p.pid = -1;
  go = false;
  for (auto& t : clients) t.join();
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GT(ok, 0);
  EXPECT_EQ(failed, 0);

  // One JSON line per request in the access log.
  std::ifstream log(root + "/access.log");
  std::string line;
  int lines = 0;
  while (std::getline(log, line)) {
    auto entry = nlohmann::json::parse(line);
    EXPECT_TRUE(entry.contains("status") && entry.contains("ms") && entry.contains("path")) << line;
    ++lines;
  }
  EXPECT_GE(lines, 3 + ok.load());
}

}  // namespace
}  // namespace kiln
