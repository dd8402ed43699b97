// The DeepSeek-R1-Distill chat template and the reasoning split.
#include <gtest/gtest.h>

#include "tokenizer/chat_template.h"
#include "tokenizer_fixture.h"

namespace ringserve::testing {
namespace {

using tokenizer::ChatMessage;
using tokenizer::render_chat;
using tokenizer::split_reasoning;

const std::string kBos = "<｜begin▁of▁sentence｜>";
const std::string kUser = "<｜User｜>";
const std::string kAssistant = "<｜Assistant｜>";
const std::string kEos = "<｜end▁of▁sentence｜>";

TEST(ChatTemplate, SingleTurnOpensTheReasoning) {
  const auto out = render_chat({{"user", "What is 2+2?"}});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, kBos + kUser + "What is 2+2?" + kAssistant + "<think>\n");
}

TEST(ChatTemplate, SystemPromptGoesRightAfterBos) {
  const auto out = render_chat({{"system", "You are terse."}, {"user", "Hi"}});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, kBos + "You are terse." + kUser + "Hi" + kAssistant + "<think>\n");
  // Like the Jinja loop, the last system message wins, wherever it is.
  const auto two = render_chat({{"system", "first"}, {"user", "Hi"}, {"system", "second"}});
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, kBos + "second" + kUser + "Hi" + kAssistant + "<think>\n");
}

TEST(ChatTemplate, EarlierAssistantTurnsKeepOnlyTheAnswer) {
  const auto out = render_chat({{"user", "Q1"},
                                {"assistant", "<think>\nlet me see\n</think>\n\nA1"},
                                {"user", "Q2"},
                                {"assistant", "plain reply"},
                                {"user", "Q3"}});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, kBos + kUser + "Q1" + kAssistant + "\n\nA1" + kEos + kUser + "Q2" + kAssistant +
                      "plain reply" + kEos + kUser + "Q3" + kAssistant + "<think>\n");
  // split('</think>')[-1]: only what follows the last marker survives.
  const auto twice = render_chat({{"user", "Q"}, {"assistant", "a</think>b</think>c"}}, false);
  ASSERT_TRUE(twice);
  EXPECT_EQ(*twice, kBos + kUser + "Q" + kAssistant + "c" + kEos);
}

TEST(ChatTemplate, WithoutGenerationPrompt) {
  const auto out = render_chat({{"user", "Hi"}, {"assistant", "Hello"}}, false);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, kBos + kUser + "Hi" + kAssistant + "Hello" + kEos);
}

TEST(ChatTemplate, Errors) {
  const auto empty = render_chat({});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, Errc::kInvalidArgument);
  const auto bad = render_chat({{"user", "x"}, {"tool", "y"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("tool"), std::string::npos);
}

TEST(ChatTemplate, RendersToTheSpecialTokenIds) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const auto prompt = render_chat({{"user", "Hello"}});
  ASSERT_TRUE(prompt);
  EXPECT_EQ(tok->encode(*prompt),
            (std::vector<int32_t>{151646, 151644, 9707, 151645, 151648, 198}));
}

TEST(SplitReasoning, ReasoningThenAnswer) {
  const auto s = split_reasoning("Okay, 2+2 is 4.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(s.reasoning, "Okay, 2+2 is 4.");
  EXPECT_EQ(s.content, "The answer is 4.");
}

TEST(SplitReasoning, RepeatedOpeningTagIsDropped) {
  const auto s = split_reasoning("<think>\nhmm\n</think>answer");
  EXPECT_EQ(s.reasoning, "hmm");
  EXPECT_EQ(s.content, "answer");
}

TEST(SplitReasoning, StillThinkingHasNoAnswer) {
  const auto s = split_reasoning("Let me think about");
  EXPECT_EQ(s.reasoning, "Let me think about");
  EXPECT_EQ(s.content, "");
  const auto e = split_reasoning("");
  EXPECT_EQ(e.reasoning, "");
  EXPECT_EQ(e.content, "");
}

TEST(SplitReasoning, OnlyTheFirstCloseTagSplits) {
  const auto s = split_reasoning("r</think>a</think>b");
  EXPECT_EQ(s.reasoning, "r");
  EXPECT_EQ(s.content, "a</think>b");
}

}  // namespace
}  // namespace ringserve::testing
