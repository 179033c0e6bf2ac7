#include "vocab/host_port.hpp"

#include <algorithm>
#include <charconv>

namespace spool {

std::string read_host_port(std::string_view what, std::string_view addr,
                           host_port& out) {
  auto quoted = std::string{what} + " address '" + std::string{addr} + "'";
  if (addr.size() > 255)
    return std::string{what} + " address is over 255 characters";
  if (!std::all_of(addr.begin(), addr.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
               || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'
               || c == ':' || c == '[' || c == ']';
      }))
    return quoted + " may hold only letters, digits and . - _ : [ ]";
  auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return quoted + " is not host:port";
  auto host = addr.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto digits = addr.substr(colon + 1);
  unsigned n = 0;
  auto [end, ec]
      = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc{} || end != digits.data() + digits.size() || n == 0
      || n > 65535)
    return std::string{what} + " port must be 1..65535, got '"
           + std::string{digits} + "'";
  out.host = std::string{host};
  out.port = static_cast<std::uint16_t>(n);
  return {};
}

std::string show_host_port(std::string_view host, std::uint16_t port) {
  auto h = host.find(':') != std::string_view::npos
               ? "[" + std::string{host} + "]"
               : std::string{host};
  return h + ":" + std::to_string(port);
}

} // namespace spool
