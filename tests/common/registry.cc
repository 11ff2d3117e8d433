#include "common/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "algorithms/hierarchy.h"

namespace tutti::test {

std::vector<Collective> registeredCollectives() {
  std::vector<Collective> out;
  for (int k = 0; k < kNumCollectives; ++k) {
    const auto kind = static_cast<Collective>(k);
    if (kind == Collective::kSend || kind == Collective::kRecv) continue;
    const auto& registry = algorithmRegistry();
    if (std::any_of(registry.begin(), registry.end(),
                    [&](const AlgorithmInfo& info) { return info.kind == kind; }))
      out.push_back(kind);
  }
  return out;
}

std::vector<std::string> algorithmsOf(Collective kind) {
  std::vector<std::string> names;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == kind && !isHierarchical(info)) names.emplace_back(info.name);
  }
  return names;
}

std::string RegisteredAlgorithm::testName() const {
  std::string text = std::string(collectiveName(kind)) + "_" + name;
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';  // gtest names: [A-Za-z0-9_]
  }
  return text;
}

std::vector<RegisteredAlgorithm> registeredAlgorithms(const std::vector<Collective>& kinds) {
  std::vector<RegisteredAlgorithm> out;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (std::find(kinds.begin(), kinds.end(), info.kind) != kinds.end() && !isHierarchical(info))
      out.push_back(RegisteredAlgorithm{info.kind, info.name, &info});
  }
  return out;
}

const AlgorithmInfo* findAlgorithm(Collective kind, const std::string& name) {
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == kind && name == info.name) return &info;
  }
  ADD_FAILURE() << "no registry entry " << name << " for " << collectiveName(kind);
  return nullptr;
}

}  // namespace tutti::test
