// Prints docs/flags.md: `plimsoll serve`'s flags as a markdown table, generated
// from serve's settings table (server/serve_settings.cpp), the same rows
// `plimsoll serve` registers as CLI11 options. ctest docs.flags compares the
// output with docs/flags.md. Regenerate: build/release/flags_markdown > docs/flags.md
#include <cstdio>
#include <string>

#include "server/serve.h"
#include "server/serve_settings.h"

namespace {

using plimsoll::SettingKind;

const char* kind_text(SettingKind k) {
  switch (k) {
    case SettingKind::kInt: return "integer";
    case SettingKind::kBytes: return "bytes (12Gi, 300Mi, 2000000)";
    case SettingKind::kNumber: return "number";
    case SettingKind::kBool: return "true/false";
    case SettingKind::kSwitch: return "switch (no value)";
    case SettingKind::kString: return "text";
    case SettingKind::kDType: return "f16 or f32";
    case SettingKind::kFractionOrBytes: return "fraction or bytes";
  }
  return "";
}

// A table cell: pipes escaped, so help text cannot break the row.
std::string cell(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string code(const std::string& s) { return s.empty() ? "" : "`" + s + "`"; }

}  // namespace

int main() {
  const plimsoll::ServeConfig defaults;
  std::printf(
      "# `plimsoll serve` flags\n\n"
      "Generated from serve's settings table (`src/server/serve_settings.cpp`) by\n"
      "`build/release/flags_markdown > docs/flags.md`; ctest `docs.flags` fails when they differ.\n"
      "Every flag also reads its environment variable (the flag wins). \"Plan\": yes for an input of\n"
      "the memory plan (`docs/planner.md`). Sizes take `Ki`, `Mi`, `Gi` or plain bytes.\n"
      "`plimsoll serve --help` prints the same rows.\n\n"
      "| flag | environment variable | default | value | plan | what it sets |\n"
      "| --- | --- | --- | --- | --- | --- |\n");
  for (const plimsoll::ServeSetting& row : plimsoll::serve_settings()) {
    std::string names;
    for (const std::string& name : row.flags()) names += (names.empty() ? "" : ", ") + code(name);
    std::string def = row.required ? "required" : row.read(defaults);
    if (def.empty()) def = "unset";
    else if (!row.required) def = code(def);
    std::printf("| %s | %s | %s | %s | %s | %s |\n", names.c_str(), code(row.env).c_str(), cell(def).c_str(),
                kind_text(row.kind), row.changes_plan ? "yes" : "", cell(row.help).c_str());
  }
  return 0;
}
