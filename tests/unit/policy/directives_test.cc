// The /exec and /elevated chat directives (reference §7): what each asks for and the text left
// once they are taken out. A result is compared as a summary: "none" (no directive), "bare", or
// the fields set, in header order ("host=auto ask=off invalid_node=").
#include "runner/policy/directives.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace sandrun::policy {
namespace {

void AddField(std::string& out, const char* key, const std::optional<std::string>& value) {
  if (!value.has_value()) return;
  if (!out.empty()) out += ' ';
  out += key;
  out += '=';
  out += *value;
}

std::string Describe(const ExecDirective& d) {
  if (!d.found) return "none";
  std::string out = d.bare ? "bare" : "";
  AddField(out, "host", d.host);
  AddField(out, "security", d.security);
  AddField(out, "ask", d.ask);
  AddField(out, "node", d.node);
  AddField(out, "invalid_host", d.invalid_host);
  AddField(out, "invalid_security", d.invalid_security);
  AddField(out, "invalid_ask", d.invalid_ask);
  AddField(out, "invalid_node", d.invalid_node);
  return out;
}

std::string Describe(const ElevatedDirective& d) {
  if (!d.found) return "none";
  std::string out = d.bare ? "bare" : "";
  AddField(out, "level", d.level);
  AddField(out, "invalid", d.invalid);
  return out;
}

// The test name of a row: its `name`.
template <typename Row>
std::string RowName(const ::testing::TestParamInfo<Row>& row) {
  return row.param.name;
}

struct ExecRow {
  std::string name;
  std::string text;
  std::string expected;  // Describe(result)
  std::string cleaned;
};
class ExecDirectiveTest : public ::testing::TestWithParam<ExecRow> {};

TEST_P(ExecDirectiveTest, Parses) {
  ExecDirective d = ParseExecDirective(GetParam().text);
  EXPECT_EQ(Describe(d), GetParam().expected) << GetParam().text;
  EXPECT_EQ(d.cleaned, GetParam().cleaned) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Valid, ExecDirectiveTest,
    ::testing::Values(
        ExecRow{"reference_example",
                "please /exec host=auto security=allowlist ask=on-miss node=mac-mini now",
                "host=auto security=allowlist ask=on-miss node=mac-mini", "please now"},
        ExecRow{"host_sandbox_eq", "/exec host=sandbox", "host=sandbox", ""},
        ExecRow{"host_gateway_colon", "/exec host:gateway", "host=gateway", ""},
        ExecRow{"host_node", "/exec host=node", "host=node", ""},
        ExecRow{"security_deny_colon", "/exec security:deny", "security=deny", ""},
        ExecRow{"security_full", "/exec security=full", "security=full", ""},
        ExecRow{"ask_always_colon", "/exec ask:always", "ask=always", ""},
        ExecRow{"ask_off", "/exec ask=off", "ask=off", ""},
        ExecRow{"node_colon", "/exec node:mac-mini", "node=mac-mini", ""},
        ExecRow{"node_first_split", "/exec node=box:22", "node=box:22", ""},
        ExecRow{"keys_values_any_case", "/exec HOST=Gateway Security=FULL ASK=On-Miss",
                "host=gateway security=full ask=on-miss", ""},
        ExecRow{"node_case_kept", "/exec NODE=Mac-Mini", "node=Mac-Mini", ""},
        ExecRow{"exec_colon", "/exec:host=sandbox run", "host=sandbox", "run"},
        ExecRow{"exec_colon_spaced", "/exec : host=sandbox ask=off go", "host=sandbox ask=off",
                "go"},
        ExecRow{"exec_upper", "/EXEC host=auto hi", "host=auto", "hi"},
        ExecRow{"tabs_newlines", "line1\n/exec\thost=sandbox\nline2", "host=sandbox",
                "line1 line2"},
        ExecRow{"repeated_key_last_wins", "/exec host=sandbox host=gateway", "host=gateway", ""}),
    RowName<ExecRow>);

INSTANTIATE_TEST_SUITE_P(
    Invalid, ExecDirectiveTest,
    ::testing::Values(
        ExecRow{"host_bogus", "/exec host=bogus hi", "invalid_host=bogus", "hi"},
        ExecRow{"security_nope", "/exec security=nope", "invalid_security=nope", ""},
        ExecRow{"ask_maybe_raw", "/exec ask=Maybe", "invalid_ask=Maybe", ""},
        ExecRow{"node_empty", "/exec node= next", "invalid_node=", "next"},
        ExecRow{"host_empty", "/exec host=", "invalid_host=", ""},
        ExecRow{"host_double_split", "/exec host=auto=x", "invalid_host=auto=x", ""},
        ExecRow{"invalid_then_other_key", "/exec host=bogus ask=always",
                "ask=always invalid_host=bogus", ""},
        // As OpenClaw's flags: an invalid value stays reported; a later valid one still counts.
        ExecRow{"invalid_sticky", "/exec host=bogus host=sandbox",
                "host=sandbox invalid_host=bogus", ""},
        ExecRow{"valid_then_invalid_clears", "/exec host=sandbox host=nope", "invalid_host=nope",
                ""}),
    RowName<ExecRow>);

INSTANTIATE_TEST_SUITE_P(
    Mixed, ExecDirectiveTest,
    ::testing::Values(ExecRow{"in_the_middle", "run this /exec host=gateway   and   then",
                              "host=gateway", "run this and then"},
                      ExecRow{"stops_at_plain_word", "/exec host=sandbox please security=full",
                              "host=sandbox", "please security=full"},
                      ExecRow{"unknown_key_stops", "/exec host=sandbox mode=fast ask=off",
                              "host=sandbox", "mode=fast ask=off"},
                      ExecRow{"split_at_zero_stops", "/exec =x host=auto", "bare", "=x host=auto"},
                      ExecRow{"first_directive_wins", "/exec host=auto /exec host=node",
                              "host=auto", "/exec host=node"},
                      ExecRow{"exec_colon_then_word", "/exec:host", "bare", "host"}),
    RowName<ExecRow>);

INSTANTIATE_TEST_SUITE_P(
    NotADirective, ExecDirectiveTest,
    ::testing::Values(ExecRow{"executive", "/executive summary", "none", "/executive summary"},
                      ExecRow{"x_prefix", "x/exec host=auto", "none", "x/exec host=auto"},
                      ExecRow{"path_no_leading_space", "see path/exec host=auto", "none",
                              "see path/exec host=auto"},
                      ExecRow{"plain_text_trimmed_only", "  no directive   here  ", "none",
                              "no directive   here"},
                      ExecRow{"empty", "", "none", ""}),
    RowName<ExecRow>);

INSTANTIATE_TEST_SUITE_P(Bare, ExecDirectiveTest,
                         ::testing::Values(ExecRow{"bare", "/exec", "bare", ""},
                                           ExecRow{"trailing_spaces", "/exec   ", "bare", ""},
                                           ExecRow{"colon_only", "/exec:", "bare", ""},
                                           ExecRow{"with_text", "hello /exec world", "bare",
                                                   "hello world"}),
                         RowName<ExecRow>);

struct ElevatedRow {
  std::string name;
  std::string text;
  std::string expected;  // Describe(result)
  std::string cleaned;
};
class ElevatedDirectiveTest : public ::testing::TestWithParam<ElevatedRow> {};

TEST_P(ElevatedDirectiveTest, Parses) {
  ElevatedDirective d = ParseElevatedDirective(GetParam().text);
  EXPECT_EQ(Describe(d), GetParam().expected) << GetParam().text;
  EXPECT_EQ(d.cleaned, GetParam().cleaned) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ElevatedDirectiveTest,
    ::testing::Values(ElevatedRow{"bare", "/elevated", "bare", ""},
                      ElevatedRow{"bare_spaces", "/elevated   ", "bare", ""},
                      ElevatedRow{"full", "/elevated full", "level=full", ""},
                      ElevatedRow{"colon_upper_on", "/elevated:ON", "level=on", ""},
                      ElevatedRow{"colon_space_ask", "/elevated: ask", "level=ask", ""},
                      ElevatedRow{"off", "/elevated off", "level=off", ""},
                      ElevatedRow{"bogus", "/elevated bogus", "invalid=bogus", ""},
                      ElevatedRow{"bogus_raw", "/elevated Bogus! go", "invalid=Bogus!", "go"},
                      ElevatedRow{"in_the_middle", "please /elevated off now", "level=off",
                                  "please now"},
                      ElevatedRow{"upper_token", "/ELEVATED Full go", "level=full", "go"},
                      ElevatedRow{"one_word_only", "/elevated on off", "level=on", "off"},
                      ElevatedRow{"glued_word", "/elevatedfull", "none", "/elevatedfull"},
                      ElevatedRow{"x_prefix", "x/elevated on", "none", "x/elevated on"}),
    RowName<ElevatedRow>);

struct BothRow {
  std::string name;
  std::string text;
  std::string exec;      // Describe(result.exec)
  std::string elevated;  // Describe(result.elevated)
  std::string cleaned;
};
class DirectivesTest : public ::testing::TestWithParam<BothRow> {};

TEST_P(DirectivesTest, Parses) {
  Directives d = ParseDirectives(GetParam().text);
  EXPECT_EQ(Describe(d.exec), GetParam().exec) << GetParam().text;
  EXPECT_EQ(Describe(d.elevated), GetParam().elevated) << GetParam().text;
  EXPECT_EQ(d.cleaned, GetParam().cleaned) << GetParam().text;
  EXPECT_EQ(d.cleaned, d.elevated.cleaned);
}

INSTANTIATE_TEST_SUITE_P(
    Table, DirectivesTest,
    ::testing::Values(BothRow{"exec_then_elevated", "/exec host=gateway /elevated full run it",
                              "host=gateway", "level=full", "run it"},
                      BothRow{"elevated_then_exec", "/elevated on please /exec ask=always now",
                              "ask=always", "level=on", "please now"},
                      BothRow{"both_bare", "/exec /elevated", "bare", "bare", ""},
                      BothRow{"elevated_only", "do /elevated ask x", "none", "level=ask", "do x"},
                      BothRow{"neither", " just text ", "none", "none", "just text"}),
    RowName<BothRow>);

// 64 KiB of text with the directives at the far end: parsed, nothing refused.
TEST(DirectivesLargeTest, DirectivesAtTheEndOfALongMessage) {
  const std::string filler(64 * 1024 - 40, 'a');
  Directives d = ParseDirectives(filler + " /exec host=sandbox /elevated full");
  EXPECT_EQ(Describe(d.exec), "host=sandbox");
  EXPECT_EQ(Describe(d.elevated), "level=full");
  EXPECT_EQ(d.cleaned, filler);
}

}  // namespace
}  // namespace sandrun::policy
