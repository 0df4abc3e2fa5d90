// kiln serve's gRPC API (KServe v2 GRPCInferenceService) on loopback with the generated client:
// health and metadata, raw and typed tensors checked bit for bit against kiln::Classifier, the
// classification extension, and the status codes of bad calls.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>

#include "grpc_service.grpc.pb.h"
#include "serve/grpc/grpc_server.h"
#include "tests/serve/classifier_repository.h"

namespace kiln::serve {
namespace {

using test_repository::kImages;

struct GrpcFixture {
  Metrics metrics;
  Repository repository{test_repository::root(), ServableOptions{"cpu", 40'000'000}, &metrics};
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub;
  explicit GrpcFixture(std::string token = "") {
    EXPECT_EQ(repository.load_all(), 0);
    server = std::make_unique<GrpcServer>(&repository, GrpcOptions{"127.0.0.1", 0, 64 << 20, std::move(token)});
    server->start();
    stub = inference::GRPCInferenceService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()), grpc::InsecureChannelCredentials()));
  }
};

// Three encoded images as one raw BYTES input.
inference::ModelInferRequest image_request() {
  inference::ModelInferRequest r;
  r.set_model_name("b0");
  r.set_id("g-1");
  auto* in = r.add_inputs();
  in->set_name("image");
  in->set_datatype("BYTES");
  in->add_shape(static_cast<int64_t>(kImages.size()));
  std::string raw;
  for (const auto& p : kImages) {
    std::string bytes = test_repository::read_file(test::source_dir() + "/" + p);
    uint32_t n = static_cast<uint32_t>(bytes.size());
    raw.append(reinterpret_cast<const char*>(&n), 4);
    raw += bytes;
  }
  r.add_raw_input_contents(raw);
  return r;
}

TEST(GrpcServer, AnswersLikeTheClassifier) {
  GrpcFixture f;
  grpc::ClientContext c1, c2, c3;
  inference::ServerLiveResponse live;
  ASSERT_TRUE(f.stub->ServerLive(&c1, {}, &live).ok());
  EXPECT_TRUE(live.live());
  inference::ServerReadyResponse ready;
  ASSERT_TRUE(f.stub->ServerReady(&c2, {}, &ready).ok());
  EXPECT_TRUE(ready.ready());
  inference::ModelMetadataRequest mr;
  mr.set_name("b0");
  inference::ModelMetadataResponse meta;
  ASSERT_TRUE(f.stub->ModelMetadata(&c3, mr, &meta).ok());
  EXPECT_EQ(meta.platform(), "kiln_image_classification");
  ASSERT_EQ(meta.inputs_size(), 2);
  EXPECT_EQ(meta.inputs(1).name(), "pixels");
  EXPECT_EQ(meta.inputs(1).shape_size(), 4);

  std::unique_ptr<Classifier> offline;
  ASSERT_TRUE(Classifier::load(test_repository::root() + "/b0/1/model.bundle", &offline, "cpu").ok());
  std::vector<std::string> paths;
  for (const auto& p : kImages) paths.push_back(test::source_dir() + "/" + p);
  std::vector<Classification> expected;
  ASSERT_TRUE(offline->classify_files(paths, 1, &expected).ok());

  inference::ModelInferRequest r = image_request();
  r.add_outputs()->set_name("logits");
  auto* top = r.add_outputs();
  top->set_name("probabilities");
  (*top->mutable_parameters())["classification"].set_int64_param(1);
  grpc::ClientContext c4;
  inference::ModelInferResponse out;
  grpc::Status s = f.stub->ModelInfer(&c4, r, &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(out.model_version(), "1");
  EXPECT_EQ(out.id(), "g-1");
  ASSERT_EQ(out.outputs_size(), 2);
  ASSERT_EQ(out.raw_output_contents_size(), 2);
  EXPECT_EQ(out.outputs(0).shape(1), 1000);
  ASSERT_EQ(out.raw_output_contents(0).size(), 3 * 1000 * 4u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(out.raw_output_contents(0).data() + i * 4000, expected[i].logits.data(), 4000), 0) << i;
  // The classification output: BYTES, each a 4-byte length and "probability:index:label".
  const std::string& cls = out.raw_output_contents(1);
  uint32_t n;
  std::memcpy(&n, cls.data(), 4);
  EXPECT_EQ(cls.substr(4, n), fmt::format("{}:{}:{}", expected[0].top[0].probability, expected[0].top[0].index,
                                          expected[0].top[0].label));

  // Typed contents: preprocessed pixels as fp32_contents, against Classifier::run.
  std::vector<float> pixels(3 * 224 * 224);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i * 7919) % 255) / 127.5f - 1;
  std::vector<float> logits;
  ASSERT_TRUE(offline->run(pixels.data(), 1, &logits).ok());
  inference::ModelInferRequest p;
  p.set_model_name("b0");
  auto* in = p.add_inputs();
  in->set_name("pixels");
  in->set_datatype("FP32");
  for (int64_t d : {1, 3, 224, 224}) in->add_shape(d);
  for (float v : pixels) in->mutable_contents()->add_fp32_contents(v);
  grpc::ClientContext c5;
  s = f.stub->ModelInfer(&c5, p, &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(out.raw_output_contents(0).size(), 4000u);
  EXPECT_EQ(std::memcmp(out.raw_output_contents(0).data(), logits.data(), 4000), 0);
}

TEST(GrpcServer, BadCallsGetTheirStatusCodes) {
  GrpcFixture f("0123456789abcdef-token");
  auto call = [&](const inference::ModelInferRequest& r, bool token = true) {
    grpc::ClientContext c;
    if (token) c.AddMetadata("authorization", "Bearer 0123456789abcdef-token");
    inference::ModelInferResponse out;
    return f.stub->ModelInfer(&c, r, &out);
  };
  inference::ModelInferRequest r = image_request();
  EXPECT_EQ(call(r, false).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call(r).ok());
  r.set_model_name("nope");
  grpc::Status s = call(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "model 'nope' is not loaded");
  r.set_model_name("b0");
  r.mutable_inputs(0)->set_shape(0, 2);  // the raw data holds three
  s = call(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "input 'image': the binary data holds more elements than the shape");
  r.mutable_inputs(0)->set_shape(0, 3);
  r.set_raw_input_contents(0, "garbage");
  s = call(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  inference::ModelInferRequest typed;
  typed.set_model_name("b0");
  auto* in = typed.add_inputs();
  in->set_name("pixels");
  in->set_datatype("FP32");
  for (int64_t d : {1, 3, 224, 224}) in->add_shape(d);
  in->mutable_contents()->add_fp32_contents(1);
  s = call(typed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "input 'pixels': the contents hold 1 elements, the shape 150528");
  // Health needs no token.
  grpc::ClientContext c;
  inference::ServerLiveResponse live;
  EXPECT_TRUE(f.stub->ServerLive(&c, {}, &live).ok());
}

}  // namespace
}  // namespace kiln::serve
