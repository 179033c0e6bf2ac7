#pragma once

/// The option table's entries (config/options.cpp and the files that add
/// their own, config/security.cpp): internal to config/.

#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/options.hpp"

namespace spool::config::detail {

/// Parses `value` as an integer in [lo, hi] into `out`; an error message
/// naming the option, or "".
inline std::string number(std::string_view name, const std::string& value,
                          std::uint64_t lo, std::uint64_t hi,
                          std::uint64_t& out) {
  std::uint64_t n = 0;
  auto [end, ec]
      = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n < lo
      || n > hi)
    return std::string{name} + " must be " + std::to_string(lo) + ".."
           + std::to_string(hi) + ", got '" + value + "'";
  out = n;
  return {};
}

/// One option: its name (the flag without `--`, the file key), its help
/// line, how a value applies, and how its current value reads.
struct option {
  const char* name;
  const char* help;
  std::function<std::string(server_options&, const std::string&)> apply;
  std::function<std::string(const server_options&)> show;
};

using u64_ref = std::uint64_t& (*)(server_options&);

inline option num(const char* name, const char* help, std::uint64_t lo,
                  std::uint64_t hi, u64_ref get) {
  return {name, help,
          [=](server_options& o, const std::string& v) {
            return number(name, v, lo, hi, get(o));
          },
          [=](const server_options& o) {
            return std::to_string(get(const_cast<server_options&>(o)));
          }};
}

inline option flag(const char* name, const char* help,
                   bool& (*get)(server_options&)) {
  return {name, help,
          [=](server_options& o, const std::string& v) -> std::string {
            if (v == "true" || v == "1")
              get(o) = true;
            else if (v == "false" || v == "0")
              get(o) = false;
            else
              return std::string{name} + " must be true or false, got '" + v
                     + "'";
            return {};
          },
          [=](const server_options& o) {
            return std::string{get(const_cast<server_options&>(o)) ? "true"
                                                                   : "false"};
          }};
}

/// A text option; `show` of a secret says only whether it is set.
inline option text(const char* name, const char* help,
                   std::string& (*get)(server_options&), bool secret = false) {
  return {name, help,
          [=](server_options& o, const std::string& v) -> std::string {
            get(o) = v;
            return {};
          },
          [=](const server_options& o) -> std::string {
            auto& v = get(const_cast<server_options&>(o));
            return secret && !v.empty() ? "(set)" : v;
          }};
}

/// The options of config/security.cpp: tokens, the audit log.
std::vector<option> security_options();

/// Queen's variables read as options (below SPOOL_*): (variable, option).
const std::vector<std::pair<const char*, const char*>>& queen_variables();

/// The checks across the security options once every source is read: ""
/// or what is wrong.
std::string check_security(const server_options& o);

} // namespace spool::config::detail
