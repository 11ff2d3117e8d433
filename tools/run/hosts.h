#pragma once
// The pieces of `tutti-run --hosts` that are plain text: the host list, the launch-command
// template and the agent command it makes for each host, and the address the store is
// served on when the ranks live on other hosts.

#include <string>
#include <vector>

#include "tutti/status.h"

namespace tutti::run {

/// One entry of --hosts: a host and how many ranks run there.
struct HostSlots {
  std::string name;
  int slots = 1;
};

/// Parses "h1:2,h2:2" (":N" may be left out for one slot). Ranks are numbered host by host
/// in this order. A name may not be empty, start with '-' (it would read as an option of
/// ssh) or hold whitespace, control characters, quotes or '{' '}'; a host may appear once;
/// slots are 1..maxRanks in all. kInvalidArgument naming the bad entry otherwise.
Result<std::vector<HostSlots>> parseHosts(const std::string& text, int maxRanks);

/// Total slots of `hosts`.
int totalSlots(const std::vector<HostSlots>& hosts);

/// The default launch command: "ssh {host}" (BatchMode: a password prompt would hang the
/// job, so ssh must be set up to log in without one).
inline constexpr const char* kDefaultLauncher = "ssh -o BatchMode=yes {host}";

/// Splits a launch template into words as a POSIX shell would split a simple command:
/// blanks separate words; '...' keeps everything literally; "..." keeps everything but
/// \" \\ \$ \` which lose their backslash; a backslash outside quotes keeps the next
/// character. No expansion of any kind is done ($, `, globs, ~ stay as they are) and no
/// shell is ever run: the host is substituted afterwards, inside words (launchCommand()),
/// so a host name can never become a second word or a command. kInvalidArgument for an
/// unterminated quote, a trailing backslash, a template without words, or one of the
/// shell operators ; | & < > ( ) outside quotes (they would need a shell).
Result<std::vector<std::string>> splitTemplate(const std::string& text);

/// The command that starts the agent for `host`: the template's words with every "{host}"
/// replaced by the name, then `tuttiRun` and "--agent". A template without {host} is
/// allowed (a local wrapper such as `env`). kInvalidArgument when `tuttiRun` holds a
/// character a remote shell would interpret: ssh joins its command's words and hands them
/// to the login shell of the host.
Result<std::vector<std::string>> launchCommand(const std::vector<std::string>& templateWords,
                                               const std::string& host,
                                               const std::string& tuttiRun);

/// The address of this machine that other hosts reach the store on: the IPv4 address of the
/// first interface (in the kernel's order) that is up, not loopback and not link-local
/// (169.254/16). kInvalidArgument asking for --bind when there is none.
Result<std::string> pickStoreHost();

}  // namespace tutti::run
