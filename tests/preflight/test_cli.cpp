// The `ringserve preflight` binary on fixtures: JSON schema, exit status,
// and the refusal of --apply in a virtualized topology.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using ringserve::testing::binary_path;
using ringserve::testing::fixture_path;

struct Run {
  int status = -1;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = binary_path("ringserve").string() + " preflight " + args + " 2>&1";
  Run r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(PreflightCli, H200JsonIsVirtualized) {
  auto r = run("--json --pci-dump " + fixture_path("lspci/h200-guest-hexdump.txt").string());
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["environment"], "virtualized");
  ASSERT_EQ(j["devices"].size(), 1u);
  const auto& d = j["devices"][0];
  EXPECT_EQ(d["bdf"], "0000:00:06.0");
  EXPECT_EQ(d["vendor_device"], "10de:2335");
  EXPECT_EQ(d["link"]["speed_gts"], 32.0);
  EXPECT_EQ(d["link"]["width"], 16);
  EXPECT_EQ(d["link"]["cap_speed_gts"], 32.0);
  EXPECT_EQ(d["link"]["cap_width"], 16);
  EXPECT_EQ(d["mps"], 256);
  EXPECT_EQ(d["mps_cap"], 256);
  EXPECT_EQ(d["mrrs"], 4096);
  EXPECT_EQ(d["aspm"], "disabled");
  EXPECT_TRUE(d["upstream"].is_null());
  EXPECT_FALSE(d["findings"].empty());
}

TEST(PreflightCli, ApplyIsRefusedOnTheH200) {
  auto r = run("--apply=A1 --pci-dump " + fixture_path("lspci/h200-guest-hexdump.txt").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--apply refused: 0000:00:06.0 is in a virtualized topology"),
            std::string::npos)
      << r.out;
}

TEST(PreflightCli, WarningExitsOne) {
  // The Quadro's audio function has ASPM enabled: a warning.
  auto warn = run("--device 05:00.1 --pci-dump " +
                  fixture_path("lspci/gp107gl-quadro-p1000-hexdump-5.txt").string());
  EXPECT_EQ(warn.status, 1) << warn.out;
  EXPECT_NE(warn.out.find("pcie.aspm"), std::string::npos);
}

TEST(PreflightCli, BadDumpIsAClearError) {
  ringserve::testing::TempDir tmp;
  const auto path = tmp.path() / "bad.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("00:06.0 x\n00: de 1z\n", f);
  std::fclose(f);
  auto r = run("--pci-dump " + path.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("line 2"), std::string::npos) << r.out;
}

}  // namespace
