// docs/env.md against the knob table (net_plugin/base/knobs.def): the
// Bagua-Net section lists exactly the table's knobs, each with the table's
// default (the default column starts with it, e.g. "0 (auto: ...)"); the
// migration section lists exactly the alias table's names
// (net_plugin/base/knob_aliases.def), each with the knob it sets.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "net_plugin/base/knob_aliases.h"
#include "net_plugin/base/params.h"

namespace bagua::net {
namespace {

std::string trim(const std::string& text) {
  size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::string withoutBackticks(std::string text) {
  std::erase(text, '`');
  return trim(text);
}

// first column -> second column, from the table rows of the section whose
// heading starts with `section` (up to the next "## " heading).
std::map<std::string, std::string> documentedRows(const std::string& section) {
  std::ifstream file(BAGUA_SOURCE_ROOT "/docs/env.md");
  EXPECT_TRUE(file.good()) << "docs/env.md is missing";
  std::map<std::string, std::string> knobs;
  bool inSection = false;
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("## ", 0) == 0) inSection = line.rfind(section, 0) == 0;
    if (!inSection || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    knobs[withoutBackticks(cells[0])] = withoutBackticks(cells[1]);
  }
  return knobs;
}

// knob name -> default column, from the "## Bagua-Net" section.
std::map<std::string, std::string> documentedKnobs() { return documentedRows("## Bagua-Net"); }

TEST(EnvDoc, ListsExactlyTheTablesKnobs) {
  std::map<std::string, std::string> documented = documentedKnobs();
  std::set<std::string> inTable;
  for (const KnobInfo& knob : knobTable()) {
    inTable.insert(knob.name);
    EXPECT_TRUE(documented.contains(knob.name))
        << knob.name << " is not in docs/env.md's Bagua-Net tables; add a row like | `" << knob.name
        << "` | " << knob.defaultText << " | " << knob.doc << " |";
  }
  for (const auto& [name, defaultText] : documented) {
    EXPECT_TRUE(inTable.contains(name))
        << name << " is documented in docs/env.md but is not in net_plugin/base/knobs.def";
  }
}

TEST(EnvDoc, DefaultsMatchTheTable) {
  std::map<std::string, std::string> documented = documentedKnobs();
  for (const KnobInfo& knob : knobTable()) {
    auto it = documented.find(knob.name);
    if (it == documented.end()) continue;  // reported by ListsExactlyTheTablesKnobs
    const std::string& cell = it->second;
    bool same = cell == knob.defaultText || cell.rfind(knob.defaultText + " ", 0) == 0;
    EXPECT_TRUE(same) << knob.name << ": docs/env.md says the default is \"" << cell
                      << "\", the knob table \"" << knob.defaultText << "\"";
  }
}

// The migration table: the original's name -> ours, or "(ignored)".
TEST(EnvDoc, MigrationTableMatchesTheAliasTable) {
  std::map<std::string, std::string> documented =
      documentedRows("## Migrating from the original Bagua-Net");
  std::set<std::string> inTable;
  for (const KnobAlias& alias : knobAliases()) {
    inTable.insert(alias.name);
    std::string ours = alias.ours != nullptr ? alias.ours : "(ignored)";
    auto it = documented.find(alias.name);
    if (it == documented.end()) {
      ADD_FAILURE() << alias.name << " is not in docs/env.md's migration table; add | `"
                    << alias.name << "` | " << ours << " | ... |";
      continue;
    }
    EXPECT_EQ(it->second, ours) << alias.name;
  }
  for (const auto& [name, ours] : documented) {
    EXPECT_TRUE(inTable.contains(name))
        << name << " is in docs/env.md's migration table but not in knob_aliases.def";
  }
}

TEST(KnobTable, NamesFollowTheTable) {
  ASSERT_EQ(paramNames().size(), knobTable().size());
  for (size_t i = 0; i < knobTable().size(); ++i) EXPECT_EQ(paramNames()[i], knobTable()[i].name);
}

TEST(KnobTable, DefaultsAsText) {
  std::map<std::string, std::string> defaults;
  for (const KnobInfo& knob : knobTable()) defaults[knob.name] = knob.defaultText;
  EXPECT_EQ(defaults["BAGUA_NET_STREAMS"], "4");
  EXPECT_EQ(defaults["BAGUA_NET_CHUNK_BYTES"], "256K");
  EXPECT_EQ(defaults["BAGUA_NET_SOCKET_BUFFER_BYTES"], "0");
  EXPECT_EQ(defaults["BAGUA_NET_ENGINE"], "auto");
  EXPECT_EQ(defaults["BAGUA_NET_ZEROCOPY"], "off");
  EXPECT_EQ(defaults["BAGUA_NET_CPUS"], "empty");
  EXPECT_EQ(defaults["NCCL_SOCKET_IFNAME"], "unset");
}

}  // namespace
}  // namespace bagua::net
