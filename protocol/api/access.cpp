#include "protocol/api/access.hpp"

#include <chrono>

namespace spool::api {

std::int64_t security::seconds() const {
  if (now)
    return now();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

expected<auth::principal>
authenticate(const security& sec, std::string_view token,
             std::string_view cert_subject, std::string_view from,
             std::string_view door, std::string_view what) {
  auto c = sec.gate->identify(token, cert_subject, sec.seconds());
  if (c.who)
    return std::move(*c.who);
  auto outcome = c.why != auth::refusal::missing
                     ? concat("401 ", auth::to_string(c.why), ": ", c.detail)
                 : c.detail.empty() ? std::string{"401 no token"}
                                    : concat("401 no token: ", c.detail);
  sec.write({"-", "-", from, door, what, outcome});
  return make_error(errc::unauthenticated, auth::client_text(c.why));
}

std::optional<api_error>
authorize(const security& sec, const auth::principal& who, auth::access level,
          std::string_view from, std::string_view door, std::string_view what) {
  if (auth::permits(who.granted, level))
    return std::nullopt;
  sec.write({who.subject.empty() ? "-" : who.subject,
             auth::to_string(who.granted), from, door, what,
             concat("403 role too low: needs ", auth::to_string(level))});
  return make_error(errc::forbidden, "Insufficient permissions");
}

void stamp_producer(const std::optional<auth::principal>& who,
                    std::vector<node::push_item>& items) {
  if (!who || who->subject.empty())
    return;
  for (auto& i : items)
    i.producer_sub = who->subject;
}

void stamp_producer(const std::optional<auth::principal>& who,
                    node::txn_request& req) {
  for (auto& op : req.operations)
    if (auto* p = std::get_if<node::txn_push>(&op))
      stamp_producer(who, p->items);
}

} // namespace spool::api
