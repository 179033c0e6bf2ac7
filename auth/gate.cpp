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
  auto c = verify_token(token, *keys, settings_.rules, now);
  if (c.why == refusal::unknown_key && !c.who && unknown_key_)
    unknown_key_();
  return c;
}

token_check gate::identify(std::string_view token,
                           std::string_view cert_subject,
                           std::int64_t now) const {
  if (!token.empty())
    return check(token, now);
  if (!cert_subject.empty()) {
    auto table = certs_.load();
    if (auto r = table ? table->find(cert_subject) : std::nullopt)
      return token_check{principal{std::string{cert_subject}, *r, 0, {}, {}},
                         refusal::missing, ""};
    return token_check{std::nullopt, refusal::missing,
                       "certificate '" + std::string{cert_subject}
                           + "' is not in the certificate table"};
  }
  return token_check{std::nullopt, refusal::missing, ""};
}

void gate::replace_keys(std::shared_ptr<const key_set> keys) {
  keys_.store(std::move(keys));
  generation_.fetch_add(1);
}

void gate::replace_cert_roles(std::shared_ptr<const cert_roles> table) {
  certs_.store(std::move(table));
  generation_.fetch_add(1);
}

void gate::replace(std::shared_ptr<const key_set> keys,
                   std::shared_ptr<const cert_roles> table) {
  keys_.store(std::move(keys));
  certs_.store(std::move(table));
  generation_.fetch_add(1);
}

} // namespace spool::auth
