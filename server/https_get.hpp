#pragma once

/// One HTTPS GET, for the keys of `--jwt-jwks-url` (docs/security.md,
/// "Keys from a JWKS URL"): the server's certificate verified against the
/// system's CAs (OpenSSL's default paths; `SSL_CERT_FILE` names another
/// bundle) and the URL's host; HTTP/1.0, so the body is never chunked;
/// the whole exchange within `timeout`; a body of at most `max_body`
/// bytes. Blocking: the caller's thread (the start, the refresher).

#include <chrono>
#include <cstddef>
#include <string>

#include "vocab/expected.hpp"

namespace spool::server {

/// The body of a 200 answer to GET `url` (`https://host[:port][/path]`),
/// or why not (the URL, a connection refused, a certificate refused, a
/// timeout, another status, a body too large).
expected<std::string> https_get(const std::string& url,
                                std::chrono::milliseconds timeout,
                                std::size_t max_body = std::size_t{1} << 20);

} // namespace spool::server
