// Programs that run commands through their options (profiles/exec-options/default.json): the
// shipped table, the matcher rule by rule (DetectExecOption on argv, no file system), and the
// loader's refusals. The approvals decision on top of it is in allowlist_bypass_test.cc.
#include "runner/policy/exec_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sandrun::policy {
namespace {

const ExecOptionTable& Shipped() {
  static const ExecOptionTable* table = [] {
    auto r = LoadExecOptionTable(SANDRUN_TEST_PROFILES_DIR);
    EXPECT_TRUE(r) << r.error().ToString();
    return new ExecOptionTable(r ? std::move(*r) : ExecOptionTable());
  }();
  return *table;
}

// ---- the shipped file -------------------------------------------------------------------------

TEST(ExecOptionsFileTest, ListsTheProgramsOfIssue12) {
  for (const char* name : {"git", "tar", "zip", "ssh", "scp", "sftp", "rsync", "vim", "vi", "less",
                           "man", "sort", "gdb", "ed", "strace"}) {
    EXPECT_NE(Shipped().Find(name), nullptr) << name;
  }
  EXPECT_EQ(Shipped().Find("ls"), nullptr);
  EXPECT_EQ(Shipped().Find("Git"), nullptr) << "names are looked up lowercased by the caller";
}

TEST(ExecOptionsFileTest, EveryRuleSaysWhy) {
  for (const ExecOptionProgram& p : Shipped().programs()) {
    EXPECT_FALSE(p.scope.why.empty()) << p.name;
    for (const ExecOptionRule& r : p.scope.options) EXPECT_FALSE(r.why.empty()) << p.name;
    for (const auto& [sub, scope] : p.subcommands) {
      if (scope.any_use) {
        EXPECT_FALSE(scope.why.empty()) << p.name << " " << sub;
      }
      for (const ExecOptionRule& r : scope.options) EXPECT_FALSE(r.why.empty()) << sub;
    }
  }
}

TEST(ExecOptionsFileTest, BuiltinIsTheShippedFile) {
  auto builtin = BuiltinExecOptionTable();
  ASSERT_TRUE(builtin) << builtin.error().ToString();
  EXPECT_EQ((*builtin)->programs().size(), Shipped().programs().size());
}

// ---- the matcher ------------------------------------------------------------------------------

struct Case {
  const char* name;
  std::vector<std::string> argv;
  const char* real_path;
  const char* hit;  // the description, "" for none
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class DetectExecOptionTest : public ::testing::TestWithParam<Case> {};

TEST_P(DetectExecOptionTest, Detects) {
  const Case& c = GetParam();
  auto hit = DetectExecOption(Shipped(), c.argv, c.real_path);
  if (*c.hit == '\0') {
    EXPECT_FALSE(hit.has_value()) << hit->description;
  } else {
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->description, c.hit);
    EXPECT_FALSE(hit->why.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, DetectExecOptionTest,
    ::testing::Values(
        Case{"empty", {}, "", ""},
        Case{"unlisted", {"ls", "-c", "--to-command=x"}, "/usr/bin/ls", ""},
        Case{"git_status", {"git", "status"}, "", ""}, Case{"git_alone", {"git"}, "", ""},
        Case{"git_path", {"/usr/bin/git", "-c", "a=b", "x"}, "", "git -c"},
        Case{"git_upper_argv0", {"/usr/bin/GIT", "-c", "a=b", "x"}, "", "git -c"},
        Case{"git_value_option_attached",
             {"git", "--git-dir=/r", "config", "x"},
             "",
             "git config (runs commands itself)"},
        Case{"git_value_option_hides_nothing", {"git", "-C", "config", "status"}, "", ""},
        Case{"git_double_dash",
             {"git", "--", "config", "x"},
             "",
             "git config (runs commands itself)"},
        Case{"git_unknown_short", {"git", "-x", "status"}, "", "git -x"},
        Case{"git_list_cmds", {"git", "--list-cmds=main"}, "", ""},
        Case{"git_sub_option_before_sub", {"git", "--exec", "x", "rebase"}, "", "git --exec"},
        Case{"git_rebase_plain", {"git", "rebase", "-i", "HEAD~2"}, "", ""},
        Case{"git_rebase_empty_abbrev", {"git", "rebase", "--em=drop"}, "", ""},
        Case{"git_help_anywhere", {"git", "commit", "--help"}, "", "git --help"},
        Case{"git_h_global", {"git", "-h", "log"}, "", "git -h"},
        Case{"git_h_after_sub", {"git", "log", "-h"}, "", ""},
        Case{"tar_old_style_only_first", {"tar", "-cf", "x.tar", "If"}, "", ""},
        Case{"tar_no_args", {"tar"}, "", ""},
        Case{"tar_after_dashdash",
             {"tar", "-cf", "x", "--", "--to-command=y"},
             "",
             "tar --to-command"},
        Case{"tar_checkpoint_exact", {"tar", "--checkpoint", "-tf", "x"}, "", ""},
        Case{"tar_checkpoint_dash",
             {"tar", "--checkpoint-=exec=x", "-tf", "x"},
             "",
             "tar --checkpoint-action"},
        Case{"gtar_alias", {"gtar", "-I", "x"}, "", "gtar -I"},
        Case{"real_path_name",
             {"./t", "-xf", "a", "--to-command=x"},
             "/usr/bin/tar",
             "t --to-command"},
        Case{"real_path_vim", {"vi", "f"}, "/usr/bin/vim.basic", "vi (runs commands itself)"},
        Case{"busybox_applet",
             {"busybox", "vi", "f"},
             "/usr/bin/busybox",
             "vi (runs commands itself)"},
        Case{"busybox_alone", {"busybox"}, "/usr/bin/busybox", ""},
        Case{"ssh_no_value", {"ssh", "host", "-o"}, "", ""},
        Case{"ssh_empty_key", {"ssh", "-o", "=x", "host"}, "", "ssh -o \"\""},
        Case{"ssh_key_case", {"ssh", "-o", "pRoXyCoMmAnD=x", "host"}, "", "ssh -o proxycommand"},
        Case{"ssh_key_tab",
             {"ssh", "-o", "\tKnownHostsCommand\tx", "host"},
             "",
             "ssh -o knownhostscommand"},
        Case{"ssh_include", {"ssh", "-oInclude=/tmp/c", "host"}, "", "ssh -o include"},
        Case{"ssh_pkcs11",
             {"ssh", "-o", "PKCS11Provider=/tmp/x.so", "host"},
             "",
             "ssh -o pkcs11provider"},
        Case{"ssh_port", {"ssh", "-o", "Port=22", "-p", "22", "host"}, "", ""},
        Case{"ssh_identity", {"ssh", "-i", "key", "host"}, "", ""},
        Case{"zip_T_only", {"zip", "-T", "z.zip", "f"}, "", ""},
        Case{"zip_TT_equals", {"zip", "-TT=x", "z.zip", "f"}, "", "zip -TT"},
        Case{"zip_unz", {"zip", "--unz=x", "z.zip"}, "", "zip --unzip-command"},
        Case{"zip_un_too_short", {"zip", "--un=x", "z.zip"}, "", ""},
        Case{"rsync_cluster_e", {"rsync", "-avze", "ssh", "a", "h:b"}, "", "rsync -e"},
        Case{"rsync_rs_abbrev", {"rsync", "--rs=x", "a", "h:b"}, "", "rsync --rsh"},
        Case{"scp_D", {"scp", "-D", "/bin/prog", "h:a", "b"}, "", "scp -D"},
        Case{"wget_e", {"wget", "-e", "use_askpass=x", "http://h/"}, "", "wget -e"},
        Case{"wget_plain", {"wget", "-q", "http://h/"}, "", ""},
        Case{"nc_e", {"nc", "-l", "-p", "1", "-e", "/bin/sh"}, "", "nc -e"},
        Case{"ncat_sh_exec", {"ncat", "--sh-exec", "x", "h", "1"}, "", "ncat --sh-exec"},
        Case{"apt_o", {"apt-get", "-o", "APT::Update::Pre-Invoke::=x", "update"}, "", "apt-get -o"},
        Case{"tcpdump_z", {"tcpdump", "-w", "f", "-G", "1", "-z", "x"}, "", "tcpdump -z"},
        Case{"setarch", {"setarch", "x86_64", "ls"}, "", "setarch (runs commands itself)"},
        Case{"tmux", {"tmux", "new", "-d", "x"}, "", "tmux (runs commands itself)"}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// ---- the loader -------------------------------------------------------------------------------

std::string File(const std::string& programs) {
  return R"({"name": "t", "description": "d", "programs": )" + programs + "}";
}

struct BadFile {
  const char* label;
  std::string text;
  const char* expected;
};

std::ostream& operator<<(std::ostream& os, const BadFile& b) { return os << b.label; }

class ExecOptionsLoaderBadTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(ExecOptionsLoaderBadTest, IsRefusedWithPathKeyAndReason) {
  auto r = ParseExecOptionTable(GetParam().text, "/p/exec-options/t.json", "t");
  ASSERT_FALSE(r) << GetParam().label;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().ToString().find("/p/exec-options/t.json"), std::string::npos)
      << r.error().ToString();
  EXPECT_NE(r.error().ToString().find(GetParam().expected), std::string::npos)
      << r.error().ToString();
}

constexpr const char* kOpt = R"({"option": "-c", "why": "w"})";

INSTANTIATE_TEST_SUITE_P(
    Table, ExecOptionsLoaderBadTest,
    ::testing::Values(
        BadFile{"bad_json", "{", ""}, BadFile{"trailing_comma", File(R"({"g": {},})"), ""},
        BadFile{"not_object", "[]", "expected a JSON object"},
        BadFile{"name_mismatch", R"({"name": "x", "description": "d", "programs": {}})",
                "differs from the file name"},
        BadFile{"missing_programs", R"({"name": "t", "description": "d"})", "programs: required"},
        BadFile{"unknown_top_key", R"({"name": "t", "description": "d", "programs": {}, "x": 1})",
                "x: unknown key"},
        BadFile{"programs_not_object", File("[]"), "programs: expected an object"},
        BadFile{"program_not_object", File(R"({"g": []})"), "programs.g: expected an object"},
        BadFile{"duplicate_program",
                File(R"({"g": {"why": "w", "anyUse": true}, "g": {"why": "w", "anyUse": true}})"),
                "programs.g: duplicate key"},
        BadFile{"program_uppercase", File(R"({"Git": {"why": "w", "anyUse": true}})"),
                "programs.Git: not a program name"},
        BadFile{"program_path", File(R"({"/usr/bin/g": {"why": "w", "anyUse": true}})"),
                "not a program name"},
        BadFile{"unknown_program_key", File(R"({"g": {"why": "w", "anyuse": true}})"),
                "programs.g.anyuse: unknown key"},
        BadFile{"no_why", File(R"({"g": {"anyUse": true}})"), "programs.g.why: required"},
        BadFile{"empty_why", File(R"({"g": {"why": "", "anyUse": true}})"), "programs.g.why"},
        BadFile{"any_use_string", File(R"({"g": {"why": "w", "anyUse": "yes"}})"),
                "programs.g.anyUse: expected true or false"},
        BadFile{"no_rules", File(R"({"g": {"why": "w"}})"),
                "programs.g: neither anyUse, options nor subcommands"},
        BadFile{"any_use_false_no_rules", File(R"({"g": {"why": "w", "anyUse": false}})"),
                "neither anyUse"},
        BadFile{
            "any_use_with_options",
            File(std::string(R"({"g": {"why": "w", "anyUse": true, "options": [)") + kOpt + "]}}"),
            "programs.g.options: pointless with anyUse"},
        BadFile{"any_use_with_old_style",
                File(R"({"g": {"why": "w", "anyUse": true, "oldStyle": true}})"),
                "programs.g.oldStyle: pointless with anyUse"},
        BadFile{"any_use_with_subcommands",
                File(R"({"g": {"why": "w", "anyUse": true, "subcommands": {}}})"),
                "programs.g.subcommands: pointless with anyUse"},
        BadFile{"options_not_array", File(R"({"g": {"why": "w", "options": {}}})"),
                "programs.g.options: expected an array"},
        BadFile{"option_not_object", File(R"({"g": {"why": "w", "options": ["-c"]}})"),
                "programs.g.options[0]: expected an object"},
        BadFile{"option_no_why", File(R"({"g": {"why": "w", "options": [{"option": "-c"}]}})"),
                "programs.g.options[0].why: required"},
        BadFile{"option_unknown_key",
                File(R"({"g": {"why": "w", "options": [{"option": "-c", "why": "w", "x": 1}]}})"),
                "programs.g.options[0].x: unknown key"},
        BadFile{"option_no_dash",
                File(R"({"g": {"why": "w", "options": [{"option": "c", "why": "w"}]}})"),
                "programs.g.options[0].option: \"c\" is not an option"},
        BadFile{"option_dash_only",
                File(R"({"g": {"why": "w", "options": [{"option": "-", "why": "w"}]}})"),
                "is not an option"},
        BadFile{"option_double_dash_only",
                File(R"({"g": {"why": "w", "options": [{"option": "--", "why": "w"}]}})"),
                "is not an option"},
        BadFile{"option_triple_dash",
                File(R"({"g": {"why": "w", "options": [{"option": "---x", "why": "w"}]}})"),
                "is not an option"},
        BadFile{"option_with_value",
                File(R"({"g": {"why": "w", "options": [{"option": "--a=b", "why": "w"}]}})"),
                "is not an option"},
        BadFile{"option_short_equals",
                File(R"({"g": {"why": "w", "options": [{"option": "-=", "why": "w"}]}})"),
                "is not an option"},
        BadFile{"option_multi_punct",
                File(R"({"g": {"why": "w", "options": [{"option": "-T!", "why": "w"}]}})"),
                "is not an option"},
        BadFile{"option_space",
                File(R"({"g": {"why": "w", "options": [{"option": "--a b", "why": "w"}]}})"),
                "is not an option"},
        BadFile{
            "option_twice",
            File(std::string(R"({"g": {"why": "w", "options": [)") + kOpt + ", " + kOpt + "]}}"),
            "programs.g.options[1].option: \"-c\" is listed twice"},
        BadFile{
            "abbrev_short",
            File(R"({"g": {"why": "w", "options": [{"option": "-c", "abbrev": 3, "why": "w"}]}})"),
            "programs.g.options[0].abbrev: only long options"},
        BadFile{
            "abbrev_too_small",
            File(
                R"({"g": {"why": "w", "options": [{"option": "--cmd", "abbrev": 2, "why": "w"}]}})"),
            "programs.g.options[0].abbrev: must be between"},
        BadFile{
            "abbrev_too_long",
            File(
                R"({"g": {"why": "w", "options": [{"option": "--cmd", "abbrev": 6, "why": "w"}]}})"),
            "abbrev: longer than \"--cmd\""},
        BadFile{
            "abbrev_string",
            File(
                R"({"g": {"why": "w", "options": [{"option": "--cmd", "abbrev": "3", "why": "w"}]}})"),
            "abbrev: expected an integer"},
        BadFile{
            "value_keys_upper",
            File(
                R"({"g": {"why": "w", "options": [{"option": "-o", "valueKeys": ["ProxyCommand"], "why": "w"}]}})"),
            "programs.g.options[0].valueKeys[0]: \"ProxyCommand\" is not a lowercase key"},
        BadFile{
            "value_keys_empty",
            File(
                R"({"g": {"why": "w", "options": [{"option": "-o", "valueKeys": [], "why": "w"}]}})"),
            "valueKeys: empty"},
        BadFile{
            "value_keys_twice",
            File(
                R"({"g": {"why": "w", "options": [{"option": "-o", "valueKeys": ["a", "a"], "why": "w"}]}})"),
            "valueKeys[1]: \"a\" is listed twice"},
        BadFile{
            "anywhere_without_subcommands",
            File(
                R"({"g": {"why": "w", "options": [{"option": "-c", "anywhere": true, "why": "w"}]}})"),
            "anywhere: only for programs with subcommands"},
        BadFile{"value_options_without_subcommands",
                File(std::string(R"({"g": {"why": "w", "valueOptions": ["-C"], "options": [)") +
                     kOpt + "]}}"),
                "programs.g.valueOptions: only for programs with subcommands"},
        BadFile{
            "value_option_attached",
            File(
                R"({"g": {"why": "w", "valueOptions": ["--dir="], "subcommands": {"x": {"why": "w", "anyUse": true}}}})"),
            "programs.g.valueOptions[0]: \"--dir=\" is not an option"},
        BadFile{
            "value_and_flag_option",
            File(
                R"({"g": {"why": "w", "valueOptions": ["-C"], "flagOptions": ["-C"], "subcommands": {"x": {"why": "w", "anyUse": true}}}})"),
            "programs.g.flagOptions: \"-C\" is also listed in valueOptions"},
        BadFile{"subcommands_not_object", File(R"({"g": {"why": "w", "subcommands": []}})"),
                "programs.g.subcommands: expected an object"},
        BadFile{
            "subcommand_upper",
            File(R"({"g": {"why": "w", "subcommands": {"Config": {"why": "w", "anyUse": true}}}})"),
            "programs.g.subcommands.Config: not a subcommand name"},
        BadFile{"subcommand_no_rules",
                File(R"({"g": {"why": "w", "subcommands": {"config": {}}}})"),
                "programs.g.subcommands.config: neither anyUse nor any option"},
        BadFile{"subcommand_any_use_no_why",
                File(R"({"g": {"why": "w", "subcommands": {"config": {"anyUse": true}}}})"),
                "programs.g.subcommands.config.why: required"},
        BadFile{
            "subcommand_unknown_key",
            File(
                R"({"g": {"why": "w", "subcommands": {"config": {"why": "w", "anyUse": true, "aliases": []}}}})"),
            "programs.g.subcommands.config.aliases: unknown key"},
        BadFile{"alias_upper", File(R"({"g": {"why": "w", "anyUse": true, "aliases": ["G"]}})"),
                "programs.g.aliases[0]: \"G\" is not a lowercase program name"},
        BadFile{"alias_of_itself", File(R"({"g": {"why": "w", "anyUse": true, "aliases": ["g"]}})"),
                "\"g\" is already a name of g"},
        BadFile{
            "alias_of_another",
            File(
                R"({"g": {"why": "w", "anyUse": true}, "h": {"why": "w", "anyUse": true, "aliases": ["g"]}})"),
            "programs.h.aliases[0]: \"g\" is already a name of g"},
        BadFile{"alias_twice",
                File(R"({"g": {"why": "w", "anyUse": true, "aliases": ["x", "x"]}})"),
                "aliases[1]: \"x\" is listed twice"}),
    [](const ::testing::TestParamInfo<BadFile>& p) { return std::string(p.param.label); });

class TempProfilesDir {
 public:
  TempProfilesDir() {
    char tmpl[] = "/tmp/sandrun-execoptions-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/exec-options");
  }
  ~TempProfilesDir() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/exec-options/" + name + ".json") << text;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

TEST(ExecOptionsLoaderTest, MissingFileIsNamed) {
  TempProfilesDir tmp;
  auto r = LoadExecOptionTable(tmp.dir());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find(tmp.dir() + "/exec-options/default.json"), std::string::npos)
      << r.error().ToString();
  EXPECT_FALSE(LoadExecOptionTable("/nonexistent-profiles-dir"));
}

TEST(ExecOptionsLoaderTest, ReadsANamedFileAndChecksItsStem) {
  TempProfilesDir tmp;
  tmp.Write("strict", R"({"name": "strict", "description": "d",
                          "programs": {"g": {"why": "w", "anyUse": true, "aliases": ["h"]}}})");
  tmp.Write("other", R"({"name": "strict", "description": "d", "programs": {}})");
  auto ok = LoadExecOptionTable(tmp.dir(), "strict");
  ASSERT_TRUE(ok) << ok.error().ToString();
  ASSERT_NE(ok->Find("h"), nullptr);
  EXPECT_EQ(ok->Find("h")->name, "g");
  auto bad = LoadExecOptionTable(tmp.dir(), "other");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("differs from the file name"), std::string::npos);
  EXPECT_FALSE(LoadExecOptionTable(tmp.dir(), "../exec-options/strict"));
}

// A program-level rule with valueKeys that does not hit still takes its value: the value is
// never mistaken for the subcommand.
TEST(ExecOptionsMatcherTest, AKeyedGlobalOptionTakesItsValue) {
  auto table = ParseExecOptionTable(File(R"({"g": {"why": "w",
      "options": [{"option": "-o", "valueKeys": ["run"], "why": "w"}],
      "subcommands": {"config": {"why": "w", "anyUse": true}}}})"),
                                    "/p/t.json", "t");
  ASSERT_TRUE(table) << table.error().ToString();
  auto hit = DetectExecOption(*table, {"g", "-o", "safe=1", "config"});
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->description, "g config (runs commands itself)");
  EXPECT_FALSE(DetectExecOption(*table, {"g", "-o", "config", "status"}).has_value());
  hit = DetectExecOption(*table, {"g", "-o", "run=x", "status"});
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->description, "g -o run");
}

TEST(ExecOptionsLoaderTest, AnEmptyTableIsValid) {
  auto r = ParseExecOptionTable(File("{}"), "/p/t.json", "t");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->programs().empty());
}

}  // namespace
}  // namespace sandrun::policy
