// kiln serve's HTTP API on loopback with a real classifier bundle: every answer checked against
// kiln::Classifier run offline on the same batch (bit-identical logits), the protocol's endpoints,
// and the faults a server meets (malformed and oversized bodies, unknown models, names that try
// to leave the repository, missing tokens, a model unloaded with requests queued, a client that
// hangs up mid-body).
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "serve/http_server.h"
#include "tests/serve/classifier_repository.h"
#include "tests/test_support.h"

namespace kiln::serve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using test_repository::kImages;
using test_repository::read_file;
const std::string& repository_root() { return test_repository::root(); }

std::string le32(uint32_t n) { return std::string(reinterpret_cast<const char*>(&n), 4); }

// An infer body with the images as one BYTES tensor in binary form; outputs as asked.
std::pair<std::string, size_t> image_request(const std::vector<std::string>& paths, const json& outputs) {
  std::string binary;
  for (const auto& p : paths) {
    std::string bytes = read_file(test::source_dir() + "/" + p);
    binary += le32(static_cast<uint32_t>(bytes.size())) + bytes;
  }
  json head = {{"id", "req-1"},
               {"inputs",
                {{{"name", "image"},
                  {"datatype", "BYTES"},
                  {"shape", {paths.size()}},
                  {"parameters", {{"binary_data_size", binary.size()}}}}}},
               {"outputs", outputs}};
  std::string text = head.dump();
  return {text + binary, text.size()};
}

std::vector<float> floats(const json& data) { return data.get<std::vector<float>>(); }

struct Server {
  Metrics metrics;
  std::unique_ptr<Repository> repository;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<httplib::Client> client;
  explicit Server(HttpOptions options = {}, const std::string& root = repository_root()) {
    repository = std::make_unique<Repository>(root, ServableOptions{"cpu", 40'000'000}, &metrics);
    EXPECT_EQ(repository->load_all(), 0);
    options.port = 0;
    http = std::make_unique<HttpServer>(repository.get(), &metrics, options);
    http->start();
    client = std::make_unique<httplib::Client>("127.0.0.1", http->port());
    client->set_read_timeout(60, 0);
  }
  ~Server() { http->stop(); }
  httplib::Result post(const std::string& path, const std::string& body, std::optional<size_t> header = {},
                       httplib::Headers headers = {}) {
    if (header) headers.emplace("Inference-Header-Content-Length", std::to_string(*header));
    return client->Post(path.c_str(), headers, body, "application/octet-stream");
  }
};

TEST(HttpServer, ClassifiesBitForBitLikeTheClassifier) {
  Server server;
  std::unique_ptr<Classifier> offline;
  ASSERT_TRUE(Classifier::load(repository_root() + "/b0/1/model.bundle", &offline, "cpu").ok());
  std::vector<std::string> paths;
  for (const auto& p : kImages) paths.push_back(test::source_dir() + "/" + p);
  std::vector<Classification> expected;
  ASSERT_TRUE(offline->classify_files(paths, 3, &expected).ok());

  // One request of three images (the batch the offline call ran), logits as JSON numbers.
  auto [body, header] = image_request(
      kImages, {{{"name", "logits"}}, {{"name", "probabilities"}, {"parameters", {{"classification", 2}}}}});
  auto res = server.post("/v2/models/b0/infer", body, header);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  json j = json::parse(res->body);
  EXPECT_EQ(j["model_name"], "b0");
  EXPECT_EQ(j["model_version"], "1");
  EXPECT_EQ(j["id"], "req-1");
  EXPECT_EQ(j["outputs"][0]["shape"], (std::vector<int64_t>{3, 1000}));
  std::vector<float> logits = floats(j["outputs"][0]["data"]);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(std::equal(expected[i].logits.begin(), expected[i].logits.end(), logits.begin() + i * 1000))
        << kImages[i];
  // The classification extension: "probability:index:label", best first, as `kiln classify` ranks.
  EXPECT_EQ(j["outputs"][1]["datatype"], "BYTES");
  EXPECT_EQ(j["outputs"][1]["shape"], (std::vector<int64_t>{3, 2}));
  for (size_t i = 0; i < 3; ++i) {
    std::string top = j["outputs"][1]["data"][i * 2];
    EXPECT_EQ(top, fmt::format("{}:{}:{}", expected[i].top[0].probability, expected[i].top[0].index,
                               expected[i].top[0].label));
  }

  // The same as binary output.
  std::tie(body, header) = image_request(kImages, {{{"name", "logits"}, {"parameters", {{"binary_data", true}}}}});
  res = server.post("/v2/models/b0/infer", body, header);
  ASSERT_EQ(res->status, 200) << res->body;
  size_t json_length = std::stoul(res->get_header_value("Inference-Header-Content-Length"));
  json head = json::parse(res->body.substr(0, json_length));
  EXPECT_EQ(head["outputs"][0]["parameters"]["binary_data_size"], 3 * 1000 * 4);
  ASSERT_EQ(res->body.size() - json_length, 3 * 1000 * 4u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(res->body.data() + json_length + i * 4000, expected[i].logits.data(), 4000), 0);

  // Preprocessed pixels, as JSON, against Classifier::run.
  std::vector<float> pixels(3 * 224 * 224);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i * 7919) % 255) / 127.5f - 1;
  std::vector<float> run_logits;
  ASSERT_TRUE(offline->run(pixels.data(), 1, &run_logits).ok());
  json px = {{"inputs", {{{"name", "pixels"}, {"datatype", "FP32"}, {"shape", {1, 3, 224, 224}}, {"data", pixels}}}}};
  res = server.post("/v2/models/b0/versions/1/infer", px.dump());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(floats(json::parse(res->body)["outputs"][0]["data"]), run_logits);
}

TEST(HttpServer, AnswersTheProtocolsEndpoints) {
  Server server;
  auto& c = *server.client;
  auto res = c.Get("/v2");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["name"], "kiln");
  EXPECT_EQ(c.Get("/v2/health/live")->status, 200);
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  res = c.Get("/v2/models/b0");
  ASSERT_EQ(res->status, 200);
  json m = json::parse(res->body);
  EXPECT_EQ(m["platform"], "kiln_image_classification");
  EXPECT_EQ(m["versions"], json({"1"}));
  EXPECT_EQ(m["inputs"][0], json({{"name", "image"}, {"datatype", "BYTES"}, {"shape", {-1}}}));
  EXPECT_EQ(m["outputs"][0], json({{"name", "logits"}, {"datatype", "FP32"}, {"shape", {-1, 1000}}}));
  EXPECT_EQ(m["parameters"]["max_batch_size"], 4);
  EXPECT_EQ(c.Get("/v2/models/b0/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/b0/versions/1/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/b0/versions/2/ready")->status, 400);
  res = c.Get("/v2/models/nope");
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"], "model 'nope' is not loaded");
  res = c.Post("/v2/repository/index", "", "application/json");
  EXPECT_EQ(json::parse(res->body), json::parse(R"([{"name": "b0", "version": "1", "state": "READY", "reason": ""}])"));
  EXPECT_EQ(c.Get("/no/such/path")->status, 404);
}

TEST(HttpServer, BadRequestsGetOneLineErrors) {
  HttpOptions o;
  o.max_body_bytes = 64 << 20;
  Server server(o);
  auto error = [&](const std::string& path, const std::string& body, int status, std::optional<size_t> h = {}) {
    auto res = server.post(path, body, h);
    if (!res) return std::string("no response");
    EXPECT_EQ(res->status, status) << path << ": " << res->body;
    return json::parse(res->body).value("error", std::string());
  };
  EXPECT_EQ(error("/v2/models/b0/infer", "{not json", 400), "the request body is not valid JSON");
  EXPECT_EQ(error("/v2/models/nope/infer", "{}", 404), "model 'nope' is not loaded");
  // Names that would leave the repository never reach it.
  EXPECT_EQ(error("/v2/models/..%2F..%2Fetc/infer", "{}", 404), "no such endpoint");
  EXPECT_EQ(error("/v2/models/.hidden/infer", "{}", 404), "model '.hidden' is not loaded");
  EXPECT_EQ(error("/v2/repository/models/...%2Fb0/load", "", 404), "no such endpoint");
  EXPECT_EQ(error("/v2/repository/models/..../load", "", 404), "the repository has no model '....'");
  EXPECT_EQ(error("/v2/models/b0/versions/01/infer", "{}", 404), "model 'b0' has no loaded version '01'");
  EXPECT_EQ(error("/v2/models/b0/infer", R"({"inputs": [{"name": "image", "datatype": "BYTES", "shape": [1],
                                                         "data": ["not an image"]}]})",
                  400),
            "[image] image 0: not a JPEG, PNG or WebP image");
  EXPECT_EQ(error("/v2/models/b0/infer", R"({"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [1, 3],
                                                         "data": [1, 2, 3]}]})",
                  400),
            "input 'pixels' must be FP32 of [batch, 3, 224, 224]");
  auto [five, five_header] = image_request({kImages[0], kImages[1], kImages[2], kImages[0], kImages[1]}, json::array());
  EXPECT_EQ(error("/v2/models/b0/infer", five, 400, five_header),
            "the request holds 5 batch items, more than the model's max_batch_size 4");
  EXPECT_EQ(error("/v2/models/b0/infer", "{}", 400, 10), "Inference-Header-Content-Length is larger than the body");
  // A 100 MB body is refused unread.
  auto res = server.post("/v2/models/b0/infer", std::string(100 << 20, 'x'));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  // An image whose header claims more pixels than the server takes is refused before decoding.
  std::string big = read_file(test::source_dir() + "/samples/rocket.jpg");
  size_t sof = big.find("\xff\xc0");
  if (sof == std::string::npos) sof = big.find("\xff\xc2");
  ASSERT_NE(sof, std::string::npos);
  big.replace(sof + 5, 4, "\x75\x30\x75\x30");  // 30000 x 30000 pixels
  json req = {{"inputs",
               {{{"name", "image"},
                 {"datatype", "BYTES"},
                 {"shape", {1}},
                 {"parameters", {{"binary_data_size", big.size() + 4}}}}}}};
  std::string body = req.dump();
  size_t header = body.size();
  EXPECT_NE(error("/v2/models/b0/infer", body + le32(static_cast<uint32_t>(big.size())) + big, 400, header)
                .find("out of range"),
            std::string::npos);
  // The server is still well.
  EXPECT_EQ(server.client->Get("/v2/health/ready")->status, 200);
}

TEST(HttpServer, BearerTokenGuardsAllButHealth) {
  HttpOptions o;
  o.auth_token = "0123456789abcdef-token";
  Server server(o);
  auto& c = *server.client;
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/b0")->status, 401);
  EXPECT_EQ(c.Get("/v2/models/b0", {{"Authorization", "Bearer 0123456789abcdef-tokeN"}})->status, 401);
  EXPECT_EQ(c.Get("/v2/models/b0", {{"Authorization", "Bearer 0123456789abcdef-token"}})->status, 200);
}

TEST(HttpServer, UnloadAnswersQueuedRequestsThenRefuses) {
  // A copy of the repository whose model waits a long time to fill its batches.
  std::string root = repository_root() + "-slow";
  fs::create_directories(root + "/b0/1");
  fs::copy_file(repository_root() + "/b0/1/model.bundle", root + "/b0/1/model.bundle",
                fs::copy_options::overwrite_existing);
  std::ofstream(root + "/b0/config.json") << R"({"max_queue_delay_us": 8000000, "max_batch_size": 4})";
  Server server({}, root);
  auto [body, header] = image_request({kImages[0]}, json::array());
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < 2; ++i)
    clients.emplace_back([&, body = body, header = header] {
      httplib::Client c("127.0.0.1", server.http->port());
      c.set_read_timeout(60, 0);
      auto res = c.Post("/v2/models/b0/infer", {{"Inference-Header-Content-Length", std::to_string(header)}}, body,
                        "application/octet-stream");
      if (res && res->status == 200) ++ok;
    });
  std::this_thread::sleep_for(std::chrono::seconds(2));  // both are queued, waiting for more
  auto t0 = Clock::now();
  auto res = server.client->Post("/v2/repository/models/b0/unload", "", "application/json");
  EXPECT_EQ(res->status, 200);
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok, 2);                                       // answered, not dropped
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(6));  // at once, not after the batching delay
  EXPECT_EQ(server.post("/v2/models/b0/infer", body, header)->status, 404);
  EXPECT_EQ(server.client->Get("/v2/models/b0/ready")->status, 400);
  EXPECT_EQ(server.client->Post("/v2/repository/models/b0/load", "", "application/json")->status, 200);
  EXPECT_EQ(server.client->Get("/v2/models/b0/ready")->status, 200);
}

// Sends raw bytes on a fresh connection and returns what comes back until the server closes it.
std::string raw_exchange(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return "no connection";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) return "no write";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, n);
  close(fd);
  return out;
}

TEST(HttpServer, BodiesThatWouldBypassTheSizeCapAreRefusedUnread) {
  HttpOptions o;
  o.max_body_bytes = 1 << 20;
  Server server(o);
  const int port = server.http->port();
  // Chunked, without a length, compressed: answered before any of the body is read, and the
  // connection closed (its unread bytes are not a next request).
  std::string chunked =
      raw_exchange(port,
                   "POST /v2/models/b0/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5\r\nhello\r\n");
  EXPECT_NE(chunked.find("HTTP/1.1 411"), std::string::npos) << chunked;
  EXPECT_NE(chunked.find("not chunked"), std::string::npos) << chunked;
  std::string unsized = raw_exchange(port, "POST /v2/models/b0/infer HTTP/1.1\r\nHost: x\r\n\r\n{\"inputs\"");
  EXPECT_NE(unsized.find("HTTP/1.1 411"), std::string::npos) << unsized;
  std::string gzip = raw_exchange(
      port, "POST /v2/models/b0/infer HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd");
  EXPECT_NE(gzip.find("HTTP/1.1 415"), std::string::npos) << gzip;
  // A model name that is not UTF-8 once decoded: a JSON error, not a failed reply.
  auto res = server.client->Get("/v2/models/%ff");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"], "model '\xef\xbf\xbd' is not loaded");
  // /metrics lives on the metrics server only, and a second server cannot take a used port.
  EXPECT_EQ(server.client->Get("/metrics")->status, 404);
  Metrics metrics;
  HttpOptions same;
  same.port = port;
  HttpServer second(nullptr, &metrics, same);
  EXPECT_THROW(second.start(), Error);
  EXPECT_EQ(server.client->Get("/v2/health/live")->status, 200);
}

TEST(HttpServer, AClientThatHangsUpMidBodyHarmsNoOne) {
  Server server;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.http->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string partial = "POST /v2/models/b0/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"inputs\": [";
  ASSERT_EQ(write(fd, partial.data(), partial.size()), static_cast<ssize_t>(partial.size()));
  close(fd);
  auto [body, header] = image_request({kImages[1]}, json::array());
  auto res = server.post("/v2/models/b0/infer", body, header);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

}  // namespace
}  // namespace kiln::serve
