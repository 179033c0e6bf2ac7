#pragma once

/// Client certificates as roles (docs/security.md, "Client certificates
/// as roles"): a table from a verified certificate's subject to the role
/// its holder gets when it sends no token. Pure: no library, no I/O.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "auth/roles.hpp"
#include "vocab/expected.hpp"

namespace spool::auth {

class cert_roles {
public:
  /// Parses a table: one `<role> <subject>` per line (`admin CN=ops,O=acme`),
  /// the role one of Queen's names, the subject as OpenSSL prints it in
  /// RFC 2253 (`openssl x509 -noout -subject -nameopt RFC2253`, without
  /// its `subject=`). Blank lines and lines starting with `#` are skipped.
  /// An error names `source` and the line: an unknown role, a line without
  /// a subject, a subject listed twice.
  static expected<cert_roles> parse(std::string_view text,
                                    std::string_view source);

  /// The role of a verified certificate whose subject is `subject`
  /// (exactly); none when it is not listed, or empty.
  std::optional<role> find(std::string_view subject) const;
  std::size_t size() const noexcept {
    return by_subject_.size();
  }

private:
  std::map<std::string, role, std::less<>> by_subject_;
};

} // namespace spool::auth
