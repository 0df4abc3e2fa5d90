#!/usr/bin/env python3
"""A gRPC client of kiln serve made the way a Python user makes one: stubs generated from
serve/grpc/grpc_service.proto (protoc with gRPC's Python plugin), grpcio and protobuf from Debian.
Checks health and metadata, then classifies one image (raw BYTES input, the classification
extension on "probabilities", the raw "logits") and prints one JSON line: the top class string
and the logits as float.hex() strings, for the caller to compare bit for bit.

    grpc_python_client.py PROTO_DIR ADDRESS MODEL IMAGE
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def main():
    proto_dir, address, model, image = sys.argv[1:5]
    out = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--python_out={out}", f"--grpc_out={out}",
                    "--plugin=protoc-gen-grpc=" + os.environ.get("GRPC_PYTHON_PLUGIN", "/usr/bin/grpc_python_plugin"),
                    "-I", proto_dir, os.path.join(proto_dir, "grpc_service.proto")], check=True)
    sys.path.insert(0, out)
    import grpc
    import grpc_service_pb2 as pb
    import grpc_service_pb2_grpc as rpc

    stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel(address))
    assert stub.ServerLive(pb.ServerLiveRequest()).live
    assert stub.ServerReady(pb.ServerReadyRequest()).ready
    meta = stub.ModelMetadata(pb.ModelMetadataRequest(name=model))
    assert meta.platform == "kiln_image_classification", meta.platform
    data = open(image, "rb").read()
    request = pb.ModelInferRequest(model_name=model, id="py-1")
    request.inputs.add(name="image", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(struct.pack("<I", len(data)) + data)
    request.outputs.add(name="logits")
    top = request.outputs.add(name="probabilities")
    top.parameters["classification"].int64_param = 1
    response = stub.ModelInfer(request)
    assert response.id == "py-1" and response.model_version == "1", response
    logits = struct.unpack(f"<{len(response.raw_output_contents[0]) // 4}f", response.raw_output_contents[0])
    (n,) = struct.unpack("<I", response.raw_output_contents[1][:4])
    label = response.raw_output_contents[1][4:4 + n].decode()
    try:
        stub.ModelMetadata(pb.ModelMetadataRequest(name="nope"))
        raise AssertionError("an unknown model was found")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.NOT_FOUND, e.code()
    print(json.dumps({"top": label, "logits": [float(x).hex() for x in logits]}))


if __name__ == "__main__":
    main()
