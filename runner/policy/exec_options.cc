#include "runner/policy/exec_options.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <span>
#include <utility>

#include "sandbox/base/strings.h"
#include "sandbox/harden/profile_file.h"

namespace sandrun::policy {
namespace {

using harden::ProfileFile;
using harden::SchemaChecker;
using Args = std::span<const std::string>;

constexpr std::string_view kKind = "exec-options";
constexpr size_t kMaxAbbrev = 64;

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsLower(c) || IsDigit(c) || (c >= 'A' && c <= 'Z'); }

bool AllOf(std::string_view s, bool (*ok)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), ok);
}

bool IsProgramName(std::string_view s) {
  return AllOf(s, [](char c) {
    return IsLower(c) || IsDigit(c) || c == '.' || c == '_' || c == '+' || c == '-';
  });
}

bool IsSubcommandName(std::string_view s) {
  return AllOf(s,
               [](char c) { return IsLower(c) || IsDigit(c) || c == '.' || c == '_' || c == '-'; });
}

bool IsValueKey(std::string_view s) {
  return AllOf(s,
               [](char c) { return IsLower(c) || IsDigit(c) || c == '.' || c == '_' || c == '-'; });
}

enum class Shape { kInvalid, kShort, kMultiShort, kLong, kLongAttached };

// "-x" (x printable, not '-' or '='), "-xy.." (letters and digits), "--name", "--name=".
Shape ShapeOf(std::string_view o) {
  if (o.size() < 2 || o[0] != '-') return Shape::kInvalid;
  if (o[1] != '-') {
    if (o.size() == 2)
      return o[1] > ' ' && o[1] < 0x7f && o[1] != '=' ? Shape::kShort : Shape::kInvalid;
    return AllOf(o.substr(1), IsAlnum) ? Shape::kMultiShort : Shape::kInvalid;
  }
  std::string_view name = o.substr(2);
  const bool attached = name.ends_with('=');
  if (attached) name.remove_suffix(1);
  if (name.empty() || !IsAlnum(name[0]) ||
      !std::all_of(name.begin(), name.end(), [](char c) { return IsAlnum(c) || c == '-'; })) {
    return Shape::kInvalid;
  }
  return attached ? Shape::kLongAttached : Shape::kLong;
}

// "--name=" -> "--name".
std::string_view Canonical(std::string_view option) {
  return option.ends_with('=') ? option.substr(0, option.size() - 1) : option;
}

// ---- the loader -------------------------------------------------------------------------------

// Iterates the objects of the array `key` of `obj`.
template <typename Fn>
Status EachObject(const SchemaChecker& check, const rapidjson::Value& obj, const std::string& at,
                  const char* key, Fn&& fn) {
  const rapidjson::Value* v = check.Optional(obj, key);
  if (v == nullptr) return Ok();
  const std::string where = SchemaChecker::Join(at, key);
  if (!v->IsArray()) return check.Fail(where, "expected an array");
  for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
    const std::string item_at = SchemaChecker::Index(where, i);
    SANDRUN_RETURN_IF_ERROR(check.IsObject((*v)[i], item_at));
    SANDRUN_RETURN_IF_ERROR(fn((*v)[i], item_at));
  }
  return Ok();
}

Result<ExecOptionRule> ParseRule(const SchemaChecker& check, const rapidjson::Value& v,
                                 const std::string& at, bool has_subcommands) {
  SANDRUN_RETURN_IF_ERROR(check.Keys(v, at, {"option", "abbrev", "valueKeys", "anywhere", "why"}));
  ExecOptionRule r;
  SANDRUN_ASSIGN_OR_RETURN(r.option, check.String(v, at, "option"));
  SANDRUN_ASSIGN_OR_RETURN(r.why, check.String(v, at, "why"));
  const Shape shape = ShapeOf(r.option);
  if (shape == Shape::kInvalid) {
    return check.Fail(
        SchemaChecker::Join(at, "option"),
        Quoted(r.option) +
            " is not an option (expected \"-x\", \"-xy\", \"--name\" or \"--name=\")");
  }
  if (check.Optional(v, "abbrev") != nullptr) {
    const std::string_view canonical = Canonical(r.option);
    if (shape != Shape::kLong && shape != Shape::kLongAttached) {
      return check.Fail(SchemaChecker::Join(at, "abbrev"), "only long options are abbreviated");
    }
    SANDRUN_ASSIGN_OR_RETURN(int64_t n,
                             check.Int(v, at, "abbrev", 3, static_cast<int64_t>(kMaxAbbrev)));
    if (static_cast<size_t>(n) > canonical.size()) {
      return check.Fail(SchemaChecker::Join(at, "abbrev"),
                        "longer than " + Quoted(canonical) + " itself");
    }
    r.abbrev = static_cast<size_t>(n);
  }
  if (check.Optional(v, "valueKeys") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(r.value_keys, check.StringArray(v, at, "valueKeys"));
    const std::string where = SchemaChecker::Join(at, "valueKeys");
    for (size_t i = 0; i < r.value_keys.size(); ++i) {
      if (!IsValueKey(r.value_keys[i])) {
        return check.Fail(SchemaChecker::Index(where, i),
                          Quoted(r.value_keys[i]) + " is not a lowercase key ([a-z0-9._-])");
      }
    }
    if (r.value_keys.empty()) {
      return check.Fail(where, "empty: leave the key out to make every value a hit");
    }
  }
  if (check.Optional(v, "anywhere") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(r.anywhere, check.Bool(v, at, "anywhere"));
    if (r.anywhere && !has_subcommands) {
      return check.Fail(SchemaChecker::Join(at, "anywhere"),
                        "only for programs with subcommands (all arguments are scanned anyway)");
    }
  }
  return r;
}

// anyUse, options and why of a program or a subcommand (keys already checked by the caller).
// A program always says why it is listed; a subcommand only with anyUse (its options say why).
Result<ExecOptionScope> ParseScope(const SchemaChecker& check, const rapidjson::Value& v,
                                   const std::string& at, bool has_subcommands, bool program) {
  ExecOptionScope s;
  if (check.Optional(v, "anyUse") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(s.any_use, check.Bool(v, at, "anyUse"));
  }
  if (program || s.any_use || check.Optional(v, "why") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(s.why, check.String(v, at, "why"));
  }
  SANDRUN_RETURN_IF_ERROR(
      EachObject(check, v, at, "options",
                 [&](const rapidjson::Value& item, const std::string& item_at) -> Status {
                   SANDRUN_ASSIGN_OR_RETURN(ExecOptionRule r,
                                            ParseRule(check, item, item_at, has_subcommands));
                   for (const ExecOptionRule& other : s.options) {
                     if (other.option == r.option) {
                       return Status(check.Fail(SchemaChecker::Join(item_at, "option"),
                                                Quoted(r.option) + " is listed twice"));
                     }
                   }
                   s.options.push_back(std::move(r));
                   return Ok();
                 }));
  if (s.any_use && check.Optional(v, "options") != nullptr) {
    return check.Fail(SchemaChecker::Join(at, "options"),
                      "pointless with anyUse (every use is a hit already)");
  }
  return s;
}

// valueOptions / flagOptions: "-x" or "--name".
Result<std::vector<std::string>> ParseOptionList(const SchemaChecker& check,
                                                 const rapidjson::Value& v, const std::string& at,
                                                 const char* key) {
  if (check.Optional(v, key) == nullptr) return std::vector<std::string>{};
  SANDRUN_ASSIGN_OR_RETURN(std::vector<std::string> out, check.StringArray(v, at, key));
  for (size_t i = 0; i < out.size(); ++i) {
    const Shape shape = ShapeOf(out[i]);
    if (shape != Shape::kShort && shape != Shape::kLong) {
      return check.Fail(SchemaChecker::Index(SchemaChecker::Join(at, key), i),
                        Quoted(out[i]) + " is not an option (expected \"-x\" or \"--name\")");
    }
  }
  return out;
}

Result<ExecOptionProgram> ParseProgram(const SchemaChecker& check, const rapidjson::Value& v,
                                       const std::string& at, std::string name) {
  SANDRUN_RETURN_IF_ERROR(check.IsObject(v, at));
  SANDRUN_RETURN_IF_ERROR(check.Keys(v, at,
                                     {"why", "aliases", "anyUse", "oldStyle", "options",
                                      "valueOptions", "flagOptions", "subcommands"}));
  ExecOptionProgram p;
  p.name = std::move(name);
  const rapidjson::Value* subs = check.Optional(v, "subcommands");
  SANDRUN_ASSIGN_OR_RETURN(p.scope, ParseScope(check, v, at, subs != nullptr, /*program=*/true));
  if (check.Optional(v, "aliases") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.aliases, check.StringArray(v, at, "aliases"));
  }
  if (check.Optional(v, "oldStyle") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.old_style, check.Bool(v, at, "oldStyle"));
  }
  SANDRUN_ASSIGN_OR_RETURN(p.value_options, ParseOptionList(check, v, at, "valueOptions"));
  SANDRUN_ASSIGN_OR_RETURN(p.flag_options, ParseOptionList(check, v, at, "flagOptions"));
  for (const std::string& o : p.value_options) {
    if (std::find(p.flag_options.begin(), p.flag_options.end(), o) != p.flag_options.end()) {
      return check.Fail(SchemaChecker::Join(at, "flagOptions"),
                        Quoted(o) + " is also listed in valueOptions");
    }
  }
  if (subs != nullptr) {
    const std::string subs_at = SchemaChecker::Join(at, "subcommands");
    SANDRUN_RETURN_IF_ERROR(check.IsObject(*subs, subs_at));
    for (const auto& m : subs->GetObject()) {
      std::string sub(m.name.GetString(), m.name.GetStringLength());
      const std::string sub_at = SchemaChecker::Join(subs_at, sub);
      if (!IsSubcommandName(sub)) {
        return check.Fail(sub_at, "not a subcommand name (lowercase letters, digits and . _ -)");
      }
      SANDRUN_RETURN_IF_ERROR(check.IsObject(m.value, sub_at));
      SANDRUN_RETURN_IF_ERROR(check.Keys(m.value, sub_at, {"why", "anyUse", "options"}));
      SANDRUN_ASSIGN_OR_RETURN(
          ExecOptionScope scope,
          ParseScope(check, m.value, sub_at, /*has_subcommands=*/false, /*program=*/false));
      if (!scope.any_use && scope.options.empty()) {
        return check.Fail(sub_at, "neither anyUse nor any option: it would never be a hit");
      }
      p.subcommands.emplace(std::move(sub), std::move(scope));
    }
  } else if (!p.value_options.empty() || !p.flag_options.empty()) {
    return check.Fail(
        SchemaChecker::Join(at, p.value_options.empty() ? "flagOptions" : "valueOptions"),
        "only for programs with subcommands (they find the subcommand)");
  }
  if (p.scope.any_use) {
    for (const char* key : {"subcommands", "valueOptions", "flagOptions", "oldStyle"}) {
      if (check.Optional(v, key) != nullptr) {
        return check.Fail(SchemaChecker::Join(at, key),
                          "pointless with anyUse (every use is a hit already)");
      }
    }
  } else if (p.scope.options.empty() && p.subcommands.empty()) {
    return check.Fail(at, "neither anyUse, options nor subcommands: it would never be a hit");
  }
  return p;
}

Result<ExecOptionTable> FromFile(const ProfileFile& file) {
  SchemaChecker check(file.path);
  SANDRUN_RETURN_IF_ERROR(check.Keys(file.doc, "", {"name", "description", "programs"}));
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* programs,
                           check.Required(file.doc, "", "programs"));
  SANDRUN_RETURN_IF_ERROR(check.IsObject(*programs, "programs"));
  std::vector<ExecOptionProgram> out;
  std::map<std::string, std::string> owner;  // name or alias -> the program that has it
  for (const auto& m : programs->GetObject()) {
    std::string name(m.name.GetString(), m.name.GetStringLength());
    const std::string at = SchemaChecker::Join("programs", name);
    if (!IsProgramName(name)) {
      return check.Fail(at, "not a program name (lowercase letters, digits and . _ + -)");
    }
    SANDRUN_ASSIGN_OR_RETURN(ExecOptionProgram p, ParseProgram(check, m.value, at, name));
    std::vector<std::string> names = {name};
    names.insert(names.end(), p.aliases.begin(), p.aliases.end());
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string where = i == 0 ? at : SchemaChecker::Index(at + ".aliases", i - 1);
      if (!IsProgramName(names[i])) {
        return check.Fail(where, Quoted(names[i]) + " is not a lowercase program name");
      }
      auto [it, inserted] = owner.emplace(names[i], name);
      if (!inserted) {
        return check.Fail(where, Quoted(names[i]) + " is already a name of " + it->second);
      }
    }
    out.push_back(std::move(p));
  }
  return ExecOptionTable(std::move(out));
}

// ---- matching ---------------------------------------------------------------------------------

std::string_view Basename(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsMultiplexer(std::string_view name) { return name == "busybox" || name == "toybox"; }

// The key of an option value: leading whitespace and '"' skipped, up to whitespace, '=' or '"'.
std::string ValueKey(std::string_view value) {
  size_t b = value.find_first_not_of(" \t\n\r\v\f\"");
  if (b == std::string_view::npos) return "";
  value.remove_prefix(b);
  return Lower(value.substr(0, value.find_first_of(" \t\n\r\v\f=\"")));
}

bool IsSingleDash(std::string_view tok) {
  return tok.size() >= 2 && tok[0] == '-' && tok[1] != '-';
}

// Whether args[i] uses `r`; the key that made it a hit (for valueKeys) in *key.
bool Uses(const ExecOptionRule& r, Args args, size_t i, std::string* key) {
  const std::string_view tok = args[i];
  std::optional<std::string_view> value;  // nullopt: none given
  auto next = [&]() -> std::optional<std::string_view> {
    if (i + 1 < args.size()) return std::string_view(args[i + 1]);
    return std::nullopt;
  };
  const std::string_view option = r.option;
  if (option.starts_with("--")) {
    if (!tok.starts_with("--")) return false;
    const size_t eq = tok.find('=');
    const std::string_view name = tok.substr(0, eq);
    const std::string_view canonical = Canonical(option);
    const bool named = name == canonical ||
                       (r.abbrev != 0 && name.size() >= r.abbrev && canonical.starts_with(name));
    if (!named) return false;
    if (eq != std::string_view::npos) {
      value = tok.substr(eq + 1);
    } else if (option.ends_with('=')) {
      return false;  // "--exec-path" alone prints a path
    } else {
      value = next();
    }
  } else {
    if (!IsSingleDash(tok)) return false;
    const size_t at = tok.find(option.substr(1), 1);
    if (at == std::string_view::npos) return false;
    const std::string_view rest = tok.substr(at + option.size() - 1);
    value = rest.empty() ? next() : rest;
  }
  if (r.value_keys.empty()) return true;
  if (!value) return false;
  *key = ValueKey(*value);
  return key->empty() ||
         std::find(r.value_keys.begin(), r.value_keys.end(), *key) != r.value_keys.end();
}

std::string Describe(std::string_view exe, std::string_view sub, std::string_view what) {
  std::string out(exe);
  if (!sub.empty()) {
    out += ' ';
    out += sub;
  }
  out += ' ';
  out += what;
  return out;
}

std::optional<ExecOptionHit> RuleHit(const ExecOptionRule& r, Args args, size_t i,
                                     std::string_view exe, std::string_view sub) {
  std::string key;
  if (!Uses(r, args, i, &key)) return std::nullopt;
  std::string what(Canonical(r.option));
  if (!r.value_keys.empty()) what += " " + (key.empty() ? std::string("\"\"") : key);
  return ExecOptionHit{Describe(exe, sub, what), r.why};
}

// The first rule of `rules` (only the `anywhere` ones when `anywhere_only`) args[i] uses.
std::optional<ExecOptionHit> FirstHit(const std::vector<ExecOptionRule>& rules, Args args, size_t i,
                                      std::string_view exe, std::string_view sub,
                                      bool anywhere_only = false) {
  for (const ExecOptionRule& r : rules) {
    if (anywhere_only && !r.anywhere) continue;
    if (auto hit = RuleHit(r, args, i, exe, sub)) return hit;
  }
  return std::nullopt;
}

bool Listed(const std::vector<std::string>& options, std::string_view name) {
  return std::find(options.begin(), options.end(), name) != options.end();
}

const ExecOptionRule* FindRule(const std::vector<ExecOptionRule>& rules, std::string_view name) {
  for (const ExecOptionRule& r : rules) {
    if (Canonical(r.option) == name) return &r;
  }
  return nullptr;
}

ExecOptionHit AnyUse(std::string_view exe, std::string_view sub, const std::string& why) {
  return ExecOptionHit{Describe(exe, sub, "(runs commands itself)"), why};
}

std::optional<ExecOptionHit> DetectInSubcommandProgram(const ExecOptionProgram& p, Args args,
                                                       std::string_view exe) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string_view tok = args[i];
    if (tok == "--") {
      ++i;
      break;
    }
    if (tok.size() < 2 || tok[0] != '-') break;  // the subcommand
    if (auto hit = FirstHit(p.scope.options, args, i, exe, {})) return hit;
    const std::string_view name = tok.substr(0, tok.find('='));
    const ExecOptionRule* rule = FindRule(p.scope.options, name);
    // A rule with valueKeys that did not hit still takes a value.
    if (Listed(p.value_options, name) || (rule != nullptr && !rule->value_keys.empty())) {
      if (name.size() == tok.size()) ++i;  // the value is the next token
      continue;
    }
    if (Listed(p.flag_options, name) || rule != nullptr) continue;
    return ExecOptionHit{Describe(exe, {}, std::string(name)),
                         "an option this table does not know: it may take a value and hide the "
                         "subcommand"};
  }
  if (i >= args.size()) return std::nullopt;
  const std::string& sub = args[i];
  auto it = p.subcommands.find(sub);
  const ExecOptionScope* scope = it == p.subcommands.end() ? nullptr : &it->second;
  if (scope != nullptr && scope->any_use) return AnyUse(exe, sub, scope->why);
  for (size_t j = i + 1; j < args.size(); ++j) {
    if (scope != nullptr) {
      if (auto hit = FirstHit(scope->options, args, j, exe, sub)) return hit;
    }
    if (auto hit = FirstHit(p.scope.options, args, j, exe, {}, /*anywhere_only=*/true)) {
      return hit;
    }
  }
  return std::nullopt;
}

}  // namespace

ExecOptionTable::ExecOptionTable(std::vector<ExecOptionProgram> programs)
    : programs_(std::move(programs)) {
  for (size_t i = 0; i < programs_.size(); ++i) {
    index_.emplace(programs_[i].name, i);
    for (const std::string& a : programs_[i].aliases) index_.emplace(a, i);
  }
}

const ExecOptionProgram* ExecOptionTable::Find(std::string_view basename) const {
  auto it = index_.find(basename);
  return it == index_.end() ? nullptr : &programs_[it->second];
}

Result<ExecOptionTable> LoadExecOptionTable(const std::string& profiles_dir,
                                            const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, harden::ReadProfileFile(profiles_dir, kKind, name));
  return FromFile(file);
}

Result<ExecOptionTable> ParseExecOptionTable(std::string_view text, const std::string& path,
                                             const std::string& expected_name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, harden::ParseProfileText(text, path, expected_name));
  return FromFile(file);
}

Result<const ExecOptionTable*> BuiltinExecOptionTable() {
  static std::mutex mu;
  static std::unique_ptr<ExecOptionTable> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (!cached) {
    SANDRUN_ASSIGN_OR_RETURN(ExecOptionTable table,
                             LoadExecOptionTable(harden::DefaultProfilesDir()));
    cached = std::make_unique<ExecOptionTable>(std::move(table));
  }
  return cached.get();
}

std::optional<ExecOptionHit> DetectExecOption(const ExecOptionTable& table,
                                              const std::vector<std::string>& argv,
                                              std::string_view real_path) {
  if (argv.empty()) return std::nullopt;
  Args args(argv);
  std::string exe = Lower(Basename(args[0]));
  if (IsMultiplexer(exe) && args.size() > 1) {
    args = args.subspan(1);
    exe = Lower(Basename(args[0]));
    real_path = {};
  }
  const ExecOptionProgram* p = table.Find(exe);
  if (p == nullptr && !real_path.empty()) p = table.Find(Lower(Basename(real_path)));
  if (p == nullptr) return std::nullopt;
  if (p->scope.any_use) return AnyUse(exe, {}, p->scope.why);
  args = args.subspan(1);
  if (!p->subcommands.empty()) return DetectInSubcommandProgram(*p, args, exe);

  std::vector<std::string> old_style;  // tar cIf: the first argument is a cluster
  if (p->old_style && !args.empty() && !args[0].empty() && args[0][0] != '-') {
    old_style.assign(args.begin(), args.end());
    old_style[0] = "-" + old_style[0];
    args = Args(old_style);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto hit = FirstHit(p->scope.options, args, i, exe, {})) return hit;
  }
  return std::nullopt;
}

}  // namespace sandrun::policy
