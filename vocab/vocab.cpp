#include "vocab/delivery.hpp"
#include "vocab/errors.hpp"

namespace spool {

const char* to_string(ack_error e) noexcept {
  switch (e) {
  case ack_error::none:
    return "";
  case ack_error::invalid_lease:
    return "Invalid or expired lease";
  case ack_error::not_in_lease:
    return "Message not in lease";
  case ack_error::not_found:
    return "Message not found";
  }
  return "unknown";
}

const char* to_string(extend_error e) noexcept {
  switch (e) {
  case extend_error::none:
    return "";
  case extend_error::not_found:
    return "Lease not found";
  case extend_error::expired:
    return "Lease already expired";
  case extend_error::out_of_range:
    return "Extend seconds out of range";
  }
  return "unknown";
}

const char* to_string(empty_reason r) noexcept {
  switch (r) {
  case empty_reason::empty:
    return "empty";
  case empty_reason::lease_held:
    return "lease_held";
  case empty_reason::delayed:
    return "delayed";
  case empty_reason::window_buffer:
    return "window_buffer";
  case empty_reason::no_partition:
    return "no_partition";
  }
  return "unknown";
}

wire_code wire_of(errc code) noexcept {
  switch (code) {
  case errc::bad_request:
    return {400, "bad_request", false};
  case errc::invalid_argument:
    return {400, "invalid_argument", false};
  case errc::too_large:
    return {413, "too_large", false};
  case errc::not_found:
    return {404, "not_found", false};
  case errc::unknown_op:
    return {404, "unknown_op", false};
  case errc::tx_aborted:
    return {200, "tx_aborted", false};
  case errc::queue_full:
    return {429, "queue_full", true};
  case errc::unavailable:
    return {503, "unavailable", true};
  case errc::storage_full:
    return {507, "storage_full", false};
  case errc::not_leader:
    return {421, "not_leader", false};
  case errc::cross_slot:
    return {409, "cross_slot", false};
  case errc::unauthenticated:
    return {401, "unauthenticated", false};
  case errc::forbidden:
    return {403, "forbidden", false};
  case errc::internal:
    break;
  }
  return {500, "internal", false};
}

std::string_view to_string(errc code) noexcept {
  return wire_of(code).msgpack_code;
}

std::string to_string(const api_error& err) {
  return std::string{to_string(err.code)} + ": " + err.message;
}

} // namespace spool
