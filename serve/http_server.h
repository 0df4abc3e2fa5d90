// The Open Inference Protocol over HTTP/REST (cpp-httplib): health, server and model metadata,
// infer with JSON and binary tensors, the repository extension; or /metrics for Prometheus on a
// port of its own. Handlers run on a fixed pool of threads; a request blocks its thread while
// its batch runs.
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "serve/metrics.h"
#include "serve/repository.h"

namespace httplib {
class Server;
}

namespace kiln::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                   // 0: any free port (port() says which)
  int threads = 64;                  // connections served at once
  size_t max_body_bytes = 64 << 20;  // larger bodies are refused with 413
  std::string auth_token;            // non-empty: /v2 requests (but health) need "Bearer <token>"
  std::FILE* access_log = nullptr;   // one JSON line per request
};

// The HTTP status an error kind is answered with.
int http_status(ErrorKind kind);

class HttpServer {
 public:
  // Routes: the inference API when `repository` is given, else only /metrics (no token asked).
  HttpServer(Repository* repository, Metrics* metrics, HttpOptions options);
  ~HttpServer();
  // Binds (throws kiln::Error when the port is taken) and serves on a thread of its own.
  void start();
  int port() const { return port_; }
  // Not ready from now on (health/ready answers 503), while requests still run.
  void drain() { draining_ = true; }
  // Stops accepting, lets in-flight requests finish, joins.
  void stop();

 private:
  void add_inference_routes();
  std::unique_ptr<httplib::Server> server_;
  Repository* repository_;
  Metrics* metrics_;
  HttpOptions options_;
  int port_ = 0;
  int listen_socket_ = -1;
  std::atomic<bool> draining_{false};
  std::thread thread_;
};

}  // namespace kiln::serve
