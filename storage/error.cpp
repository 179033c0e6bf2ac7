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
  case ec::storage_full:
    return "storage_full";
  case ec::shutting_down:
    return "shutting_down";
  case ec::busy:
    return "busy";
  case ec::queue_full:
    return "queue_full";
  }
  return "unknown";
}

std::string to_string(const error& err) {
  return std::string{to_string(err.code)} + ": " + err.message;
}

} // namespace spool::storage
