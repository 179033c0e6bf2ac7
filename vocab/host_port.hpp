#pragma once

/// A node's address as `--peers`, `--advertise-*`, a peer's hello and a
/// `not_leader` refusal write it: host:port, an IPv6 host in brackets.

#include <cstdint>
#include <string>
#include <string_view>

namespace spool {

struct host_port {
  std::string host; ///< without brackets
  std::uint16_t port = 0;
};

/// Reads `addr`: "" or what is wrong, after `what` ("peers: n1's",
/// "advertise-http's"). At most 255 characters, of letters, digits and
/// `. - _ : [ ]` (what may travel in an HTTP header), a port 1..65535.
std::string read_host_port(std::string_view what, std::string_view addr,
                           host_port& out);

/// `host:port`, an IPv6 host in brackets.
std::string show_host_port(std::string_view host, std::uint16_t port);

} // namespace spool
