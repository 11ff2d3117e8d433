// libtutti.so exports its public API and nothing else (STYLE.md 3.8). `nm -D --defined-only`
// lists what it exports; each symbol must be a C API function declared in tutti.h or belong
// to namespace tutti (its functions, and the vtables and type information of its classes).
// Anything else, typically a standard-library template instance our code made, is a leak:
// users could bind to it, and two libraries exporting the same instance interpose on each
// other. The fix is the linker version script (src/libtutti.map), never this test.

#include <cxxabi.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace tutti::test {
namespace {

// One defined dynamic symbol: its nm type letter and name.
struct Symbol {
  char type = '?';
  std::string name;
};

std::vector<Symbol> exportedSymbols() {
  ProcessResult r =
      runProcess({"/usr/bin/nm", "-D", "--defined-only", TUTTI_SHARED_LIBRARY}, 60);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode(), 0) << r.err;
  std::vector<Symbol> out;
  for (const std::string& line : splitLines(r.out)) {
    // "0000000000012345 T name", or without an address for absolute symbols.
    std::istringstream fields(line);
    std::vector<std::string> parts;
    for (std::string part; fields >> part;) parts.push_back(part);
    if (parts.size() < 2) continue;
    const std::string& type = parts[parts.size() - 2];
    std::string name = parts.back();
    // A symbol version, if the library ever gets one, is not part of the name.
    name = name.substr(0, name.find('@'));
    out.push_back(Symbol{type.size() == 1 ? type[0] : '?', name});
  }
  return out;
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

// The functions tutti.h declares: every "TUTTI_API <type> tuttiName(" in it.
std::set<std::string> declaredCFunctions() {
  std::ifstream in(TUTTI_C_HEADER);
  std::stringstream text;
  text << in.rdbuf();
  const std::string header = text.str();
  std::set<std::string> out;
  const std::regex declaration(
      R"(TUTTI_API\s+[A-Za-z_][A-Za-z0-9_ \*]*?\b(tutti[A-Za-z0-9]+)\s*\()");
  for (auto it = std::sregex_iterator(header.begin(), header.end(), declaration);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// Mangled prefixes of entities in namespace tutti: functions (const member functions too),
// and vtables, type information and its name for classes.
bool inTuttiNamespace(const std::string& name) {
  for (const char* prefix : {"_ZN5tutti", "_ZNK5tutti", "_ZTVN5tutti", "_ZTIN5tutti",
                             "_ZTSN5tutti"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  // Thunks to tutti's virtual functions: _ZThn<offset>_N5tutti...
  static const std::regex thunk("_ZTh[nv][0-9_n]*N?K?5tutti.*");
  return std::regex_match(name, thunk);
}

TEST(ExportedSymbols, OnlyTheCAndCppApiAreExported) {
  const std::set<std::string> declared = declaredCFunctions();
  const std::vector<Symbol> symbols = exportedSymbols();
  ASSERT_FALSE(symbols.empty());
  std::vector<std::string> offenders;
  for (const Symbol& symbol : symbols) {
    if (declared.count(symbol.name) != 0 || inTuttiNamespace(symbol.name)) continue;
    offenders.push_back(symbol.type + std::string(" ") + symbol.name + "  (" +
                        demangle(symbol.name) + ")");
  }
  std::string list;
  for (const std::string& offender : offenders) list += "  " + offender + "\n";
  EXPECT_TRUE(offenders.empty()) << offenders.size()
                                 << " exported symbols are not tutti's public API:\n"
                                 << list;
}

TEST(ExportedSymbols, EveryFunctionOfTheCHeaderIsExported) {
  const std::set<std::string> declared = declaredCFunctions();
  // tutti.h declares at least version, errors, communicators, 16 collectives and p2p
  // blocking and async, and requests; the parse must have found them.
  EXPECT_GE(declared.size(), 45u);
  std::map<std::string, char> exported;
  for (const Symbol& symbol : exportedSymbols()) exported[symbol.name] = symbol.type;
  for (const std::string& name : declared) {
    auto it = exported.find(name);
    ASSERT_NE(it, exported.end()) << name << " is declared in tutti.h but not exported";
    EXPECT_EQ(it->second, 'T') << name << " is not a function in the text section";
  }
}

TEST(ExportedSymbols, CppEntryPointsOfEveryLayerAreExported) {
  std::vector<std::string> demangled;
  for (const Symbol& symbol : exportedSymbols()) demangled.push_back(demangle(symbol.name));
  // One entry point per header of include/tutti, including those whose code lives in
  // layers below core (types and status in base, stores in bootstrap).
  for (const char* wanted :
       {"tutti::Communicator::fromEnv(", "tutti::Communicator::connect(",
        "tutti::Communicator::split(", "tutti::Work::wait(", "tutti::makeMemoryStore(",
        "tutti::makePrefixStore(", "tutti::versionString(", "tutti::errorCodeName(",
        "tutti::Status::toString", "tutti::parseDataType(", "tutti::collectiveName(",
        "typeinfo for tutti::Store", "vtable for tutti::Store"}) {
    bool found = false;
    for (const std::string& name : demangled) found = found || name.rfind(wanted, 0) == 0;
    EXPECT_TRUE(found) << wanted << " is not exported";
  }
}

}  // namespace
}  // namespace tutti::test
