// The Open Inference Protocol over gRPC (KServe v2 GRPCInferenceService, grpc_service.proto):
// the same repository, batchers and servables as the HTTP front end, the same semantics;
// tensors in raw_input_contents / raw_output_contents or typed contents.
#pragma once

#include <memory>
#include <string>

#include "serve/repository.h"

namespace grpc {
class Server;
}

namespace kiln::serve {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 8001;  // 0: any free port (port() says which)
  size_t max_message_bytes = 64 << 20;
  std::string auth_token;  // non-empty: every call but ServerLive/ServerReady needs it
};

class GrpcServer {
 public:
  GrpcServer(Repository* repository, GrpcOptions options);
  ~GrpcServer();
  // Binds (throws kiln::Error when it cannot) and serves on gRPC's own threads.
  void start();
  int port() const { return port_; }
  // Not ready from now on, while calls still run.
  void drain();
  // Stops accepting and waits for the calls in flight.
  void stop();

  class Service;

 private:
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  GrpcOptions options_;
  int port_ = 0;
};

}  // namespace kiln::serve
