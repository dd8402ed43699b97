#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "util/log.h"

namespace ringserve::log {
namespace {

// Logs one message in JSON mode and returns what reached stderr.
std::string log_json_line(const std::string& message) {
  configure({.level = "info", .json = true});
  testing::internal::CaptureStderr();
  get("test")->info("{}", message);
  get("test")->flush();
  std::string out = testing::internal::GetCapturedStderr();
  configure({});
  return out;
}

TEST(JsonLog, EveryLineIsOneValidObjectWhateverTheMessageHolds) {
  const std::string hostile = "a \"quoted\" \\ back\nslash\r\t\x01\x1f and UTF-8: \xc3\xa9";
  const std::string out = log_json_line(hostile);
  ASSERT_FALSE(out.empty());
  // One object, one line: a newline in the message must not split it.
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  const auto line = nlohmann::json::parse(out);
  EXPECT_EQ(line.at("msg").get<std::string>(), hostile);
  EXPECT_EQ(line.at("logger").get<std::string>(), "test");
  EXPECT_EQ(line.at("level").get<std::string>(), "info");
}

TEST(JsonLog, PlainModeKeepsTheMessageAsIs) {
  configure({});
  testing::internal::CaptureStderr();
  get("plain")->warn("req=1:2 said \"hi\"");
  get("plain")->flush();
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("[plain] req=1:2 said \"hi\""), std::string::npos) << out;
}

}  // namespace
}  // namespace ringserve::log
