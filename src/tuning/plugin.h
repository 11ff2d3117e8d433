#pragma once
// A tuner plugin (include/tutti/tuner_plugin.h): a shared library named by
// TUTTI_TUNER_PLUGIN that chooses among the candidates the built-in tuner priced. Loaded
// once per communicator; everything it answers is checked, and what does not make sense
// is refused with a warning so that the built-in choice stands.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuning/tuner.h"
#include "tutti/status.h"
#include "tutti/tuner_plugin.h"

namespace tutti::tuning {

class TunerPlugin {
 public:
  /// dlopen()s `path`, finds its tuttiTunerPlugin_v1, checks its version and callbacks and
  /// runs its init() with `setup`'s summary. An error names what failed.
  static Result<std::shared_ptr<TunerPlugin>> open(const std::string& path, const TunerSetup& setup);
  /// open(), with a failure logged as a WARN (the built-in tuner then chooses alone).
  static std::shared_ptr<TunerPlugin> load(const std::string& path, const TunerSetup& setup);
  ~TunerPlugin();
  TunerPlugin(const TunerPlugin&) = delete;
  TunerPlugin& operator=(const TunerPlugin&) = delete;

  /// The plugin's choice for `spec` among `ranking` (fastest first), checked; a refused
  /// one is logged as a WARN naming the problem and gives nullopt.
  std::optional<Candidate> choose(const CollectiveSpec& spec, const TunerSetup& setup,
                                  const std::vector<Candidate>& ranking);
  /// choose()'s check, without the warning: the candidate, or why it is refused.
  Result<Candidate> ask(const CollectiveSpec& spec, const TunerSetup& setup,
                        const std::vector<Candidate>& ranking);

  const std::string& name() const { return name_; }

 private:
  TunerPlugin() = default;

  void* handle_ = nullptr;
  const tutti_tuner_plugin_v1* api_ = nullptr;
  void* state_ = nullptr;
  bool initialized_ = false;
  std::string name_;
  std::string path_;
};

}  // namespace tutti::tuning
