#include "serve/grpc/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "core/checked_math.h"
#include "core/error.h"
#include "grpc_service.grpc.pb.h"
#include "serve/auth.h"
#include "serve/infer_json.h"

namespace kiln::serve {
namespace {

grpc::Status to_status(const ServeError& e) {
  switch (e.kind()) {
    case ErrorKind::BadRequest:
      return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
    case ErrorKind::NotFound:
      return {grpc::StatusCode::NOT_FOUND, e.what()};
    case ErrorKind::Overloaded:
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, e.what()};
    case ErrorKind::Unavailable:
      return {grpc::StatusCode::UNAVAILABLE, e.what()};
    case ErrorKind::Timeout:
      return {grpc::StatusCode::DEADLINE_EXCEEDED, e.what()};
    case ErrorKind::Internal:
      break;
  }
  return {grpc::StatusCode::INTERNAL, e.what()};
}

// Runs a call, answering every exception with its status.
template <typename F>
grpc::Status guarded(F&& f) {
  try {
    f();
    return grpc::Status::OK;
  } catch (const ServeError& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, e.what()};
  }
}

nlohmann::json parameters_json(const google::protobuf::Map<std::string, inference::InferParameter>& map) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, p] : map) {
    switch (p.parameter_choice_case()) {
      case inference::InferParameter::kBoolParam:
        out[key] = p.bool_param();
        break;
      case inference::InferParameter::kInt64Param:
        out[key] = p.int64_param();
        break;
      case inference::InferParameter::kStringParam:
        out[key] = p.string_param();
        break;
      case inference::InferParameter::kDoubleParam:
        out[key] = p.double_param();
        break;
      case inference::InferParameter::kUint64Param:
        out[key] = p.uint64_param();
        break;
      default:
        bad_request("parameter '" + key + "' has no value");
    }
  }
  return out;
}

template <typename T, typename Field>
void put_all(InferTensor& t, const Field& values, uint64_t numel, const std::string& what) {
  if (static_cast<uint64_t>(values.size()) != numel)
    bad_request(what + ": the contents hold " + std::to_string(values.size()) + " elements, the shape " +
                std::to_string(numel));
  t.data.resize(numel * sizeof(T));
  for (int i = 0; i < values.size(); ++i) {
    const auto v = values[i];
    if constexpr (std::is_integral_v<T> && !std::is_same_v<std::decay_t<decltype(v)>, bool>)
      if (!std::in_range<T>(v)) bad_request(what + ": an element does not fit " + t.datatype);
    const T x = static_cast<T>(v);
    std::memcpy(t.data.data() + i * sizeof(T), &x, sizeof(T));
  }
}

// Typed contents: each datatype in the field the protocol gives it.
void fill_from_contents(InferTensor& t, const inference::InferTensorContents& c, const std::string& what) {
  uint64_t numel;
  try {
    numel = checked_numel(t.shape, what.c_str());
  } catch (const Error&) {
    bad_request(what + ": the shape's element count overflows or is negative");
  }
  const std::string& dt = t.datatype;
  if (dt == "BYTES") {
    if (static_cast<uint64_t>(c.bytes_contents_size()) != numel)
      bad_request(what + ": the contents hold " + std::to_string(c.bytes_contents_size()) + " elements, the shape " +
                  std::to_string(numel));
    t.strings.assign(c.bytes_contents().begin(), c.bytes_contents().end());
  } else if (dt == "FP32") {
    put_all<float>(t, c.fp32_contents(), numel, what);
  } else if (dt == "FP64") {
    put_all<double>(t, c.fp64_contents(), numel, what);
  } else if (dt == "INT64") {
    put_all<int64_t>(t, c.int64_contents(), numel, what);
  } else if (dt == "INT32") {
    put_all<int32_t>(t, c.int_contents(), numel, what);
  } else if (dt == "INT16") {
    put_all<int16_t>(t, c.int_contents(), numel, what);
  } else if (dt == "INT8") {
    put_all<int8_t>(t, c.int_contents(), numel, what);
  } else if (dt == "UINT64") {
    put_all<uint64_t>(t, c.uint64_contents(), numel, what);
  } else if (dt == "UINT32") {
    put_all<uint32_t>(t, c.uint_contents(), numel, what);
  } else if (dt == "UINT16") {
    put_all<uint16_t>(t, c.uint_contents(), numel, what);
  } else if (dt == "UINT8") {
    put_all<uint8_t>(t, c.uint_contents(), numel, what);
  } else if (dt == "BOOL") {
    put_all<uint8_t>(t, c.bool_contents(), numel, what);
  } else {
    bad_request(what + ": " + dt + " tensors must come as raw_input_contents");
  }
}

InferRequest from_proto(const inference::ModelInferRequest& m) {
  InferRequest r;
  r.id = m.id();
  r.parameters = parameters_json(m.parameters());
  if (m.inputs().empty()) bad_request("the request has no inputs");
  const bool raw = !m.raw_input_contents().empty();
  if (raw && m.raw_input_contents_size() != m.inputs_size())
    bad_request("raw_input_contents must hold one entry per input");
  for (int i = 0; i < m.inputs_size(); ++i) {
    const auto& in = m.inputs(i);
    const std::string what = "input '" + in.name() + "'";
    if (r.input(in.name())) bad_request(what + " is given twice");
    if (!datatype_size(in.datatype())) bad_request(what + ": unknown datatype '" + in.datatype() + "'");
    if (in.shape_size() > 16) bad_request(what + ": more than 16 dimensions");
    InferTensor t{
        in.name(), in.datatype(), {in.shape().begin(), in.shape().end()}, {}, {}, parameters_json(in.parameters())};
    for (int64_t d : t.shape)
      if (d < 0) bad_request(what + ": shape sizes must not be negative");
    if (raw)
      fill_from_binary(t, m.raw_input_contents(i), what);
    else
      fill_from_contents(t, in.contents(), what);
    r.inputs.push_back(std::move(t));
  }
  for (const auto& o : m.outputs()) {
    for (const auto& seen : r.outputs)
      if (seen.name == o.name()) bad_request("output '" + o.name() + "' is asked for twice");
    RequestedOutput out{o.name(), true, 0};
    nlohmann::json p = parameters_json(o.parameters());
    if (p.contains("classification")) {
      if (!p["classification"].is_number_integer() || p["classification"].get<int64_t>() < 1 ||
          p["classification"].get<int64_t>() > 1000000)
        bad_request("output '" + o.name() + "': classification must be a positive integer");
      out.classification = static_cast<int>(p["classification"].get<int64_t>());
    }
    r.outputs.push_back(std::move(out));
  }
  return r;
}

}  // namespace

class GrpcServer::Service final : public inference::GRPCInferenceService::Service {
 public:
  Service(Repository* repository, std::string token) : repository_(*repository), token_(std::move(token)) {}
  std::atomic<bool> draining{false};

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* out) override {
    out->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* out) override {
    out->set_ready(!draining && repository_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext* context, const inference::ModelReadyRequest* in,
                          inference::ModelReadyResponse* out) override {
    if (auto denied = authorize(context)) return *denied;
    try {
      repository_.find(in->name(), in->version());
      out->set_ready(true);
    } catch (const ServeError&) {
      out->set_ready(false);
    }
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext* context, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* out) override {
    if (auto denied = authorize(context)) return *denied;
    out->set_name("kiln");
    out->set_version(KILN_VERSION);
    for (const char* e : {"binary_tensor_data", "classification", "model_repository"}) out->add_extensions(e);
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext* context, const inference::ModelMetadataRequest* in,
                             inference::ModelMetadataResponse* out) override {
    if (auto denied = authorize(context)) return *denied;
    return guarded([&] {
      auto batcher = repository_.find(in->name(), in->version());
      const Servable& s = batcher->servable();
      out->set_name(in->name());
      for (const auto& v : repository_.versions(in->name())) out->add_versions(v);
      out->set_platform(s.platform());
      auto add = [](auto* list, const std::vector<TensorMetadata>& ts) {
        for (const auto& t : ts) {
          auto* m = list->Add();
          m->set_name(t.name);
          m->set_datatype(t.datatype);
          for (int64_t d : t.shape) m->add_shape(d);
        }
      };
      add(out->mutable_inputs(), s.inputs());
      add(out->mutable_outputs(), s.outputs());
    });
  }
  grpc::Status ModelInfer(grpc::ServerContext* context, const inference::ModelInferRequest* in,
                          inference::ModelInferResponse* out) override {
    if (auto denied = authorize(context)) return *denied;
    return guarded([&] {
      auto batcher = repository_.find(in->model_name(), in->model_version());
      auto request = std::make_shared<InferRequest>(from_proto(*in));
      std::vector<InferTensor> outputs = batcher->submit(request).get();
      out->set_model_name(in->model_name());
      out->set_model_version(batcher->version());
      out->set_id(request->id);
      for (const auto& t : outputs) {
        auto* o = out->add_outputs();
        o->set_name(t.name);
        o->set_datatype(t.datatype);
        for (int64_t d : t.shape) o->add_shape(d);
        out->add_raw_output_contents(binary_data(t));
      }
    });
  }

 private:
  std::optional<grpc::Status> authorize(grpc::ServerContext* context) const {
    if (token_.empty()) return std::nullopt;
    const auto& md = context->client_metadata();
    auto it = md.find("authorization");
    std::string_view given = it == md.end() ? "" : std::string_view(it->second.data(), it->second.size());
    if (bearer_token_matches(given, token_)) return std::nullopt;
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "a valid bearer token is required");
  }

  Repository& repository_;
  std::string token_;
};

GrpcServer::GrpcServer(Repository* repository, GrpcOptions options)
    : service_(std::make_unique<Service>(repository, options.auth_token)), options_(std::move(options)) {}

GrpcServer::~GrpcServer() { stop(); }

void GrpcServer::start() {
  grpc::ServerBuilder builder;
  const std::string address = options_.host + ":" + std::to_string(options_.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(options_.max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  // One port, one server: gRPC would otherwise let a second process share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  KILN_CHECK(server_ && port_ > 0, "[serve] cannot serve gRPC on {} (in use?)", address);
}

void GrpcServer::drain() { service_->draining = true; }

void GrpcServer::stop() {
  if (!server_) return;
  server_->Shutdown();
  server_.reset();
}

}  // namespace kiln::serve
