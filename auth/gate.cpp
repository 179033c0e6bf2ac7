#include "auth/gate.hpp"

namespace spool::auth {

gate::gate(gate_settings settings, std::shared_ptr<const key_set> keys) :
    settings_(std::move(settings)), keys_(std::move(keys)) {
}

bool gate::is_public(std::string_view path) const {
  for (auto& p : settings_.public_paths) {
    if (path == p)
      return true;
    if (p.size() > 1 && p.back() == '/' && path.starts_with(p))
      return true;
  }
  return false;
}

token_check gate::check(std::string_view token, std::int64_t now) const {
  auto keys = keys_.load();
  if (!keys)
    return token_check{std::nullopt, refusal::unknown_key, "no keys loaded"};
  return verify_token(token, *keys, settings_.rules, now);
}

void gate::replace_keys(std::shared_ptr<const key_set> keys) {
  keys_.store(std::move(keys));
  generation_.fetch_add(1);
}

} // namespace spool::auth
