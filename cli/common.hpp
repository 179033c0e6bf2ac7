#pragma once

// What the `spool` commands share (docs/cli.md): the connection, the output
// (human tables or --json), the exit codes, and the parsing of durations,
// times and key=value options.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "client/client.hpp"
#include "tls/context.hpp"

namespace spool::cli {

using json = nlohmann::json;

/// Exit codes (docs/cli.md, "Exit codes").
enum exit_code : int {
  ok = 0,
  failed = 1,      ///< an internal error, or anything else
  usage = 2,       ///< the command line is wrong
  not_found = 3,   ///< the queue, partition, group or entry does not exist
  refused = 4,     ///< the server refused the request as invalid
  unavailable = 5, ///< no server, a timeout, the server busy or stopping
  rejected = 6,    ///< queue full, storage full, a transaction rolled back
  partial = 7,     ///< some items of the request failed (acks)
  denied = 8,      ///< no valid token, or one without the right role
};

/// The exit code of an API error.
exit_code code_of(const api_error& e);

/// The global options and the connection (made on first use).
struct context {
  std::string server = "127.0.0.1:6690";
  /// A JWT sent in `hello` (--token, SPOOL_TOKEN; docs/security.md).
  std::string token;
  /// TLS to the msgpack door (--tls), verified with the CA bundle `ca`
  /// (--ca, SPOOL_CA; "": the system's).
  bool tls = false;
  std::string ca;
  /// Made from `ca` once the command line is read (`check_tls`).
  std::shared_ptr<const tls::context> tls_context;
  bool as_json = false;
  std::chrono::milliseconds timeout{30'000};

  /// Reads `server` into the host and port, or says what is wrong.
  std::optional<std::string> check_server();
  /// Makes the TLS context when `tls`; what is wrong with `ca`, or none.
  std::optional<std::string> check_tls();
  client::client& conn();
  /// A connection was asked for and the msgpack door never answered there
  /// (nobody listens, or something else does). A door that refused before
  /// `hello` (busy) was heard: it is not this.
  bool never_connected() const;

private:
  std::string host = "127.0.0.1";
  std::uint16_t port = 6690;
  std::unique_ptr<client::client> conn_;
};

/// Prints the error (`error: <code>: <message>` on stderr, or as JSON on
/// stdout with --json) and answers its exit code. When no connection was
/// ever made, a `hint:` line on stderr says what to check.
int fail(const context& ctx, const api_error& e);
/// The same for a command line problem (exit 2).
int usage_error(const std::string& message);

/// `words`, comma-separated (lists in messages: commands, options).
std::string joined(std::span<const std::string_view> words);

/// Prints `j` (pretty JSON) to stdout.
void print_json(const json& j);

/// A table of text cells: a header row, then rows, columns padded.
class table {
public:
  explicit table(std::vector<std::string> header);
  void add(std::vector<std::string> row);
  void print() const;
  bool empty() const {
    return rows_.empty();
  }

private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> header_;
};

/// A time as the wire writes it ("" for none).
std::string time_text(micros t);
/// A payload for a human: JSON as is, bytes as printable text or base64-ish
/// escapes, cut at `max` characters.
std::string payload_text(const node::message& m, std::size_t max = 120);
/// Bytes as base64 (RFC 4648, padded).
std::string base64(std::string_view bytes);
/// A message as JSON (--json output); a binary payload as base64 with
/// `dataEncoding: "base64"`, as HTTP writes it.
json message_json(const node::message& m);

/// `30s`, `5m`, `2h`, `1d`, `1h30m`, `500ms`; none when unreadable.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view s);
/// RFC 3339, or `now`; none when unreadable.
std::optional<micros> parse_time(std::string_view s);
/// The forms `parse_time` reads, for an error message.
inline constexpr const char* time_forms
    = "now, or an RFC 3339 time such as 2026-12-01T08:00:00Z or "
      "2026-12-01T09:00:00+01:00";

} // namespace spool::cli
