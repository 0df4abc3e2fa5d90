#include "serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "serve/auth.h"
#include "serve/infer_json.h"

namespace kiln::serve {

int http_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::BadRequest:
      return 400;
    case ErrorKind::NotFound:
      return 404;
    case ErrorKind::Overloaded:
      return 429;
    case ErrorKind::Unavailable:
      return 503;
    case ErrorKind::Timeout:
      return 504;
    case ErrorKind::Internal:
      break;
  }
  return 500;
}

namespace {

using json = nlohmann::json;
using Request = httplib::Request;
using Response = httplib::Response;

void reply(Response& res, int status, const json& body) {
  res.status = status;
  // Model names come percent-decoded from the path and may not be UTF-8.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void reply_error(Response& res, int status, const std::string& message) { reply(res, status, {{"error", message}}); }

// Runs a handler, answering every exception as the protocol's {"error": ...}.
template <typename F>
void guarded(Response& res, F&& f) {
  try {
    f();
  } catch (const ServeError& e) {
    reply_error(res, http_status(e.kind()), e.what());
    if (e.kind() == ErrorKind::Overloaded) res.set_header("Retry-After", "1");
  } catch (const std::exception& e) {
    reply_error(res, 500, e.what());
  }
}

json tensor_metadata(const std::vector<TensorMetadata>& ts) {
  json out = json::array();
  for (const auto& t : ts) out.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return out;
}

std::optional<size_t> header_length(const Request& req) {
  if (!req.has_header("Inference-Header-Content-Length")) return std::nullopt;
  std::string v = req.get_header_value("Inference-Header-Content-Length");
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    bad_request("Inference-Header-Content-Length must be a decimal number");
  return std::stoull(v);
}

thread_local Clock::time_point request_start;

}  // namespace

HttpServer::HttpServer(Repository* repository, Metrics* metrics, HttpOptions options)
    : server_(std::make_unique<httplib::Server>()),
      repository_(repository),
      metrics_(metrics),
      options_(std::move(options)) {
  auto& s = *server_;
  int threads = options_.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(options_.max_body_bytes);
  // cpp-httplib closes a kept-alive connection after 5 requests by default: clients that reuse
  // connections (load balancers, wrk) then race the close and see read errors.
  s.set_keep_alive_max_count(100000);
  // Without TCP_NODELAY a response's body waits for the ACK of its headers (Nagle), which the
  // client delays by up to 40 ms: measured, one client's request took 60 ms of which the server
  // spent 18.
  s.set_tcp_nodelay(true);
  // It also listens with a backlog of 5: a burst of clients overflows the accept queue and the
  // kernel resets their connections after they sent a request. Remember the listening socket
  // so that start() can listen again with a deep backlog (Linux takes a second listen()).
  s.set_socket_options([this](int sock) {
    int on = 1;  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which lets a second
                 // server bind the same port silently and take half its connections
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    listen_socket_ = sock;
  });
  // Runs before a body is read. cpp-httplib caps a body by its Content-Length only: a chunked
  // body, one without a length (read to the end of the connection) or a compressed one (capped
  // before it is inflated) would bypass --max-request-mb, so they are refused unread.
  s.set_pre_routing_handler([this](const Request& req, Response& res) {
    request_start = Clock::now();
    auto refuse = [&](int status, const std::string& message) {
      res.set_header("Connection", "close");  // the unread body must not be taken for a request
      reply_error(res, status, message);
      return httplib::Server::HandlerResponse::Handled;
    };
    if (req.has_header("Transfer-Encoding")) return refuse(411, "send the body with a Content-Length, not chunked");
    if (req.method == "POST" && !req.has_header("Content-Length"))
      return refuse(411, "send a Content-Length (curl: --data '' for an empty body)");
    if (req.has_header("Content-Encoding") && req.get_header_value("Content-Encoding") != "identity")
      return refuse(415, "compressed request bodies are not accepted");
    bool open = req.path.rfind("/v2/health/", 0) == 0;
    if (options_.auth_token.empty() || open) return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_token_matches(req.get_header_value("Authorization"), options_.auth_token))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    return refuse(401, "a valid bearer token is required");
  });
  s.set_error_handler([](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    // cpp-httplib caps form-encoded bodies at 8 KiB: curl's default content type for --data-binary.
    if (res.status == 413 && req.get_header_value("Content-Type") == "application/x-www-form-urlencoded")
      reply_error(res, 413,
                  "form-encoded bodies are limited to 8 KiB: send Content-Type: application/json or "
                  "application/octet-stream");
    else if (res.status == 413)
      reply_error(res, 413, "the request body is larger than the server takes");
    if (res.status == 404) reply_error(res, 404, "no such endpoint");
  });
  if (std::FILE* log = options_.access_log)
    s.set_logger([log](const Request& req, const Response& res) {
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - request_start).count();
      json line = {{"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
                   {"remote", req.remote_addr},
                   {"method", req.method},
                   {"path", req.path},
                   {"status", res.status},
                   {"bytes_in", req.body.size()},
                   {"bytes_out", res.body.size()},
                   {"ms", std::round(ms * 1000) / 1000}};
      std::fprintf(log, "%s\n", line.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
      std::fflush(log);
    });
  if (repository_)
    add_inference_routes();
  else
    s.Get("/metrics",
          [this](const Request&, Response& res) { res.set_content(metrics_->render(), "text/plain; version=0.0.4"); });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::add_inference_routes() {
  auto& s = *server_;
  Repository& repo = *repository_;
  s.Get("/v2/health/live", [](const Request&, Response& res) { reply(res, 200, json::object()); });
  s.Get("/v2/health/ready", [this, &repo](const Request&, Response& res) {
    bool ready = !draining_ && repo.ready();
    if (ready)
      reply(res, 200, json::object());
    else
      reply_error(res, 503, draining_ ? "the server is shutting down" : "a model failed to load");
  });
  s.Get("/v2", [](const Request&, Response& res) {
    reply(res, 200,
          {{"name", "kiln"},
           {"version", KILN_VERSION},
           {"extensions", {"binary_tensor_data", "classification", "model_repository"}}});
  });
  const char* model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  s.Get(model, [&repo](const Request& req, Response& res) {
    guarded(res, [&] {
      auto batcher = repo.find(req.matches[1], req.matches[2]);
      const Servable& sv = batcher->servable();
      reply(res, 200,
            {{"name", req.matches[1].str()},
             {"versions", repo.versions(req.matches[1])},
             {"platform", sv.platform()},
             {"inputs", tensor_metadata(sv.inputs())},
             {"outputs", tensor_metadata(sv.outputs())},
             {"parameters",
              {{"max_batch_size", batcher->config().max_batch_size},
               {"device", sv.info().device},
               {"model_id", sv.info().model_id},
               {"precision", sv.info().precision}}}});
    });
  });
  s.Get(std::string(model) + "/ready", [&repo](const Request& req, Response& res) {
    try {
      repo.find(req.matches[1], req.matches[2]);
      reply(res, 200, json::object());
    } catch (const ServeError& e) {
      reply_error(res, 400, e.what());
    }
  });
  s.Post(std::string(model) + "/infer", [&repo](const Request& req, Response& res) {
    guarded(res, [&] {
      auto batcher = repo.find(req.matches[1], req.matches[2]);
      auto request = std::make_shared<InferRequest>(parse_infer_request(req.body, header_length(req)));
      InferResponse response{req.matches[1], batcher->version(), request->id, batcher->submit(request).get()};
      std::optional<size_t> json_length;
      std::string body = encode_infer_response(response, *request, &json_length);
      res.status = 200;
      if (json_length) {
        res.set_header("Inference-Header-Content-Length", std::to_string(*json_length));
        res.set_content(std::move(body), "application/octet-stream");
      } else {
        res.set_content(std::move(body), "application/json");
      }
    });
  });
  s.Post("/v2/repository/index", [&repo](const Request&, Response& res) { reply(res, 200, repo.index()); });
  s.Post(R"(/v2/repository/models/([^/]+)/(load|unload))", [&repo](const Request& req, Response& res) {
    guarded(res, [&] {
      if (req.matches[2] == "load")
        repo.load(req.matches[1]);
      else
        repo.unload(req.matches[1]);
      reply(res, 200, json::object());
    });
  });
}

void HttpServer::start() {
  auto& s = *server_;
  if (options_.port == 0) {
    port_ = s.bind_to_any_port(options_.host);
    KILN_CHECK(port_ > 0, "[serve] cannot listen on {}", options_.host);
  } else {
    KILN_CHECK(s.bind_to_port(options_.host, options_.port), "[serve] cannot listen on {}:{} (in use?)", options_.host,
               options_.port);
    port_ = options_.port;
  }
  KILN_CHECK(listen_socket_ >= 0 && ::listen(listen_socket_, SOMAXCONN) == 0, "[serve] cannot listen on {}:{}",
             options_.host, port_);
  thread_ = std::thread([&s] { s.listen_after_bind(); });
  // cpp-httplib's stop() does nothing before the loop runs: wait for it, so that a stop() right
  // after (another server failing to start) ends it.
  for (int i = 0; i < 5000 && !s.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  KILN_CHECK(s.is_running(), "[serve] the server on {}:{} did not start", options_.host, port_);
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace kiln::serve
