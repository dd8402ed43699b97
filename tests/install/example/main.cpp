// sdk_example SOCKET: connects, and when a server is there, streams one
// token-id request. With no server it must report kUnavailable.
#include <cstdio>
#include <variant>

#include <ringserve/client/client.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sdk_example SOCKET\n");
    return 2;
  }
  ringserve::ClientOptions options;
  options.client_name = "sdk_example";
  auto client = ringserve::Client::connect(argv[1], options);
  if (!client) {
    if (client.error().code != ringserve::Errc::kUnavailable) {
      std::fprintf(stderr, "sdk_example: unexpected error: %s\n",
                   client.error().to_string().c_str());
      return 1;
    }
    std::printf("sdk_example: ok (no server: %s)\n", client.error().to_string().c_str());
    return 0;
  }
  ringserve::GenerateRequest request;
  request.prompt = ringserve::protocol::PromptIds{{1, 2, 3}};
  request.sampling.max_new_tokens = 8;
  auto stream = (*client)->generate(request);
  if (!stream) return 1;
  for (;;) {
    auto event = stream->next();
    if (!event) {
      std::fprintf(stderr, "sdk_example: %s\n", event.error().to_string().c_str());
      return 1;
    }
    if (!*event) break;
    if (auto* tokens = std::get_if<ringserve::TokenEvent>(&**event)) {
      std::printf("%s", tokens->text.c_str());
    }
  }
  std::printf("\nsdk_example: ok\n");
  return 0;
}
