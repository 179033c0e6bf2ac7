#include "storage/error.hpp"

namespace spool::storage {

const char* to_string(ec code) noexcept {
  switch (code) {
  case ec::none:
    return "none";
  case ec::lmdb_error:
    return "lmdb_error";
  case ec::corrupt_segment:
    return "corrupt_segment";
  case ec::corrupt_record:
    return "corrupt_record";
  case ec::unknown_queue:
    return "unknown_queue";
  case ec::unknown_partition:
    return "unknown_partition";
  case ec::not_found:
    return "not_found";
  case ec::offset_out_of_range:
    return "offset_out_of_range";
  case ec::frame_too_large:
    return "frame_too_large";
  case ec::invalid_argument:
    return "invalid_argument";
  case ec::conflict:
    return "conflict";
  case ec::compression_error:
    return "compression_error";
  case ec::io_error:
    return "io_error";
  case ec::encryption_error:
    return "encryption_error";
  case ec::storage_full:
    return "storage_full";
  case ec::shutting_down:
    return "shutting_down";
  }
  return "unknown";
}

std::string to_string(const error& err) {
  return std::string{to_string(err.code)} + ": " + err.message;
}

api_error to_api(const error& err) {
  switch (err.code) {
  case ec::storage_full:
    return {errc::storage_full, err.message};
  case ec::shutting_down:
    return {errc::unavailable, err.message};
  case ec::unknown_queue:
  case ec::unknown_partition:
  case ec::not_found:
    return {errc::not_found, err.message};
  case ec::frame_too_large:
    return {errc::too_large, err.message};
  case ec::invalid_argument:
  case ec::offset_out_of_range:
    return {errc::invalid_argument, err.message};
  case ec::none:
  case ec::lmdb_error:
  case ec::corrupt_segment:
  case ec::corrupt_record:
  case ec::conflict:
  case ec::compression_error:
  case ec::io_error:
  case ec::encryption_error:
    break;
  }
  return {errc::internal, to_string(err)};
}

} // namespace spool::storage
