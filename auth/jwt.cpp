#include "auth/jwt.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "auth/base64url.hpp"

namespace spool::auth {

namespace dom = simdjson::dom;

namespace {

token_check refuse(refusal why, std::string detail) {
  return token_check{std::nullopt, why, std::move(detail)};
}

std::optional<algorithm> algorithm_named(std::string_view alg) {
  if (alg == "HS256")
    return algorithm::hs256;
  if (alg == "RS256")
    return algorithm::rs256;
  if (alg == "EdDSA")
    return algorithm::eddsa;
  return std::nullopt;
}

/// The claim at a dotted name (`realm_access.roles`), if there.
std::optional<dom::element> claim_at(dom::object claims,
                                     std::string_view name) {
  auto dot = name.find('.');
  dom::element at;
  if (claims.at_key(name.substr(0, dot)).get(at) != simdjson::SUCCESS)
    return std::nullopt;
  while (dot != std::string_view::npos) {
    name = name.substr(dot + 1);
    dot = name.find('.');
    dom::object o;
    if (at.get_object().get(o) != simdjson::SUCCESS
        || o.at_key(name.substr(0, dot)).get(at) != simdjson::SUCCESS)
      return std::nullopt;
  }
  return at;
}

/// A claim that is a string or an array of strings; none when absent;
/// false in `ok` when of another type.
std::optional<std::vector<std::string>>
strings_at(dom::object claims, std::string_view name, bool& ok) {
  auto at = claim_at(claims, name);
  if (!at)
    return std::nullopt;
  std::vector<std::string> out;
  std::string_view s;
  if (at->get_string().get(s) == simdjson::SUCCESS) {
    out.emplace_back(s);
    return out;
  }
  dom::array arr;
  if (at->get_array().get(arr) != simdjson::SUCCESS) {
    ok = false;
    return std::nullopt;
  }
  for (auto e : arr) {
    if (e.get_string().get(s) != simdjson::SUCCESS) {
      ok = false;
      return std::nullopt;
    }
    out.emplace_back(s);
  }
  return out;
}

/// A NumericDate claim (seconds, possibly fractional) in whole seconds;
/// none when absent; false in `ok` when not a finite number.
std::optional<std::int64_t> date_at(dom::object claims, const char* name,
                                    bool& ok) {
  dom::element e;
  if (claims.at_key(name).get(e) != simdjson::SUCCESS)
    return std::nullopt;
  double d = 0;
  if (e.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d)
      || std::fabs(d) > 1e15) {
    ok = false;
    return std::nullopt;
  }
  return static_cast<std::int64_t>(std::floor(d));
}

/// A JSON object from one base64url part, parsed into `parser`.
std::optional<dom::object> part_object(dom::parser& parser,
                                       std::string_view b64) {
  auto text = base64url_decode(b64);
  if (!text)
    return std::nullopt;
  dom::object o;
  if (parser.parse(text->data(), text->size()).get_object().get(o)
      != simdjson::SUCCESS)
    return std::nullopt;
  return o;
}

} // namespace

std::string_view to_string(refusal r) noexcept {
  switch (r) {
  case refusal::missing:
    return "no token";
  case refusal::malformed:
    return "malformed token";
  case refusal::algorithm:
    return "algorithm refused";
  case refusal::unknown_key:
    return "no key for the token";
  case refusal::signature:
    return "bad signature";
  case refusal::expired:
    return "expired";
  case refusal::not_yet_valid:
    return "not yet valid";
  case refusal::issuer:
    return "wrong issuer";
  case refusal::audience:
    return "wrong audience";
  case refusal::claims:
    break;
  }
  return "bad claims";
}

std::string_view client_text(refusal r) noexcept {
  switch (r) {
  case refusal::missing:
    return "Authentication required";
  case refusal::expired:
    return "Token has expired";
  default:
    return "Invalid token";
  }
}

std::string_view bearer_token(std::string_view authorization) noexcept {
  constexpr std::string_view scheme = "bearer ";
  auto t = authorization;
  bool bearer = t.size() >= scheme.size();
  for (std::size_t i = 0; bearer && i < scheme.size(); ++i)
    bearer = std::tolower(static_cast<unsigned char>(t[i])) == scheme[i];
  if (bearer)
    t.remove_prefix(scheme.size());
  while (!t.empty() && t.front() == ' ')
    t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t'))
    t.remove_suffix(1);
  return t;
}

token_check verify_token(std::string_view token, const key_set& keys,
                         const token_rules& rules, std::int64_t now) {
  if (token.empty())
    return refuse(refusal::missing, "no token");
  if (token.size() > rules.max_token_bytes)
    return refuse(refusal::malformed,
                  "token longer than " + std::to_string(rules.max_token_bytes)
                      + " bytes");
  auto dot1 = token.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos
      || token.find('.', dot2 + 1) != std::string_view::npos)
    return refuse(refusal::malformed, "not three dot-separated parts");
  auto signing_input = token.substr(0, dot2);
  auto signature = base64url_decode(token.substr(dot2 + 1));
  if (!signature)
    return refuse(refusal::malformed, "the signature is not base64url");

  thread_local dom::parser parser;
  auto header = part_object(parser, token.substr(0, dot1));
  if (!header)
    return refuse(refusal::malformed, "the header is not a JSON object");
  std::string_view alg_name;
  if ((*header)["alg"].get_string().get(alg_name) != simdjson::SUCCESS)
    return refuse(refusal::malformed, "the header has no alg");
  if ((*header)["crit"].error() != simdjson::NO_SUCH_FIELD)
    return refuse(refusal::algorithm, "the header names crit extensions");
  auto alg = algorithm_named(alg_name);
  if (!alg)
    return refuse(refusal::algorithm,
                  "alg " + std::string{alg_name} + " is not accepted");
  if (!rules.algorithms.empty()
      && std::find(rules.algorithms.begin(), rules.algorithms.end(), *alg)
             == rules.algorithms.end())
    return refuse(refusal::algorithm,
                  "alg " + std::string{alg_name} + " is not configured");
  std::string kid;
  if (std::string_view k;
      (*header)["kid"].get_string().get(k) == simdjson::SUCCESS)
    kid = k;

  // A key serves only its own algorithm: a token naming HS256 is never
  // checked with an RSA key's bytes as its secret.
  bool any_key = false;
  bool holds = false;
  for (auto& key : keys.keys) {
    if (key.alg != *alg || (!kid.empty() && !key.kid.empty() && key.kid != kid))
      continue;
    any_key = true;
    if (signature_holds(key, signing_input, *signature)) {
      holds = true;
      break;
    }
  }
  if (!any_key)
    return refuse(refusal::unknown_key,
                  "no key for alg " + std::string{alg_name}
                      + (kid.empty() ? "" : " kid " + kid));
  if (!holds)
    return refuse(refusal::signature, "the signature does not hold");

  // The header's parse is done with; the payload takes the parser.
  auto claims = part_object(parser, token.substr(dot1 + 1, dot2 - dot1 - 1));
  if (!claims)
    return refuse(refusal::malformed, "the payload is not a JSON object");
  bool ok = true;
  auto exp = date_at(*claims, "exp", ok);
  auto nbf = date_at(*claims, "nbf", ok);
  if (!ok)
    return refuse(refusal::claims, "exp or nbf is not a number");
  if (exp && now >= *exp + rules.clock_skew_s)
    return refuse(refusal::expired, "expired at " + std::to_string(*exp));
  if (nbf && now < *nbf - rules.clock_skew_s)
    return refuse(refusal::not_yet_valid,
                  "not valid before " + std::to_string(*nbf));
  if (!rules.issuer.empty()) {
    std::string_view iss;
    if ((*claims)["iss"].get_string().get(iss) != simdjson::SUCCESS
        || iss != rules.issuer)
      return refuse(refusal::issuer, "iss is not " + rules.issuer);
  }
  if (!rules.audience.empty()) {
    auto aud = strings_at(*claims, "aud", ok);
    if (!aud
        || std::find(aud->begin(), aud->end(), rules.audience) == aud->end())
      return refuse(refusal::audience, "aud does not name " + rules.audience);
  }

  principal who;
  if (std::string_view sub;
      (*claims)["sub"].get_string().get(sub) == simdjson::SUCCESS) {
    if (sub.size() > max_subject_bytes)
      return refuse(refusal::claims,
                    "sub longer than 255 bytes (it is stamped as producerSub)");
    who.subject = sub;
  }
  who.expires = exp ? *exp + rules.clock_skew_s : 0;
  auto raise = [&](const std::vector<std::string>& names) {
    for (auto& n : names) {
      auto r = n == rules.admin_value        ? role::admin
               : n == rules.read_write_value ? role::read_write
               : n == rules.read_only_value  ? role::read_only
                                             : role::none;
      if (static_cast<int>(r) > static_cast<int>(who.granted))
        who.granted = r;
    }
  };
  if (auto r = strings_at(*claims, rules.role_claim, ok))
    raise(*r);
  if (auto r = strings_at(*claims, rules.roles_claim, ok))
    raise(*r);
  who.queue_prefixes = strings_at(*claims, rules.queues_claim, ok);
  who.groups = strings_at(*claims, rules.groups_claim, ok);
  if (!ok)
    return refuse(refusal::claims,
                  "a role, queues or groups claim is not a string or an "
                  "array of strings");
  return token_check{std::move(who), refusal::malformed, {}};
}

} // namespace spool::auth
