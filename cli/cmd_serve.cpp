#include <fmt/format.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "serve/grpc/grpc_server.h"
#include "serve/http_server.h"

namespace kiln::cli {

// Serves a model repository over the Open Inference Protocol until SIGTERM or SIGINT, then stops
// accepting, answers every request already taken and exits 0.
Command add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve",
                                 "Serve a model repository (DIR/<model>/<version>/model.bundle) over the "
                                 "Open Inference Protocol (KServe v2) on HTTP");
  struct Args {
    std::string models, host = "127.0.0.1", device = "auto", token_file, access_log;
    int http_port = 8000, grpc_port = 8001, metrics_port = 8002, threads = 64;
    size_t max_request_mb = 64;
    uint64_t max_image_pixels = 40'000'000;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--models", args->models, "Model repository folder")->required();
  cmd->add_option("--host", args->host, "Address to listen on (0.0.0.0: every interface)");
  cmd->add_option("--http-port", args->http_port, "HTTP port of the inference API (0: any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--grpc-port", args->grpc_port, "gRPC port of the inference API (0: any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--metrics-port", args->metrics_port, "HTTP port of /metrics for Prometheus (0: any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--device", args->device, "cpu, cuda, or auto (a model's config.json may say otherwise)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--http-threads", args->threads, "Connections served at once")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-request-mb", args->max_request_mb, "Largest request body, MiB")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-image-pixels", args->max_image_pixels, "Largest encoded image a request may send")
      ->check(CLI::Range(1, 1 << 28));
  cmd->add_option("--auth-token-file", args->token_file,
                  "File holding a bearer token every /v2 request but health checks must send");
  cmd->add_option("--access-log", args->access_log, "Write one JSON line per request to this file ('-': stderr)");
  return [args] {
    // The signals go to sigwait below, not to whichever thread they would interrupt.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is an error on its socket, not a signal

    serve::HttpOptions http;
    http.host = args->host;
    http.port = args->http_port;
    http.threads = args->threads;
    http.max_body_bytes = args->max_request_mb << 20;
    if (!args->token_file.empty()) {
      std::ifstream in(args->token_file);
      KILN_CHECK(in, "[serve] cannot open {}", args->token_file);
      std::getline(in, http.auth_token);
      while (!http.auth_token.empty() && std::isspace(static_cast<unsigned char>(http.auth_token.back())))
        http.auth_token.pop_back();
      KILN_CHECK(http.auth_token.size() >= 16, "[serve] {}: the token must have at least 16 characters",
                 args->token_file);
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(nullptr, std::fclose);
    if (args->access_log == "-") {
      http.access_log = stderr;
    } else if (!args->access_log.empty()) {
      log.reset(std::fopen(args->access_log.c_str(), "a"));
      KILN_CHECK(log, "[serve] cannot open {} for the access log", args->access_log);
      http.access_log = log.get();
    }

    serve::Metrics metrics;
    serve::Repository repository(args->models, {args->device, args->max_image_pixels}, &metrics);
    repository.load_all();
    for (const auto& m : repository.index())
      if (m["state"] != "READY")
        fmt::print(stderr, "kiln serve: model '{}' is not available: {}\n", m["name"].get<std::string>(),
                   m["reason"].get<std::string>());
    serve::HttpServer api(&repository, &metrics, http);
    serve::HttpOptions metrics_http = http;
    metrics_http.port = args->metrics_port;
    metrics_http.threads = 2;
    metrics_http.auth_token.clear();
    serve::HttpServer metrics_server(nullptr, &metrics, metrics_http);
    serve::GrpcServer grpc(&repository, {args->host, args->grpc_port, http.max_body_bytes, http.auth_token});
    api.start();
    grpc.start();
    metrics_server.start();
    fmt::print("kiln serve: {} models; HTTP on {}:{}, gRPC on {}:{}, metrics on {}:{}\n", repository.index().size(),
               args->host, api.port(), args->host, grpc.port(), args->host, metrics_server.port());
    std::fflush(stdout);

    int signal = 0;
    sigwait(&stop_signals, &signal);
    fmt::print(stderr, "kiln serve: {} received, finishing the requests in flight\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
    api.drain();
    grpc.drain();
    api.stop();
    grpc.stop();
    repository.unload_all();
    metrics_server.stop();
    return 0;
  };
}

}  // namespace kiln::cli
