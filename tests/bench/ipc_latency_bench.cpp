// Round-trip latency of a small request and response between two processes:
// the client encodes a Ping, the server decodes it and answers with an
// encoded Pong, which the client decodes. Three transports in one run:
//   ring-spin   shared-memory rings, both sides busy-poll
//   ring-sleep  shared-memory rings, both sides sleep on the eventfd at once
//   socket      size-prefixed frames over a Unix socketpair (the fallback)
// Targets (issue 2): ring p50 <= 2 us spinning, <= 15 us sleeping, both
// below the socket path.
//
//   ipc_latency_bench [iterations=20000] [warmup=2000]
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ringserve/protocol/codec.h"
#include "ringserve/protocol/shm_segment.h"

namespace {

using namespace ringserve;
using namespace ringserve::protocol;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "ipc_latency_bench: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T check(Expected<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().to_string());
  return std::move(r).value();
}
void check(Status s, const char* what) {
  if (!s) die(std::string(what) + ": " + s.error().to_string());
}

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

// Decode what arrived and check it is the expected kind.
template <class T>
T expect(std::span<const uint8_t> payload) {
  auto message = check(decode_message(payload, DecodeLimits{}), "decode");
  auto* m = std::get_if<T>(&message);
  if (m == nullptr) die(std::string("unexpected message ") + message_name(message));
  return *m;
}

// One transport: the two halves of a request/response exchange.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void send(const Frame& frame) = 0;
  virtual std::span<const uint8_t> receive() = 0;
};

class RingTransport : public Transport {
 public:
  RingTransport(RingWriter out, RingReader in, WaitOptions wait)
      : out_(std::move(out)), in_(std::move(in)), wait_(wait) {}
  void send(const Frame& frame) override {
    check(out_.write(frame.payload(), wait_), "ring write");
  }
  std::span<const uint8_t> receive() override {
    check(in_.read(buf_, wait_), "ring read");
    return buf_;
  }

 private:
  RingWriter out_;
  RingReader in_;
  WaitOptions wait_;
  std::vector<uint8_t> buf_;
};

class SocketTransport : public Transport {
 public:
  explicit SocketTransport(int fd) : fd_(fd) {}
  void send(const Frame& frame) override {
    auto bytes = frame.as_frame();
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) die("socket write");
      done += static_cast<size_t>(n);
    }
  }
  std::span<const uint8_t> receive() override {
    std::array<uint8_t, kFrameHeaderBytes> header{};
    read_exact(header.data(), header.size());
    const uint32_t size = check(parse_frame_header(header, DecodeLimits{}), "frame header");
    buf_.resize(size);
    read_exact(buf_.data(), size);
    return buf_;
  }

 private:
  void read_exact(uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t got = ::read(fd_, p, n);
      if (got <= 0) die("socket read");
      p += got;
      n -= static_cast<size_t>(got);
    }
  }
  int fd_;
  std::vector<uint8_t> buf_;
};

void serve(Transport& t, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    const Ping ping = expect<Ping>(t.receive());
    t.send(encode(Pong{ping.nonce, ping.client_time_ns}));
  }
}

std::vector<double> measure(Transport& t, int rounds, int warmup) {
  std::vector<double> us;
  us.reserve(static_cast<size_t>(rounds));
  for (int i = 0; i < warmup + rounds; ++i) {
    const auto start = Clock::now();
    t.send(encode(Ping{static_cast<uint64_t>(i), now_ns()}));
    const Pong pong = expect<Pong>(t.receive());
    const auto end = Clock::now();
    if (pong.nonce != static_cast<uint64_t>(i)) die("pong for the wrong ping");
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  return us;
}

struct Result {
  std::string name;
  double p50, p99, mean, min;
};

Result summarize(std::string name, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  auto pct = [&](double p) {
    return us[static_cast<size_t>(p * static_cast<double>(us.size() - 1))];
  };
  return Result{std::move(name), pct(0.50), pct(0.99), sum / static_cast<double>(us.size()),
                us.front()};
}

// Runs `server` in a forked child and `client` here; returns the client's samples.
template <class Server, class Client>
std::vector<double> in_two_processes(Server server, Client client) {
  const pid_t pid = ::fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    server();
    ::_exit(0);
  }
  auto samples = client();
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("server process failed");
  return samples;
}

Result bench_ring(const char* name, WaitOptions wait, int rounds, int warmup) {
  auto seg = check(ShmSegment::create(SegmentOptions{64 * 1024, 64 * 1024}), "segment");
  // The child inherits the shared mapping and the eventfds across fork().
  auto samples = in_two_processes(
      [&] {
        RingTransport server(check(seg.event_writer(), "event writer"),
                             check(seg.request_reader(), "request reader"), wait);
        serve(server, warmup + rounds);
      },
      [&] {
        RingTransport client(check(seg.request_writer(), "request writer"),
                             check(seg.event_reader(), "event reader"), wait);
        return measure(client, rounds, warmup);
      });
  return summarize(name, std::move(samples));
}

Result bench_socket(int rounds, int warmup) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
  auto samples = in_two_processes(
      [&] {
        ::close(sv[0]);
        SocketTransport server(sv[1]);
        serve(server, warmup + rounds);
      },
      [&] {
        SocketTransport client(sv[0]);
        auto s = measure(client, rounds, warmup);
        ::close(sv[0]);
        ::close(sv[1]);
        return s;
      });
  return summarize("socket (socketpair frames)", std::move(samples));
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int warmup = argc > 2 ? std::atoi(argv[2]) : 2000;
  if (rounds <= 0 || warmup < 0) die("usage: ipc_latency_bench [iterations] [warmup]");

  const Frame sample = encode(Ping{1, now_ns()});
  std::printf("ipc_latency_bench: %d round trips (+%d warm-up) of Ping/Pong (%zu-byte envelope)\n",
              rounds, warmup, sample.payload().size());
  std::printf("machine: %s, %u hardware threads\n", cpu_model().c_str(),
              std::thread::hardware_concurrency());

  using namespace std::chrono_literals;
  std::vector<Result> results;
  results.push_back(bench_ring("ring-spin (busy-poll)", WaitOptions{std::chrono::hours(1), -1ns},
                               rounds, warmup));
  results.push_back(bench_ring("ring-sleep (eventfd)", WaitOptions{0ns, -1ns}, rounds, warmup));
  results.push_back(bench_socket(rounds, warmup));

  std::printf("\n%-28s %10s %10s %10s %10s\n", "transport", "p50 us", "p99 us", "mean us",
              "min us");
  for (const auto& r : results) {
    std::printf("%-28s %10.2f %10.2f %10.2f %10.2f\n", r.name.c_str(), r.p50, r.p99, r.mean, r.min);
  }
  std::printf("\ntargets: ring-spin p50 <= 2 us, ring-sleep p50 <= 15 us, both below socket p50\n");
  return 0;
}
