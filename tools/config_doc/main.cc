// tutti-config-doc: prints docs/config.md (no arguments) or the README's table of user knobs
// (--readme) as the registry makes them; --write ROOT rewrites both under the source tree
// ROOT, --check ROOT fails (exit 1) while either differs. The test test_config_doc runs the
// same check.

#include <cstdio>
#include <string>

#include "config_doc/config_doc.h"

namespace {

int usage() {
  std::fputs("usage: tutti-config-doc [--readme | --write ROOT | --check ROOT]\n", stderr);
  return 2;
}

int report(const tutti::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "tutti-config-doc: %s\n", status.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tutti::config_doc;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc == 1) {
    std::fputs(configMarkdown().c_str(), stdout);
    return 0;
  }
  if (argc == 2 && mode == "--readme") {
    std::printf("%s\n", readmeKnobTable().c_str());
    return 0;
  }
  if (argc == 3 && mode == "--write") return report(writeDocs(argv[2]));
  if (argc == 3 && mode == "--check") return report(checkDocs(argv[2]));
  return usage();
}
